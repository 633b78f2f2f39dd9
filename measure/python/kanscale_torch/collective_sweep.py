"""All-reduce or broadcast sweep through torch.distributed (gloo on CPU,
nccl where torch sees CUDA), written in the JSON of `kanscale measure
allreduce|broadcast` so that `kanscale fit` reads it (kanscale measure
allreduce --backend gloo launches it, one process per rank, with the env
rendezvous).

Per size (nccl-tests' sizes: from -b to -e, times -f, multiples of 4 bytes):
a float32 tensor of rank-dependent values is reduced (or broadcast from
--root) once and checked: every element must equal the expected sum (the
root's values); then -w untimed and -n timed calls back to back between two
barriers, timed on every rank. time_us is the largest rank's mean per call.
torch's collectives work in place, so only the in_place side is written.
algbw = bytes / time; busbw as nccl-tests defines it (x 2(n-1)/n for an
all-reduce, x 1 for a broadcast).

Written from the algorithms torch 1.13 runs here: ProcessGroupGloo calls
gloo's ring all-reduce (reduce-scatter then all-gather, in segments) and
gloo's binomial-tree broadcast; kanscale's gloo model (model/collectives.hpp)
follows them."""
import argparse
import datetime
import json
import os
import socket
import sys

from . import probe, timer
from .ddp_train import rendezvous_env, run_and_leave, write_atomic


def sizes(lo, hi, factor):
    out, s = [], lo
    while s <= hi:
        b = max(4, int(s) // 4 * 4)
        if not out or b != out[-1]:
            out.append(b)
        s *= factor
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m kanscale_torch.collective_sweep", description=__doc__.split("\n\n")[0])
    p.add_argument("--op", choices=("allreduce", "broadcast"), required=True)
    p.add_argument("--min-bytes", type=float, required=True)
    p.add_argument("--max-bytes", type=float, required=True)
    p.add_argument("--factor", type=float, required=True)
    p.add_argument("--iters", type=int, required=True)
    p.add_argument("--warmup", type=int, required=True)
    p.add_argument("--large-from", type=float, default=0.0)
    p.add_argument("--large-iters", type=int, default=0)
    p.add_argument("--large-warmup", type=int, default=0)
    p.add_argument("--root", type=int, default=0)
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
    p.add_argument("--json", required=True)
    p.add_argument("--command-line", default="")
    p.add_argument("--provenance-json", default="{}")
    a = p.parse_args(argv)
    if a.min_bytes < 4 or a.max_bytes < a.min_bytes or a.factor <= 1 or a.iters < 1 or a.warmup < 0:
        p.error("sizes from 4 bytes, -e at least -b, -f above 1, -n at least 1, -w at least 0")
    if a.large_from > 0 and (a.large_iters < 1 or a.large_warmup < 0):
        p.error("--large-from: --large-iters at least 1, --large-warmup at least 0")
    return a


def main(argv=None):
    run_and_leave(run, parse_args(sys.argv[1:] if argv is None else argv))


def run(a):
    rank, world, local_rank = rendezvous_env()
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    backend = a.backend if a.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend, rank=rank, world_size=world, timeout=datetime.timedelta(minutes=5))
    if not 0 <= a.root < world:
        raise SystemExit("kanscale_torch.collective_sweep: --root %d: expected 0 to %d" % (a.root, world - 1))

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    def call(t):
        if a.op == "allreduce":
            dist.all_reduce(t)
        else:
            dist.broadcast(t, a.root)

    points = []
    for b in sizes(a.min_bytes, a.max_bytes, a.factor):
        n = b // 4
        # rank r holds r+1 everywhere: the sum is world(world+1)/2, the root's value root+1
        t = torch.full((n,), float(rank + 1), device=device)
        call(t)
        sync()
        want = world * (world + 1) / 2.0 if a.op == "allreduce" else float(a.root + 1)
        wrong = int((t != want).sum().item())
        t.zero_()
        large = a.large_from > 0 and b >= a.large_from
        per_call = timer.per_call_s(lambda: call(t), a.large_iters if large else a.iters, a.large_warmup if large else a.warmup, sync,
                                    start=dist.barrier)
        dist.barrier()
        stats = torch.tensor([per_call, float(wrong)], dtype=torch.float64)
        dist.all_reduce(stats[:1], op=dist.ReduceOp.MAX)
        dist.all_reduce(stats[1:], op=dist.ReduceOp.SUM)
        secs, wrong_all = float(stats[0]), int(stats[1])
        algbw = b / secs / 1e9
        bus = algbw * (2.0 * (world - 1) / world if a.op == "allreduce" else 1.0)
        points.append({"size_bytes": b, "count": n, "type": "float", "redop": "sum" if a.op == "allreduce" else "none",
                       "root": -1 if a.op == "allreduce" else a.root,
                       "in_place": {"time_us": secs * 1e6, "algbw_GBps": algbw, "busbw_GBps": bus, "wrong": wrong_all}})
        if rank == 0:
            sys.stderr.write("%12d B  %10.2f us\n" % (b, secs * 1e6))
    hosts = [None] * world
    dist.all_gather_object(hosts, socket.gethostname())
    if rank == 0:
        library = ("gloo" if backend == "gloo" else "nccl") + " (torch " + torch.__version__ + ")"
        meta = {"op": a.op, "backend": backend, "library": library, "ranks": world, "nodes": len(set(hosts)),
                "hosts": hosts, "nonblocking": False, "iters": a.iters, "warmup": a.warmup,
                "large_from_bytes": a.large_from, "large_iters": a.large_iters if a.large_from > 0 else a.iters,
                "large_warmup_iters": a.large_warmup if a.large_from > 0 else a.warmup,
                "torch": torch.__version__, "blas": probe.blas_library(), "python": sys.version.split()[0],
                "machine": {"cpu_model": probe.cpu_model(), "cores": os.cpu_count()}, "command_line": a.command_line,
                "provenance": dict(json.loads(a.provenance_json),
                                   date_utc=datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))}
        write_atomic(a.json, json.dumps({"metadata": meta, "points": points}, indent=1) + "\n")
    dist.barrier()


if __name__ == "__main__":
    main()
