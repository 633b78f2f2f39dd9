"""An efficient-kan-style KAN trained under PyTorch DDP, written apart from
kanscale's own measure/python (its own layer code and loop), to check a
kanscale prediction against a job kanscale did not write.

gloo, 1 intra-op thread per rank, the env rendezvous; a barrier before each
step; the median over the steady steps of the step time (zero_grad, forward,
MSE, backward, Adam step); rank 0 prints one JSON line.
"""
import json, os, sys, time, statistics
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel


class SplineLayer(torch.nn.Module):
    def __init__(self, n_in, n_out, grid=5, order=3, lo=-1.0, hi=1.0):
        super().__init__()
        self.n_in, self.n_out, self.order = n_in, n_out, order
        step = (hi - lo) / grid
        t = lo + step * torch.arange(-order, grid + order + 1, dtype=torch.float32)
        self.register_buffer("grid", t.repeat(n_in, 1))
        self.base_weight = torch.nn.Parameter(torch.empty(n_out, n_in).uniform_(-n_in ** -0.5, n_in ** -0.5))
        self.spline_weight = torch.nn.Parameter(0.1 * torch.randn(n_out, n_in, grid + order) / grid)
        self.spline_scaler = torch.nn.Parameter(torch.empty(n_out, n_in).uniform_(-n_in ** -0.5, n_in ** -0.5))

    def basis(self, x):
        g = self.grid
        xe = x[:, :, None]
        b = torch.logical_and(xe >= g[:, :-1], xe < g[:, 1:]).float()
        for p in range(1, self.order + 1):
            left = (xe - g[:, :-(p + 1)]) / (g[:, p:-1] - g[:, :-(p + 1)])
            right = (g[:, p + 1:] - xe) / (g[:, p + 1:] - g[:, 1:-p])
            b = left * b[:, :, :-1] + right * b[:, :, 1:]
        return b.contiguous()

    def forward(self, x):
        out = F.linear(F.silu(x), self.base_weight)
        w = self.spline_weight * self.spline_scaler[:, :, None]
        return out + F.linear(self.basis(x).reshape(x.shape[0], -1), w.reshape(self.n_out, -1))


class Net(torch.nn.Module):
    def __init__(self, widths, grid):
        super().__init__()
        self.layers = torch.nn.ModuleList(SplineLayer(a, b, grid) for a, b in zip(widths, widths[1:]))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def main():
    widths = [int(v) for v in sys.argv[1].split(",")]
    grid, batch, cap_mb, steps = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), 40
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(1)
    model = DistributedDataParallel(Net(widths, grid), bucket_cap_mb=cap_mb)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.rand(batch, widths[0]) * 2 - 1
    y = torch.sin(x.sum(dim=1, keepdim=True)).repeat(1, widths[-1])
    times = []
    for s in range(steps + 2):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    med = torch.tensor([statistics.median(times[2:])])
    everyone = [torch.zeros(1) for _ in range(dist.get_world_size())]
    dist.all_gather(everyone, med)
    if rank == 0:
        print(json.dumps({"widths": widths, "grid": grid, "batch": batch, "ranks": dist.get_world_size(), "cap_mb": cap_mb,
                          "step_median_s": statistics.median(float(t) for t in everyone)}))
    dist.barrier()
    os._exit(0)


main()
