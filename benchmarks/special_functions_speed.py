"""Benchmark: the numpy special functions against scipy.special, per call (ADR 0063).

The session path calls them on arrays of a few to a few hundred entries; the report's
callers (``stats/numerics/distribution_functions.py``: per-slot and per-reviewer p-values) on arrays
of at most thousands. Target: a 10^5-entry call within a few milliseconds, so no caller
needs to keep scipy for speed. Each function at 10, 10^3 and 10^5 entries of typical
arguments (t statistics and p-values of a t with 10 df, F with 3 and 50, chi-squared with
5, quantiles at p in (0, 1)); the median of ``--repeats`` calls each.

    .venv/bin/python benchmarks/special_functions_speed.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

import numpy as np
from scipy import special

from llm_council.stats.numerics import special_functions as ours


def median_ms(call: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``call`` in milliseconds, after one warm-up call."""
    call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


Call = Callable[[], object]


def calls(
    t: np.ndarray, f: np.ndarray, chi: np.ndarray, p: np.ndarray, x: np.ndarray
) -> list[tuple[str, Call, Call]]:
    """Each function's numpy and scipy call on the same arguments."""
    return [
        ("stdtr(10, t)", lambda: ours.stdtr(10, t), lambda: special.stdtr(10, t)),
        ("fdtrc(3, 50, f)", lambda: ours.fdtrc(3, 50, f), lambda: special.fdtrc(3, 50, f)),
        ("chdtrc(5, x)", lambda: ours.chdtrc(5, chi), lambda: special.chdtrc(5, chi)),
        ("stdtrit(10, p)", lambda: ours.stdtrit(10, p), lambda: special.stdtrit(10, p)),
        ("ndtri(p)", lambda: ours.ndtri(p), lambda: special.ndtri(p)),
        ("log_ndtr(t)", lambda: ours.log_ndtr(t), lambda: special.log_ndtr(t)),
        ("digamma(x)", lambda: ours.digamma(x), lambda: special.digamma(x)),
        ("polygamma(1, x)", lambda: ours.polygamma(1, x), lambda: special.polygamma(1, x)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per cell")
    repeats = parser.parse_args().repeats
    rng = np.random.default_rng(35)
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs; ms per call")
    print(f"{'function':24s} {'entries':>8s} {'numpy':>9s} {'scipy':>9s} {'ratio':>7s}")
    for size in (10, 1_000, 100_000):
        t = rng.standard_t(10, size)
        f = rng.f(3, 50, size)
        chi = rng.chisquare(5, size)
        p = rng.uniform(1e-6, 1 - 1e-6, size)
        x = rng.uniform(0.05, 50.0, size)
        for name, numpy_call, scipy_call in calls(t, f, chi, p, x):
            numpy_ms = median_ms(numpy_call, repeats)
            scipy_ms = median_ms(scipy_call, repeats)
            print(
                f"{name:24s} {size:8d} {numpy_ms:9.3f} {scipy_ms:9.3f} {numpy_ms / scipy_ms:6.1f}x"
            )


if __name__ == "__main__":
    main()
