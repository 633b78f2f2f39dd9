"""kanscale's PyTorch side: efficient-kan's KAN written from its formulas
(efficient_kan), the DDP training entry point kanscale launches
(ddp_train), and the probe of the interpreter it runs on (probe).

Only Debian's python3-torch (1.13, CPU), python3-numpy and the standard
library are used. Nothing here reads a kanscale config: kanscale parses the
workload and passes every setting on the command line.
"""
