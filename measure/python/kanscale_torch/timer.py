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
- Marks: timestamps within one step (its phases);
- median_ci(values), rel_halfwidth(values): the median's distribution-free
  95% interval from order statistics, and its half-width over the median;
- until_known(sample, target, cap, warmup): samples until that half-width is
  at most `target` (or `cap` samples): the calibration's stopping rule
  (model/statistics.hpp's median_ci is the C++ side's).
"""

import math
import time

# The fewest samples before a stopping rule looks (a 95% interval of the
# median needs 6: with 5, even the smallest and largest cover only 93.75%).
MIN_SAMPLES = 6


def median_ci(values, level=0.95):
    """(lo, hi): the j-th smallest and j-th largest of the n values, j the
    largest with P(Binomial(n, 1/2) < j) <= (1 - level) / 2, so that the
    median lies between them with probability at least `level` whatever the
    distribution; None when no j qualifies (too few values)."""
    v = sorted(values)
    n = len(v)
    alpha = (1.0 - level) / 2.0
    cdf, j = 0.0, 0  # cdf: P(Binomial(n, 1/2) <= j - 1)
    while j < n // 2:
        nxt = cdf + math.comb(n, j) / 2.0 ** n
        if nxt > alpha:
            break
        cdf, j = nxt, j + 1
    if j == 0:
        return None
    return v[j - 1], v[n - j]


def rel_halfwidth(values, level=0.95):
    """Half the width of median_ci over the median (inf when it has none)."""
    ci = median_ci(values, level)
    if ci is None:
        return math.inf
    v = sorted(values)
    n = len(v)
    med = v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
    return (ci[1] - ci[0]) / 2.0 / med if med > 0 else math.inf


def until_known(sample, target, cap, warmup=0, series=lambda out: [out]):
    """`warmup` untimed calls of sample(), then its results until every list
    of times series(results) gives (default: the results themselves) has
    rel_halfwidth <= target, or `cap` of them (target 0: exactly cap)."""
    for _ in range(warmup):
        sample()
    out = []
    while len(out) < cap:
        out.append(sample())
        if target > 0 and len(out) >= MIN_SAMPLES and all(rel_halfwidth(t) <= target for t in series(out)):
            break
    return out


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
