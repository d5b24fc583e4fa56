"""Coverage and width of the reliability section's alpha intervals: the multinomial session
bootstrap (before ADR 0089) against the per-session Poisson bootstrap from merged pair-count
sums (after), on council ratings whose population alpha is known.

    nice .venv/bin/python benchmarks/reliability_bootstrap_coverage.py --stores 200

A session has a question effect ``q ~ N(0, 1)`` shared by its K answers (so a session's
units are correlated and the session is the resampled unit); answer m's quality is
``q + N(0, 1)``; every other member scores it ``round(5.5 + 1.2 quality + leniency_r +
N(0, 1.5))`` clipped to 1..10 (leniencies spread over -1..1), a score missing with
probability 0.1. The population alpha is that of one store of 40,000 sessions (alpha is a
ratio of sums over units, so a large store's alpha converges to it). Each row: the share of
95% percentile intervals covering it over ``--stores`` stores, and their median width, both
bootstraps on the same stores with 200 replicates (the report's default).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from llm_council.stats.inference.poisson_weights import poisson_weights, unit_keys
from llm_council.stats.reliability.alpha_pair_sums import (
    alpha_from_pair_sums,
    group_pair_counts,
    weighted_pair_sums,
)
from llm_council.stats.reliability.clustered_alpha import clustered_alpha
from llm_council.stats.reliability.krippendorff_alpha import Metric


def council_ratings(k: int, n_sessions: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Long-format ratings (unit, rater, value) and each unit's session."""
    leniency = np.linspace(-1.0, 1.0, k)
    question = rng.normal(size=(n_sessions, 1))
    quality = question + rng.normal(size=(n_sessions, k))
    raw = 5.5 + 1.2 * quality[:, None, :] + leniency[None, :, None]
    raw = raw + rng.normal(scale=1.5, size=(n_sessions, k, k))  # [session, rater, answer]
    score = np.clip(np.round(raw), 1, 10)
    kept = (rng.random(score.shape) >= 0.1) & ~np.eye(k, dtype=bool)[None]
    session, rater, answer = np.nonzero(kept)
    return {
        "unit": session * k + answer,
        "rater": rater,
        "value": score[session, rater, answer],
        "group_of_unit": np.repeat(np.arange(n_sessions), k),
    }


def poisson_alpha(ratings: dict[str, np.ndarray], metric: Metric, resamples: int, store: int):
    """The section's interval: Poisson(1) weights per session id, from pair-count sums."""
    values, index = np.unique(ratings["value"], return_inverse=True)
    pairs = group_pair_counts(ratings["unit"], index, ratings["group_of_unit"], values.size)
    divisors = np.unique(pairs.divisor)
    n_groups = int(ratings["group_of_unit"].max()) + 1
    keys = unit_keys([f"{store}-{s:06d}" for s in range(n_groups)], 0)
    weights = poisson_weights(keys, np.arange(resamples))
    cells = values.size * (values.size + 1) // 2
    whole = weighted_pair_sums([pairs], weights, divisors, cells)[0]
    removed = np.zeros((0, *whole.shape))
    return alpha_from_pair_sums(
        values, divisors, whole, removed, metric, n_units=0, n_groups=n_groups, n_ratings=0
    ).alpha


def cell(k: int, n_sessions: int, n_stores: int, resamples: int, metric: Metric) -> dict:
    truth_data = council_ratings(k, 40_000, np.random.default_rng(k))
    truth = poisson_alpha(truth_data, metric, 0, 0).estimate
    rng = np.random.default_rng(1000 * k + n_sessions)
    covered = {"multinomial": 0, "poisson": 0}
    widths: dict[str, list[float]] = {"multinomial": [], "poisson": []}
    for store in range(n_stores):
        ratings = council_ratings(k, n_sessions, rng)
        fits = {
            "multinomial": clustered_alpha(
                ratings["unit"],
                ratings["rater"],
                ratings["value"],
                ratings["group_of_unit"],
                metric,
                resamples=resamples,
                seed=store,
            ).alpha,
            "poisson": poisson_alpha(ratings, metric, resamples, store),
        }
        for name, fit in fits.items():
            covered[name] += int(fit.ci_low <= truth <= fit.ci_high)
            widths[name].append(fit.ci_high - fit.ci_low)
    return {
        "truth": truth,
        **{f"{name}_coverage": covered[name] / n_stores for name in covered},
        **{f"{name}_width": float(np.median(widths[name])) for name in widths},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--members", default="3,5,9")
    parser.add_argument("--sessions", default="20,100")
    parser.add_argument("--metrics", default="interval,ordinal")
    args = parser.parse_args()
    print(f"{args.stores} stores per row, {args.resamples} resamples, 95% intervals")
    print(
        "| metric | K | sessions | population alpha | coverage multinomial | coverage Poisson "
        "| median width multinomial | median width Poisson |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for metric in args.metrics.split(","):
        for k in (int(v) for v in args.members.split(",")):
            for n_sessions in (int(v) for v in args.sessions.split(",")):
                started = time.process_time()
                row = cell(k, n_sessions, args.stores, args.resamples, metric)  # type: ignore[arg-type]
                print(
                    f"| {metric} | {k} | {n_sessions} | {row['truth']:.3f} | "
                    f"{row['multinomial_coverage']:.3f} | {row['poisson_coverage']:.3f} | "
                    f"{row['multinomial_width']:.3f} | {row['poisson_width']:.3f} |"
                    f"  ({time.process_time() - started:.0f} s)",
                    flush=True,
                )


if __name__ == "__main__":
    main()
