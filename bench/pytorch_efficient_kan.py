#!/usr/bin/python3
"""PyTorch baseline for `kanscale bench kernels`.

A KAN layer that follows efficient-kan's op sequence (its b_splines
recursion on (B, in, G+2k) tensors, the scaled spline weight, the two
F.linear calls), written here from the formulas in shared/reference/kan.md,
not copied. It is first checked against kanscale's fp64 reference (the
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


def b_splines(x, grid, k):
    # x: (B, in), grid: (in, G+2k+1) -> (B, in, G+k), Cox-de Boor as efficient-kan does it
    x = x.unsqueeze(-1)
    bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
    for p in range(1, k + 1):
        bases = ((x - grid[:, :-(p + 1)]) / (grid[:, p:-1] - grid[:, :-(p + 1)]) * bases[:, :, :-1]) + (
            (grid[:, p + 1:] - x) / (grid[:, p + 1:] - grid[:, 1:(-p)]) * bases[:, :, 1:])
    return bases.contiguous()


def layer(x, p, k):
    base = F.linear(F.silu(x), p["base_weight"])
    scaled = p["spline_weight"] * p["spline_scaler"].unsqueeze(-1)
    spline = F.linear(b_splines(x, p["grid"], k).view(x.size(0), -1), scaled.view(scaled.size(0), -1))
    return base + spline


def net_loss(x, t, layers, k):
    for p in layers:
        x = layer(x, p, k)
    return F.mse_loss(x, t)


def load_case(path, dtype):
    tensors, meta = read_safetensors(path)
    nl = len([n for n in tensors if n.endswith(".base_weight") and n.startswith("layers.")])
    layers = []
    for l in range(nl):
        p = {}
        for n in ("base_weight", "spline_weight", "spline_scaler"):
            p[n] = torch.tensor(tensors[f"layers.{l}.{n}"], dtype=dtype, requires_grad=True)
        p["grid"] = torch.tensor(tensors[f"layers.{l}.grid"], dtype=dtype)
        layers.append(p)
    return tensors, meta, layers


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
        k = 3
        tensors, meta, layers = load_case(path, torch.float64)
        rows = int(meta["ref_rows"])
        widths = [tensors["layers.0.base_weight"].shape[1]] + [
            tensors[f"layers.{l}.base_weight"].shape[0] for l in range(len(layers))]
        G = int(meta["grid_size"])
        x = torch.tensor(tensors["x"][:rows], dtype=torch.float64)
        t = torch.tensor(tensors["t"][:rows], dtype=torch.float64)
        loss = net_loss(x, t, layers, k)
        loss.backward()
        err = 0.0
        for l, p in enumerate(layers):
            for n in ("base_weight", "spline_weight", "spline_scaler"):
                ref = torch.tensor(tensors[f"ref_grad.layers.{l}.{n}"], dtype=torch.float64)
                scale = ref.abs().max().item() or 1.0
                err = max(err, (p[n].grad - ref).abs().max().item() / scale)
        check = "%.1e" % err
        if err > 1e-5:
            print("MISMATCH against the fp64 reference: %s" % check)
            sys.exit(1)
        tensors, meta, layers = load_case(path, torch.float32)
        x = torch.tensor(tensors["x"])
        t = torch.tensor(tensors["t"])
        for threads in (1, 2):
            torch.set_num_threads(threads)
            times = []
            for i in range(reps + 2):
                for p in layers:
                    for n in ("base_weight", "spline_weight", "spline_scaler"):
                        p[n].grad = None
                t0 = time.perf_counter()
                net_loss(x, t, layers, k).backward()
                if i >= 2:
                    times.append(time.perf_counter() - t0)
            tt = statistics.median(times)
            ks = kanscale.get((tuple(widths), G, threads))
            print("%-20s %-3d %-8d %-12s %-12s %-12s %s" % (
                str(widths).replace(" ", ""), G, threads, check, "%.2f ms" % (tt * 1e3),
                "%.2f ms" % (ks * 1e3) if ks else "-", "%.1fx" % (tt / ks) if ks else "-"))


if __name__ == "__main__":
    main()
