"""Data-parallel training of efficient-kan's KAN under real PyTorch DDP: the
job kanscale's users run, launched and timed by `kanscale train` for a
workload with `implementation: pytorch`.

Ranks and rendezvous: one process per rank, torch's env rendezvous
(MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), which kanscale sets. Debian's
torchrun 1.13 fails under Python 3.11, so nothing here depends on it. Under
mpirun, Open MPI's OMPI_COMM_WORLD_RANK / _SIZE / _LOCAL_RANK stand in for
RANK / WORLD_SIZE / LOCAL_RANK; MASTER_ADDR and MASTER_PORT must then be
exported to every rank (mpirun -x).

Backend: gloo on CPU; nccl when torch.cuda.is_available() (each rank on
cuda:LOCAL_RANK). Debian's torch has no CUDA, so the nccl path is written
but has never run.

What is timed, per step, on every rank: a barrier (not timed), then
zero_grad, the forward, the MSE loss, backward (DDP's hooks copy each
gradient into its bucket and launch the bucket's all-reduce on the
backend's threads; backward returns after DDP waited for every bucket and
copied the results back) and optimizer.step() (Adam, torch 1.13's default
single-tensor path). No DataLoader: the batch is one tensor made once
before the loop (inputs uniform in [-1, 1], targets from a fixed random
teacher), so the time is the training step's alone. The loss is read after
the timed region. The first `--warmup` steps are recorded with
first_iteration true and left out of the summary: the first builds DDP's
single bucket and the second runs on the buckets rebuilt in ready order.

Output: with --json, rank 0 writes the file kanscale train --json writes
(provenance, summary, iterations). The summary's compute and communication
split is null: torch runs the reducer inside backward and exposes no
per-bucket times without changing what runs. With --profile, rank 0 writes
the trace a user makes: torch.profiler with schedule(wait=1, warmup=2,
active=PROFILE_ACTIVE) over that many more steps after the timed ones (so
the timed ones run without the profiler), each marked ProfilerStep#N, and
written by export_chrome_trace when the active steps end (without Kineto,
as Debian's 1.13 is built, from the profiler's event tree: chrome_trace).
"""
PROFILE_WAIT, PROFILE_WARMUP, PROFILE_ACTIVE = 1, 2, 3
import argparse
import faulthandler
import datetime
import json
import math
import os
import resource
import signal
import sys

from . import probe, timer


