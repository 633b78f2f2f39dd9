"""How much a rank's compute slows while gloo's threads run an all-reduce:
the calibration's `interference` for PyTorch on CPUs (kanscale bench
interference --backend gloo launches it, one process per rank, with the env
rendezvous), written in the JSON of `kanscale bench interference` so that
`kanscale fit --interference` reads it.

torch 1.13's gloo process group runs each collective on a worker thread of
its own (2 per process group, ProcessGroupGloo's default), and DDP's
reducer launches a bucket's all-reduce there while backward goes on: on a
machine with as many cores as ranks those threads take their cycles from
the ranks' compute. Per round, on every rank, between barriers:
  alone:     efficient-kan's forward + MSE + backward (the compute);
  with comm: the same compute right after launching an all-reduce of
             --bytes (async_op=True), timed to the compute's end; then the
             wait;
  all-reduce alone: the same all-reduce with nothing else running.
Rounds alternate, so a drift of the machine's speed hits all three alike.
The slowdown (with / alone - 1) is spread over the time the all-reduce runs:
compute lost per second of collective = (with - alone) / the all-reduce
alone (medians), the replay's `interference`, which slows compute only
while a collective is in flight. Only rounds whose all-reduce finished
within the compute are counted in `allreduces`: pick --bytes so that it
does. Rank 0 writes the file with the mean and worst over ranks. (The
memory a message in flight holds is not measured here: torch's allocator
hides it from the resident set.)
"""
import argparse
import datetime
import json
import os
import sys

from . import probe, timer
from .ddp_train import quantile, rendezvous_env, run_and_leave, write_atomic


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m kanscale_torch.interference", description=__doc__.split("\n\n")[0])
    p.add_argument("--widths", required=True, help="comma-separated layer widths")
    p.add_argument("--grid-size", type=int, default=5)
    p.add_argument("--spline-order", type=int, default=3)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--bytes", type=float, required=True, help="the all-reduce's size")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--json", required=True)
    p.add_argument("--command-line", default="")
    p.add_argument("--provenance-json", default="{}")
    a = p.parse_args(argv)
    a.widths = [int(w) for w in a.widths.split(",")]
    if len(a.widths) < 2 or min(a.widths) < 1 or a.batch < 1 or a.bytes < 4 or a.repeat < 3 or a.warmup < 0 or a.threads < 1:
        p.error("two or more positive widths, batch at least 1, bytes at least 4, repeat at least 3, threads at least 1")
    return a


def main(argv=None):
    run_and_leave(run, parse_args(sys.argv[1:] if argv is None else argv))


def run(a):
    rank, world, _ = rendezvous_env()
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from .efficient_kan import KAN

    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(minutes=5))
    torch.manual_seed(3)
    model = KAN(a.widths, a.grid_size, a.spline_order)
    gen = torch.Generator().manual_seed(7 + rank)
    x = torch.rand(a.batch, a.widths[0], generator=gen) * 2 - 1
    t = torch.rand(a.batch, a.widths[-1], generator=gen)
    buf = torch.ones(max(1, int(a.bytes) // 4))

    def compute():
        F.mse_loss(model(x), t).backward()
        model.zero_grad(set_to_none=True)

    def launch_and_compute():
        work = dist.all_reduce(buf, async_op=True)
        compute()
        return work

    def round_():
        """(compute alone, compute beside the all-reduce, all-reduce alone, whether it finished within the compute)"""
        dist.barrier()
        d_alone, _ = timer.span_s(compute)
        dist.barrier()
        d_with, work = timer.span_s(launch_and_compute)
        done = work.is_completed()
        work.wait()
        dist.barrier()
        d_ar, _ = timer.span_s(lambda: dist.all_reduce(buf))
        return d_alone, d_with, d_ar, done

    rounds = timer.repeat(round_, a.repeat, a.warmup)
    alone, with_comm, ar_alone = [r[0] for r in rounds], [r[1] for r in rounds], [r[2] for r in rounds]
    finished = sum(bool(r[3]) for r in rounds)
    m_alone, m_with, m_ar = quantile(alone, 0.5), quantile(with_comm, 0.5), quantile(ar_alone, 0.5)
    mine = {"interference": m_with / m_alone - 1.0 if m_alone > 0 else 0.0,
            "per_second": max(0.0, (m_with - m_alone) / m_ar) if m_ar > 0 else 0.0}
    gathered = [None] * world
    dist.all_gather_object(gathered, mine)
    dist.barrier()
    if rank != 0:
        return
    out = {"command_line": a.command_line, "ranks": world, "threads_per_rank": a.threads, "allreduce_bytes": float(int(a.bytes) // 4 * 4),
           "alone_s": m_alone, "with_communication_s": m_with, "interference_rank0": mine["interference"],
           "interference_mean": sum(g["interference"] for g in gathered) / world,
           "interference_max": max(g["interference"] for g in gathered), "allreduce_alone_s": m_ar,
           "interference_per_collective_second_mean": sum(g["per_second"] for g in gathered) / world,
           "alone_iqr_s": quantile(alone, 0.75) - quantile(alone, 0.25),
           "with_communication_iqr_s": quantile(with_comm, 0.75) - quantile(with_comm, 0.25),
           "allreduces_within_compute": finished, "repeats": a.repeat, "backend": "gloo",
           "workload": {"widths": a.widths, "grid_size": a.grid_size, "spline_order": a.spline_order, "batch": a.batch},
           "torch": torch.__version__, "blas": probe.blas_library(), "python": sys.version.split()[0],
           "machine": {"cpu_model": probe.cpu_model(), "cores": os.cpu_count()},
           "provenance": dict(json.loads(a.provenance_json), date_utc=datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"))}
    write_atomic(a.json, json.dumps(out, indent=2) + "\n")
    print("kanscale bench interference (gloo): %d rank(s); compute alone %.3f ms, with an all-reduce of %d bytes in flight %.3f ms "
          "(%d of %d finished within it); the all-reduce alone %.3f ms: compute lost per second of collective %.3f (mean over ranks)"
          % (world, m_alone * 1e3, int(a.bytes), m_with * 1e3, finished, a.repeat, m_ar * 1e3,
             out["interference_per_collective_second_mean"]))


if __name__ == "__main__":
    main()
