"""Times efficient-kan's op classes in PyTorch, one class at a time, over a
list of shapes, for `kanscale fit` (kanscale measure torch-ops runs it; the
calibrate plan configs/calibrate/pytorch-cpu.yaml names the shapes).

Each record is one class at one shape: the median and IQR of `--reps` timed
repetitions (after warm-up), with how many calls of the class one repetition
makes and how many elements they touch. `kanscale fit` fits per class
time = calls x fixed + elements x per_element, which separates the fixed
host cost (Python, the dispatcher, autograd's nodes) from the size-dependent
cost.

The classes, and the elements each counts (B batch, in/out the layer's
widths, G grid size, k spline order, C = G+k, E = G+2k):
  per layer, forward (the calls efficient_kan.KANLinear.forward makes):
    forward:silu                 F.silu(x)                          B*in
    forward:base_linear          F.linear(silu(x), base_weight)     B*in*out
    forward:bases                b_splines(x, grid, k)              B*in*E
    forward:scaled_spline_weight spline_weight * spline_scaler[..,None]  in*out*C
    forward:spline_linear        F.linear(bases.view, scaled.view)  B*in*C*out
    forward:add                  base + spline                      B*out
  per layer, backward (autograd's nodes and kernels for the same ops,
  accumulating into leaf gradients as AccumulateGrad does after zero_grad;
  the graph is kept between repetitions):
    backward:silu, backward:base_linear, backward:bases,
    backward:scaled_spline_weight, backward:spline_linear: a hidden layer's
      (the input needs a gradient), same elements as forward;
    backward:base_linear@first, backward:spline_linear@first: the first
      layer's (the data needs no gradient: the weight's gradient only).
  per model (the whole KAN of the shape, one call per parameter tensor):
    loss:mse (F.mse_loss, elements B*out), backward:mse (its backward);
    zero_grad  optimizer.zero_grad() (torch 1.13: zero_ per parameter; torch 2: set to None);
    adam       optimizer.step() of torch.optim.Adam on the single-tensor path torch takes on a CPU;
    reducer    DDP's own work in backward at world size 1 (gloo): the
               autograd hooks, the copy of each gradient into its bucket
               (scaled by 1/world), the bucket's launch and wait and the copy
               back: the median of DDP's backward minus the median of the
               bare model's, repetitions interleaved; elements: parameters;
    ddp:forward DDP's own work in forward at world size 1 (the buffers'
               broadcast: flatten, launch, wait, unflatten, copy back): DDP's
               forward minus the bare model's; calls 1, elements: buffer elements.
A difference that comes out at or below zero (noise larger than the cost) is
left out and counted in metadata.dropped.
"""
import argparse
import datetime
import json
import math
import os
import sys

from . import probe, timer
from .ddp_train import run_and_leave


def quantile(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def timed(fn, a):
    """fn()'s wall time per repetition (seconds), after `a.warmup` untimed
    calls: until the median is known to a.target (timer.until_known), at
    most a.reps repetitions."""
    return timer.until_known(lambda: timer.span_s(fn)[0], a.target, a.reps, a.warmup)


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m kanscale_torch.op_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", required=True,
                   help='JSON list of {"widths": [..], "grid_size": G, "spline_order": k, "batch": B}')
    p.add_argument("--reps", type=int, default=20, help="repetitions at most (all of them with --target 0)")
    p.add_argument("--target", type=float, default=0.0,
                   help="stop once the median's 95%% interval (order statistics) is within this fraction of it")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=5)
    p.add_argument("--json", required=True, help="written via a temporary file beside it")
    p.add_argument("--command-line", default="")
    p.add_argument("--provenance-json", default="{}")
    a = p.parse_args(argv)
    a.shapes = json.loads(a.shapes)
    if a.reps < 3 or a.warmup < 0 or a.threads < 1 or not a.shapes:
        p.error("reps at least 3, warmup at least 0, threads at least 1, one shape or more")
    return a


