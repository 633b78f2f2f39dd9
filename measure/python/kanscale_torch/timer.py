"""The one timer of kanscale's PyTorch side (as measure/workbench is the C++
side's): one clock, the warm-up kept apart from the samples, and the timed
loop kept small. Every timing site in this package goes through it.

- now_s(): the clock (time.perf_counter_ns, in seconds);
- span_s(fn): fn's wall time and its result;
- repeat(step, reps, warmup): `warmup` untimed calls of step(), then the
  results of `reps` calls (step times what it needs with span_s or Marks);
- samples_s(fn, reps, warmup): fn's wall time per call, `reps` samples;
- per_call_s(fn, iters, warmup, sync, start): one sample of `iters` back-to-back
  calls (collectives, too short to time one by one), per call;
- Marks: timestamps within one step (its phases).
"""

import time


def now_s():
    """The clock every timing site reads, in seconds."""
    return time.perf_counter_ns() * 1e-9


def span_s(fn):
    """(fn()'s wall time in seconds, its result)."""
    t0 = time.perf_counter_ns()
    out = fn()
    return (time.perf_counter_ns() - t0) * 1e-9, out


def repeat(step, reps, warmup):
    """`warmup` untimed calls of step(), then a list of `reps` results."""
    for _ in range(warmup):
        step()
    return [step() for _ in range(reps)]


def samples_s(fn, reps, warmup):
    """fn()'s wall time per call, `reps` samples after `warmup` untimed calls."""
    return repeat(lambda: span_s(fn)[0], reps, warmup)


def per_call_s(fn, iters, warmup, sync, start=None):
    """The time per call of `iters` back-to-back calls of fn(), after `warmup`
    untimed ones; sync() waits for the device (a no-op on a CPU), start()
    (untimed, e.g. a barrier) lines the ranks up before the timed calls."""
    for _ in range(warmup):
        fn()
    sync()
    if start is not None:
        start()

    def batch():
        for _ in range(iters):
            fn()
        sync()

    return span_s(batch)[0] / iters


class Marks:
    """Timestamps within a step: mark() after each phase; spans_s() between
    consecutive marks; total_s() from the first to the last."""

    def __init__(self):
        self.t = [now_s()]

    def mark(self):
        self.t.append(now_s())

    def spans_s(self):
        return [b - a for a, b in zip(self.t, self.t[1:])]

    def total_s(self):
        return self.t[-1] - self.t[0]
