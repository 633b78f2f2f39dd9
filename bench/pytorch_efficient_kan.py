#!/usr/bin/python3
"""PyTorch baseline for `kanscale bench kernels`.

efficient-kan's KAN from the project's one module of it
(measure/python/kanscale_torch/efficient_kan.py: its b_splines recursion on
(B, in, G+2k) tensors, the scaled spline weight, the two F.linear calls). It is first checked against kanscale's fp64 reference (the
gradients `kanscale bench kernels --export DIR` writes), then timed for
forward + backward + MSE loss on the same shapes, batch and threads.

Usage (Debian's python3-torch, with libopenblas0-pthread):
  build/cli/kanscale bench kernels --export /tmp/kb --json /tmp/kb/kanscale.json
  /usr/bin/python3 bench/pytorch_efficient_kan.py /tmp/kb
"""
import glob
import json
import os
import statistics
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "measure", "python"))
from kanscale_torch.efficient_kan import KAN  # noqa: E402  (the project's one efficient-kan module)


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    meta = header.pop("__metadata__", {})
    base = 8 + n
    out = {}
    for name, t in header.items():
        a, b = t["data_offsets"]
        out[name] = np.frombuffer(data[base + a:base + b], dtype="<f4").reshape(t["shape"]).copy()
    return out, meta


def load_case(path, dtype):
    """The case's KAN as efficient-kan's module (measure/python/kanscale_torch), its weights and grid from the file."""
    tensors, meta = read_safetensors(path)
    nl = len([n for n in tensors if n.endswith(".base_weight") and n.startswith("layers.")])
    widths = [tensors["layers.0.base_weight"].shape[1]] + [tensors[f"layers.{l}.base_weight"].shape[0] for l in range(nl)]
    G = int(meta["grid_size"])
    model = KAN(widths, G, 3).to(dtype)
    with torch.no_grad():
        for l, layer in enumerate(model.layers):
            for n in ("base_weight", "spline_weight", "spline_scaler", "grid"):
                getattr(layer, n).copy_(torch.tensor(tensors[f"layers.{l}.{n}"], dtype=dtype))
    return tensors, meta, model, widths, G


def main():
    d = sys.argv[1]
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    kanscale = {}
    kj = os.path.join(d, "kanscale.json")
    if os.path.exists(kj):
        for r in json.load(open(kj)):
            kanscale[(tuple(r["widths"]), r["grid_size"], r["threads"])] = r["time_s"]
    print("efficient-kan's op sequence on PyTorch %s (%s), forward + backward + MSE loss, median of %d" %
          (torch.__version__, torch.__config__.parallel_info().splitlines()[0], reps))
    print("%-20s %-3s %-8s %-12s %-12s %-12s %s" % ("shape", "G", "threads", "check", "torch", "kanscale", "speedup"))
    for path in sorted(glob.glob(os.path.join(d, "case_*.safetensors"))):
        tensors, meta, model, widths, G = load_case(path, torch.float64)
        rows = int(meta["ref_rows"])
        x = torch.tensor(tensors["x"][:rows], dtype=torch.float64)
        t = torch.tensor(tensors["t"][:rows], dtype=torch.float64)
        F.mse_loss(model(x), t).backward()
        err = 0.0
        for l, layer in enumerate(model.layers):
            for n in ("base_weight", "spline_weight", "spline_scaler"):
                ref = torch.tensor(tensors[f"ref_grad.layers.{l}.{n}"], dtype=torch.float64)
                scale = ref.abs().max().item() or 1.0
                err = max(err, (getattr(layer, n).grad - ref).abs().max().item() / scale)
        check = "%.1e" % err
        if err > 1e-5:
            print("MISMATCH against the fp64 reference: %s" % check)
            sys.exit(1)
        tensors, meta, model, widths, G = load_case(path, torch.float32)
        x = torch.tensor(tensors["x"])
        t = torch.tensor(tensors["t"])
        for threads in (1, 2):
            torch.set_num_threads(threads)
            times = []
            for i in range(reps + 2):
                model.zero_grad(set_to_none=True)
                t0 = time.perf_counter()
                F.mse_loss(model(x), t).backward()
                if i >= 2:
                    times.append(time.perf_counter() - t0)
            tt = statistics.median(times)
            ks = kanscale.get((tuple(widths), G, threads))
            print("%-20s %-3d %-8d %-12s %-12s %-12s %s" % (
                str(widths).replace(" ", ""), G, threads, check, "%.2f ms" % (tt * 1e3),
                "%.2f ms" % (ks * 1e3) if ks else "-", "%.1fx" % (tt / ks) if ks else "-"))


if __name__ == "__main__":
    main()
