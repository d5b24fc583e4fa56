"""Coverage and width of the leaderboard's intervals: the multinomial session bootstrap
(before ADR 0074) against the per-session Poisson bootstrap (after), on Bradley-Terry data
with known strengths.

    .venv/bin/python benchmarks/leaderboard_bootstrap_coverage.py --stores 200

Each store has ``S`` sessions; in a session every reviewer (one per model) ranks the other
``K - 1`` models by Bradley-Terry perception (a Gumbel draw added to each true log strength,
which gives Plackett-Luce rankings: Luce 1959), so a session's comparisons are correlated
as in a council and the session is the resampled unit. The 95% percentile interval of each
model's centred strength is checked against the truth; the table gives the share of
intervals covering it (over stores and models) and the median width (a replicate in which
a model never wins gives an infinite bound), both bootstraps on the same stores.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from llm_council.stats.inference.poisson_weights import unit_keys
from llm_council.stats.ranking.bradley_terry import bradley_terry_session_bootstrap
from llm_council.stats.ranking.bradley_terry_poisson import (
    bradley_terry_from_tables,
    poisson_resampled_tables,
)


def session_wins(truth: np.ndarray, n_sessions: int, rng: np.random.Generator) -> np.ndarray:
    """(S, K, K) win counts: each reviewer ranks the K-1 others by Plackett-Luce."""
    k = truth.size
    wins = np.zeros((n_sessions, k, k))
    for reviewer in range(k):
        others = np.array([m for m in range(k) if m != reviewer])
        perceived = truth[others] + rng.gumbel(size=(n_sessions, others.size))
        for a in range(others.size):
            for b in range(a + 1, others.size):
                a_won = perceived[:, a] > perceived[:, b]
                wins[:, others[a], others[b]] += a_won
                wins[:, others[b], others[a]] += ~a_won
    return wins


def cell(k: int, n_sessions: int, n_stores: int, n_resamples: int) -> dict[str, float]:
    rng = np.random.default_rng(1000 * k + n_sessions)
    truth = np.linspace(0.6, -0.6, k)
    truth -= truth.mean()
    covered = {"multinomial": 0, "poisson": 0}
    widths: dict[str, list[float]] = {"multinomial": [], "poisson": []}
    for store in range(n_stores):
        wins = session_wins(truth, n_sessions, rng)
        fits = {
            "multinomial": bradley_terry_session_bootstrap(
                wins, n_resamples=n_resamples, rng=np.random.default_rng(store)
            ),
            "poisson": bradley_terry_from_tables(
                wins.sum(axis=0),
                poisson_resampled_tables(
                    wins, unit_keys([f"{store}-{s}" for s in range(n_sessions)], 0), n_resamples
                ),
            ),
        }
        for name, fit in fits.items():
            covered[name] += int(np.sum((fit.ci_low <= truth) & (truth <= fit.ci_high)))
            widths[name] += (fit.ci_high - fit.ci_low).tolist()
    n = n_stores * k
    return {
        "multinomial_coverage": covered["multinomial"] / n,
        "poisson_coverage": covered["poisson"] / n,
        # the median: a replicate where a model never wins gives an infinite bound
        "multinomial_width": float(np.median(widths["multinomial"])),
        "poisson_width": float(np.median(widths["poisson"])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=200)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--members", default="3,5,9")
    parser.add_argument("--sessions", default="20,100")
    args = parser.parse_args()
    print(f"{args.stores} stores per row, {args.resamples} resamples, 95% intervals")
    print(
        "| K | sessions | coverage multinomial | coverage Poisson | median width multinomial | "
        "median width Poisson |"
    )
    print("|---|---|---|---|---|---|")
    for k in (int(v) for v in args.members.split(",")):
        for n_sessions in (int(v) for v in args.sessions.split(",")):
            started = time.process_time()
            row = cell(k, n_sessions, args.stores, args.resamples)
            print(
                f"| {k} | {n_sessions} | {row['multinomial_coverage']:.3f} | "
                f"{row['poisson_coverage']:.3f} | {row['multinomial_width']:.3f} | "
                f"{row['poisson_width']:.3f} |  ({time.process_time() - started:.0f} s)",
                flush=True,
            )


if __name__ == "__main__":
    main()
