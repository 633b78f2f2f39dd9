"""What kanscale needs to know about the interpreter before it launches
ranks, as one JSON line: torch's version, the BLAS library its process
maps after a matrix product (torch.__config__ says "generic" whichever
libblas.so.3 Debian's alternatives select), numpy's version, whether gloo
and CUDA are available, and the Python version.

Run as `python3 -m kanscale_torch.probe`; exits 3 with one line on stderr
naming the Debian package when torch or numpy cannot be imported.
"""
import json
import os
import platform
import sys


def blas_library():
    """The BLAS shared object this process maps (after one matmul), by file name."""
    import torch
    a = torch.ones(64, 64)
    (a @ a).sum().item()
    names = set()
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            base = os.path.basename(path)
            # (numpy's own OpenBLAS beside PyPI's torch is not torch's, nor is cuBLAS the CPU's)
            if ("blas" in base or "mkl" in base) and "numpy.libs" not in path and not base.startswith("libcublas"):
                names.add(path)
    for key in ("openblas", "mkl", "blis"):
        for n in sorted(names):
            if key in os.path.basename(n):
                return n
    if names:
        return sorted(names)[0]
    # PyPI's torch 2.x links MKL into libtorch_cpu: no library of its own to map
    info = torch.__config__.show()
    return "MKL, linked into libtorch (BLAS_INFO=mkl)" if "BLAS_INFO=mkl" in info else "none"


def cpu_model():
    """The CPU's model name as /proc/cpuinfo gives it ("unknown" elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def main():
    try:
        import torch
    except ImportError:
        print("torch is not installed for %s (install Debian's python3-torch)" % sys.executable, file=sys.stderr)
        sys.exit(3)
    try:
        import numpy
    except ImportError:
        print("numpy is not installed for %s (install Debian's python3-numpy)" % sys.executable, file=sys.stderr)
        sys.exit(3)
    import torch.distributed as dist
    # the answer carries a prefix: a wrapper may print lines of its own around it
    print("kanscale-probe: " + json.dumps({
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "blas": blas_library(),
        "gloo": bool(dist.is_available() and dist.is_gloo_available()),
        "nccl": bool(dist.is_available() and dist.is_nccl_available()),
        "cuda": bool(torch.cuda.is_available()),
        "threads": torch.get_num_threads(),
    }), flush=True)


if __name__ == "__main__":
    main()