def main(argv=None):
    run_and_leave(run, parse_args(sys.argv[1:] if argv is None else argv))


def progress(done, total, what):
    # one line per step on stderr: kanscale's progress bar reads nothing from it, a person might
    sys.stderr.write("[%d/%d] %s\n" % (done, total, what))
    sys.stderr.flush()


def run(a):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from .efficient_kan import KAN, b_splines

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    if "MASTER_PORT" not in os.environ:
        raise SystemExit("kanscale_torch.op_bench: MASTER_PORT not set (kanscale measure torch-ops sets it)")
    dist.init_process_group("gloo", rank=0, world_size=1, timeout=datetime.timedelta(minutes=5))
    records, dropped = [], []

    def record(cls, shape, calls, elements, times):
        records.append({"class": cls, "shape": shape, "calls": calls, "elements": float(elements),
                        "time_median_s": quantile(times, 0.5),
                        "time_iqr_s": quantile(times, 0.75) - quantile(times, 0.25), "reps": len(times)})

    def backward_of(y, g):
        return lambda: y.backward(g, retain_graph=True)

    total = len(a.shapes)
    for si, s in enumerate(a.shapes):
        widths, G, k, B = [int(w) for w in s["widths"]], int(s["grid_size"]), int(s["spline_order"]), int(s["batch"])
        progress(si, total, "%s G%d batch %d" % (widths, G, B))
        model = KAN(widths, G, k)
        C, E = G + k, G + 2 * k
        for li, layer in enumerate(model.layers):
            i, o = layer.in_features, layer.out_features
            shape = {"in": i, "out": o, "grid_size": G, "spline_order": k, "batch": B, "widths": widths}
            x0 = torch.rand(B, i) * 2 - 1
            # forward classes: no graph is built (the leaves need no gradient)
            with torch.no_grad():
                sx = F.silu(x0)
                bases = b_splines(x0, layer.grid, k)
                sw = layer.scaled_spline_weight
                base = F.linear(sx, layer.base_weight)
                spline = F.linear(bases.view(B, -1), sw.view(o, -1))
            fwd = [("forward:silu", B * i, lambda: F.silu(x0)),
                   ("forward:base_linear", B * i * o, lambda: F.linear(sx, layer.base_weight)),
                   ("forward:bases", B * i * E, lambda: b_splines(x0, layer.grid, k)),
                   ("forward:scaled_spline_weight", i * o * C, lambda: layer.spline_weight * layer.spline_scaler.unsqueeze(-1)),
                   ("forward:spline_linear", B * i * C * o, lambda: F.linear(bases.view(B, -1), sw.view(o, -1))),
                   ("forward:add", B * o, lambda: base + spline)]
            with torch.no_grad():
                for cls, n, fn in fwd:
                    record(cls, shape, 1, n, timed(fn, a))
            # backward classes: each op's graph from leaves, kept between repetitions
            for first in (False, True):
                xg = x0.clone().requires_grad_(not first)
                suffix = "@first" if first else ""
                cases = []
                if not first:
                    y = F.silu(xg)
                    cases.append(("backward:silu", B * i, y))
                    y = b_splines(xg, layer.grid, k)
                    cases.append(("backward:bases", B * i * E, y))
                    y = layer.spline_weight * layer.spline_scaler.unsqueeze(-1)
                    cases.append(("backward:scaled_spline_weight", i * o * C, y))
                a_in = sx.clone().requires_grad_(not first)
                cases.append(("backward:base_linear" + suffix, B * i * o, F.linear(a_in, layer.base_weight)))
                b_in = bases.view(B, -1).clone().requires_grad_(not first)
                w_in = sw.view(o, -1).clone().requires_grad_(True)
                cases.append(("backward:spline_linear" + suffix, B * i * C * o, F.linear(b_in, w_in)))
                for cls, n, y in cases:
                    g = torch.ones_like(y)
                    record(cls, shape, 1, n, timed(backward_of(y, g), a))
                model.zero_grad(set_to_none=True)
        # ---- per model: loss, zero_grad, Adam, DDP's reducer and forward
        shape = {"in": widths[0], "out": widths[-1], "grid_size": G, "spline_order": k, "batch": B, "widths": widths}
        params = list(model.parameters())
        n_params = sum(p.numel() for p in params)
        x = torch.rand(B, widths[0]) * 2 - 1
        target = torch.rand(B, widths[-1])
        with torch.no_grad():
            pred0 = model(x)
        record("loss:mse", shape, 1, B * widths[-1], timed(lambda: F.mse_loss(pred0, target), a))
        pl = pred0.clone().requires_grad_(True)
        loss = F.mse_loss(pl, target)
        record("backward:mse", shape, 1, B * widths[-1], timed(lambda: loss.backward(retain_graph=True), a))
        opt = torch.optim.Adam(params, lr=1e-3)
        F.mse_loss(model(x), target).backward()
        record("zero_grad", shape, len(params), n_params, timed(opt.zero_grad, a))
        F.mse_loss(model(x), target).backward()
        record("adam", shape, len(params), n_params, timed(opt.step, a))
        # DDP at world size 1 against the bare model, interleaved
        ddp = DDP(model)  # DDP's default buckets (torch 2 keeps the 1 MiB first bucket only so)
        def forward_backward(wrapped):
            marks = timer.Marks()
            out = wrapped(x)
            marks.mark()
            F.mse_loss(out, target).backward()
            marks.mark()
            return marks.spans_s()

        # each repetition: the bare model, then DDP's (forward, backward) spans
        # (until both backward medians are known, at most a.reps)
        reps = timer.until_known(lambda: (forward_backward(model), forward_backward(ddp)), a.target, a.reps, a.warmup,
                                 series=lambda out: ([p[1] for p, _ in out], [d[1] for _, d in out]))
        plain_f, plain_b = [p[0] for p, _ in reps], [p[1] for p, _ in reps]
        ddp_f, ddp_b = [d[0] for _, d in reps], [d[1] for _, d in reps]
        n_buffers = sum(b.numel() for b in model.buffers())
        for cls, calls, n, with_ddp, bare in (("reducer", len(params), n_params, ddp_b, plain_b),
                                              ("ddp:forward", 1, n_buffers, ddp_f, plain_f)):
            d = quantile(with_ddp, 0.5) - quantile(bare, 0.5)
            if d <= 0:
                dropped.append({"class": cls, "shape": shape, "difference_s": d})
                continue
            iqr = math.hypot(quantile(with_ddp, 0.75) - quantile(with_ddp, 0.25), quantile(bare, 0.75) - quantile(bare, 0.25))
            records.append({"class": cls, "shape": shape, "calls": calls, "elements": float(n), "time_median_s": d,
                            "time_iqr_s": iqr, "reps": len(with_ddp)})
        del ddp
    progress(total, total, "done")
    meta = {"op": "torch_ops", "torch": torch.__version__, "blas": probe.blas_library(), "python": sys.version.split()[0],
            "machine": {"cpu_model": probe.cpu_model(), "cores": os.cpu_count()}, "threads": a.threads, "reps": a.reps,
            "target_rel_halfwidth": a.target,
            "warmup": a.warmup, "dropped": dropped, "command_line": a.command_line,
            "provenance": dict(json.loads(a.provenance_json),
                               date_utc=datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))}
    # one record a line: a calibration keeps these files beside it
    text = ('{"metadata": ' + json.dumps(meta) + ',\n "records": [\n' +
            ",\n".join(json.dumps(r, separators=(",", ":")) for r in records) + "\n]}\n")
    tmp = "%s.tmp%d" % (a.json, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, a.json)


if __name__ == "__main__":
    main()