def quantile(values, q):
    """Linear interpolation between order statistics (model/statistics.cpp's quantile_sorted)."""
    v = sorted(values)
    if not v:
        return 0.0
    pos = q * (len(v) - 1)
    lo = int(math.floor(pos))
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def rendezvous_env():
    """RANK, WORLD_SIZE, LOCAL_RANK from torch's variables, or from Open MPI's under mpirun."""
    env = os.environ
    for torch_name, ompi_name in (("RANK", "OMPI_COMM_WORLD_RANK"), ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE"),
                                  ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK")):
        if torch_name not in env and ompi_name in env:
            env[torch_name] = env[ompi_name]
    missing = [n for n in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT") if n not in env]
    if missing:
        raise SystemExit("kanscale_torch.ddp_train: %s not set (kanscale train sets them; under mpirun export "
                         "MASTER_ADDR and MASTER_PORT with -x)" % ", ".join(missing))
    return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", env["RANK"]))


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python3 -m kanscale_torch.ddp_train", description=__doc__.split("\n\n")[0])
    p.add_argument("--widths", required=True, help="comma-separated layer widths, e.g. 64,256,256,1")
    p.add_argument("--grid-size", type=int, default=5)
    p.add_argument("--spline-order", type=int, default=3)
    p.add_argument("--batch", type=int, required=True, help="samples per rank per step")
    p.add_argument("--steps", type=int, required=True, help="steps in all, warm-up included (at most, with --target)")
    p.add_argument("--target", type=float, default=0.0,
                   help="stop once every rank's median step is known to this fraction (95%% interval, order statistics)")
    p.add_argument("--warmup", type=int, default=2, help="first steps left out of the summary")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--learning-rate", type=float, default=1e-3)
    p.add_argument("--bucket-cap-bytes", type=float, default=None,
                   help="DDP's bucket_cap_mb in bytes; unset: DDP's default (25 MiB), which torch 2 needs to honour the first bucket's limit")
    p.add_argument("--first-bucket-bytes", type=float, default=1048576.0,
                   help="the rebuilt first bucket's limit (torch's dist._DEFAULT_FIRST_BUCKET_BYTES, 1 MiB)")
    p.add_argument("--gradient-as-bucket-view", action="store_true")
    p.add_argument("--find-unused-parameters", action="store_true")
    p.add_argument("--no-broadcast-buffers", action="store_true")
    p.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto",
                   help="auto: nccl when torch sees CUDA, gloo otherwise")
    p.add_argument("--json", help="rank 0 writes the summary here (via a temporary file beside it)")
    p.add_argument("--profile", help="rank 0 writes a torch.profiler Chrome trace here (schedule: wait 1, warm-up 2, active 3 more steps)")
    p.add_argument("--workload-name", default="")
    p.add_argument("--workload-file", default="")
    p.add_argument("--command-line", default="", help="the kanscale command that launched this run (provenance)")
    p.add_argument("--provenance-json", default="{}", help="kanscale's own provenance object, written as given")
    a = p.parse_args(argv)
    a.widths = [int(w) for w in a.widths.split(",")]
    if len(a.widths) < 2 or min(a.widths) < 1 or a.batch < 1 or a.steps <= a.warmup or a.warmup < 0 or a.threads < 1:
        p.error("widths need two or more positive entries; batch and threads at least 1; steps more than warmup")
    return a


def chrome_trace(prof):
    """torch.profiler's events as a Chrome trace (what export_chrome_trace
    writes: name, ph X, ts and dur in microseconds, tid), from the profiler's
    own event tree: nanosecond times and, in args, each event's id and its
    parent's (0: none). Where torch is built without Kineto (Debian's 1.13),
    export_chrome_trace stamps whole microseconds, and zero-length ops at one
    stamp (aten::item, aten::_local_scalar_dense, then Adam's aten::sqrt)
    cannot be told nested from side by side; formats/torch_trace.cpp reads
    the parent when it is there."""
    roots = prof.profiler.kineto_results.experimental_event_tree()
    out, stack, next_id = [], [(n, 0) for n in reversed(roots)], 1
    t0 = min((n.start_time_ns for n in roots), default=0)
    while stack:
        node, parent = stack.pop()
        me = next_id
        next_id += 1
        out.append(json.dumps({"name": node.name, "ph": "X", "ts": (node.start_time_ns - t0) / 1000.0,
                               "dur": max(0, node.end_time_ns - node.start_time_ns) / 1000.0, "tid": node.start_tid,
                               "pid": "CPU functions", "args": {"id": me, "parent": parent}}, separators=(",", ":")))
        stack.extend((c, me) for c in reversed(node.children))
    return "[\n" + ",\n".join(out) + "\n]\n"


def finite_or_none(x):
    """A number JSON can hold: a diverged loss (NaN, inf) is written as null."""
    return float(x) if math.isfinite(x) else None


def leave(code):
    """Ends the process at once, its files written. With torch 1.13's gloo, a
    rank was seen to spin for ever in the destructors of DDP and its process
    group when main()'s locals went (about one run in ten, at 2 ranks): so they
    never go."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def write_atomic(path, text):
    tmp = "%s.tmp%d" % (path, os.getpid())
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)


def die_with_parent():
    """SIGKILL when the process that started this one dies (Linux's
    PR_SET_PDEATHSIG): a rank started through a wrapper script, whose own
    parent is the wrapper, must not outlive kanscale either."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # 1: PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call
        os._exit(1)


def run_and_leave(job, a):
    """Runs job(a); a failure ends this rank at once with status 1 after its
    traceback (the interpreter's teardown could spin in gloo, see leave()).
    The other entry points (op_bench, collective_sweep) end the same way."""
    die_with_parent()
    # Ctrl-C (kanscale passes SIGINT on to its ranks): end at once, without a
    # KeyboardInterrupt traceback from every rank
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    faulthandler.register(signal.SIGUSR1)  # kill -USR1 PID: every thread's Python stack to the rank's stderr
    try:
        job(a)
    except BaseException:  # noqa: B036 (SystemExit and KeyboardInterrupt too: nothing may reach the teardown)
        import traceback
        traceback.print_exc()
        leave(1)
    leave(0)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--runs"]:
        # --runs FILE [--backend B]: a JSON list of argument lists, each run in
        # turn on one process group (each with its own --json)
        p = argparse.ArgumentParser(prog="python3 -m kanscale_torch.ddp_train --runs")
        p.add_argument("--runs", required=True)
        p.add_argument("--backend", choices=("auto", "gloo", "nccl"), default="auto")
        run_and_leave(run, p.parse_args(argv))
    run_and_leave(run, parse_args(argv))


def run(a):
    """One run, or with --runs every run of the file in turn on one process group."""
    started = timer.now_s()
    rank, world, local_rank = rendezvous_env()
    import torch
    import torch.distributed as dist

    runs = [parse_args(r) for r in load_runs(a.runs)] if getattr(a, "runs", "") else [a]
    for r in runs:
        if (r.threads, r.backend) != (runs[0].threads, runs[0].backend):
            raise SystemExit("kanscale_torch.ddp_train: --runs: every run needs the same --threads and --backend")
    torch.set_num_threads(runs[0].threads)
    backend = a.backend if a.backend != "auto" else ("nccl" if torch.cuda.is_available() else "gloo")
    if backend == "nccl" and not torch.cuda.is_available():
        raise SystemExit("kanscale_torch.ddp_train: --backend nccl: torch sees no CUDA device")
    device = torch.device("cuda", local_rank) if backend == "nccl" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    # a rank that never arrives (or dies) ends the others' waits after 5 minutes, not gloo's 30
    dist.init_process_group(backend, rank=rank, world_size=world, timeout=datetime.timedelta(minutes=5))
    startup_s = timer.now_s() - started  # the interpreter's torch import and the group's start
    for i, r in enumerate(runs):
        one_run(r, rank, world, local_rank, backend, device,
                {"startup_s": startup_s, "run_in_process": i + 1, "runs_in_process": len(runs)})


def load_runs(path):
    """--runs FILE: a JSON list of argument lists, each a run's (its own --json)."""
    with open(path) as f:
        runs = json.load(f)
    if not isinstance(runs, list) or not runs or not all(isinstance(r, list) for r in runs):
        raise SystemExit("kanscale_torch.ddp_train: %s: expected a JSON list of argument lists" % path)
    return runs


def peak_rss_reset():
    """Lets the next peak_rss_bytes() be this run's own: the C heap's free
    memory back to the system (glibc's malloc_trim), then the peak reset to
    what is resident now (Linux's /proc/self/clear_refs, 5). False where
    either is missing: the process's lifetime peak is read instead."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes(was_reset):
    if was_reset:
        try:
            with open("/proc/self/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return float(line.split()[1]) * 1024.0
        except OSError:
            pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0


def one_run(a, rank, world, local_rank, backend, device, process_info):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel as DDP
    from .efficient_kan import KAN

    was_reset = process_info["runs_in_process"] > 1 and peak_rss_reset()
    seed = a.seed % (1 << 63)  # torch's generators take a seed below 2^64
    torch.manual_seed(seed)  # the same initial model everywhere (DDP broadcasts rank 0's anyway)
    model = KAN(a.widths, a.grid_size, a.spline_order).to(device)
    # DDP reads the first bucket's limit from here when it builds its reducer
    dist._DEFAULT_FIRST_BUCKET_BYTES = int(a.first_bucket_bytes)
    # bucket_cap_mb only when given (1.13 takes no None; torch 2 needs it left
    # out to honour the first bucket's limit)
    cap = {} if a.bucket_cap_bytes is None else {"bucket_cap_mb": a.bucket_cap_bytes / 1048576.0}
    ddp = DDP(model, device_ids=[local_rank] if device.type == "cuda" else None, **cap,
              gradient_as_bucket_view=a.gradient_as_bucket_view,
              find_unused_parameters=a.find_unused_parameters, broadcast_buffers=not a.no_broadcast_buffers)
    opt = torch.optim.Adam(ddp.parameters(), lr=a.learning_rate)
    gen = torch.Generator().manual_seed((seed * 1000003 + rank) % (1 << 63))
    x = (torch.rand(a.batch, a.widths[0], generator=gen) * 2 - 1).to(device)
    teacher = torch.randn(a.widths[0], a.widths[-1], generator=torch.Generator().manual_seed((seed + 17) % (1 << 63)))
    t = torch.sin(x.cpu() @ teacher / math.sqrt(a.widths[0])).to(device)

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    phases = ("zero_grad", "forward", "loss", "backward", "optimizer_step")

    def step():
        marks = timer.Marks()
        opt.zero_grad()
        marks.mark()
        out = ddp(x)
        marks.mark()
        loss = F.mse_loss(out, t)
        marks.mark()
        loss.backward()
        marks.mark()
        opt.step()
        sync()
        marks.mark()
        return loss, marks

    records = []
    stop = torch.zeros(1, device=device)
    for s in range(a.steps):
        if a.target > 0 and s > a.warmup:
            # every rank's verdict on its steady steps so far (the median known
            # to a.target: timer.rel_halfwidth), which also lines the ranks up
            steady = [r["iteration_time_s"] for r in records if not r["first_iteration"]]
            stop.fill_(1.0 if len(steady) >= timer.MIN_SAMPLES and timer.rel_halfwidth(steady) <= a.target else 0.0)
            dist.all_reduce(stop, op=dist.ReduceOp.MIN)
            if stop.item() > 0:
                break
        else:
            dist.barrier()
        loss, marks = step()
        records.append({"step": s, "rank": rank, "batch": a.batch, "first_iteration": s < a.warmup,
                        "iteration_time_s": marks.total_s(), "compute_time_s": None, "communication_time_s": None,
                        "exposed_communication_s": None, "loss": finite_or_none(loss.item()),
                        "phases_s": marks.spans_s()})
    if a.profile:
        import warnings
        from torch.profiler import ProfilerActivity, profile, schedule
        # torch 2's note that a schedule's cycle clears its events: one cycle here
        warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each cycle")
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])

        def export(prof):
            if rank != 0:
                return
            if not torch.autograd.kineto_available():
                write_atomic(a.profile, chrome_trace(prof))
                return
            tmp = a.profile + ".tmp%d" % os.getpid()  # beside it, renamed: never half written
            prof.export_chrome_trace(tmp)
            os.replace(tmp, a.profile)
        dist.barrier()
        with profile(activities=activities, schedule=schedule(wait=PROFILE_WAIT, warmup=PROFILE_WARMUP, active=PROFILE_ACTIVE),
                     on_trace_ready=export) as prof:
            for _ in range(PROFILE_WAIT + PROFILE_WARMUP + PROFILE_ACTIVE):
                step()
                prof.step()
    rss = peak_rss_bytes(was_reset)
    # DDP's own record of the last iteration: the order gradients became ready
    # (parameter indices, parameters() order) and the rebuilt buckets' sizes
    logged = ddp._get_ddp_logging_data()

    def ints(text, sep):
        return [int(v) for v in str(text).replace(sep, " ").split()] if text not in (None, "") else []
    ddp_info = {"grad_ready_order": ints(logged.get("prev_iteration_grad_ready_order_indices"), ","),
                "bucket_sizes_bytes": ints(logged.get("rebuilt_bucket_sizes", logged.get("bucket_sizes")), ",")}
    gathered = [None] * world
    dist.all_gather_object(gathered, {"records": records, "rss": rss})
    # every rank is past the gather before any leaves (leave(): no teardown)
    dist.barrier()
    if rank != 0 or not a.json:
        return
    per_rank = {}
    iterations = []
    for g in gathered:
        iterations.extend(g["records"])
        steady = [r for r in g["records"] if not r["first_iteration"]]
        per_rank.setdefault("iter", []).append(quantile([r["iteration_time_s"] for r in steady], 0.5))
        for i, name in enumerate(phases):
            per_rank.setdefault(name, []).append(quantile([r["phases_s"][i] for r in steady], 0.5))
    iterations.sort(key=lambda r: (r["step"], r["rank"]))
    it = per_rank["iter"]
    null_split = {"median": None, "p95": None}
    summary = {
        "iteration_time_s": {"median": quantile(it, 0.5), "p95": quantile(it, 0.95)},
        "compute_time_s": null_split, "communication_time_s": null_split, "exposed_communication_s": null_split,
        "samples_per_s": world * a.batch / quantile(it, 0.5),
        "peak_rss_bytes": max(g["rss"] for g in gathered), "peak_device_bytes": None,
        "final_loss": records[-1]["loss"], "steps": len(records), "interrupted": False,
        "bucket_communication_s": [], "epoch_fixed_s": None,
        "ops": [{"op": name, "median_s": quantile(per_rank[name], 0.5)} for name in phases],
    }
    info = json.loads(a.provenance_json)
    info.update({"date_utc": datetime.datetime.utcnow().strftime("%Y-%m-%dT%H:%M:%SZ"), "command_line": a.command_line,
                 "seed": a.seed, "workload": {"name": a.workload_name, "file": a.workload_file}, "ranks": world,
                 "backend": "pytorch-" + backend, "threads_per_rank": a.threads, "hosts": sorted({os.uname().nodename}),
                 "implementation": "pytorch", "warmup_steps": a.warmup, "ddp": ddp_info,
                 "steps_at_most": a.steps, "target_rel_halfwidth": a.target, "process": process_info,
                 "bucket_cap_bytes": 25.0 * 1048576 if a.bucket_cap_bytes is None else a.bucket_cap_bytes, "first_bucket_bytes": a.first_bucket_bytes,
                 "gradient_as_bucket_view": a.gradient_as_bucket_view,
                 "torch": torch.__version__, "blas": probe.blas_library(), "python": sys.version.split()[0],
                 "machine": {"cpu_model": probe.cpu_model(), "cores": os.cpu_count()}})
    write_atomic(a.json, json.dumps({"provenance": info, "summary": summary, "iterations": iterations}, indent=2,
                                    allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
