"""Would a within-session self-preference test find a self-preferring judge more often? (ADR 0090)

    PYTHONPATH=src nice .venv/bin/python benchmarks/self_preference_alternatives.py \\
        --power --runs 200 --seed 97000000
    PYTHONPATH=src nice .venv/bin/python benchmarks/self_preference_alternatives.py \\
        --null --runs 1000 --members 3 --sessions 10 --seed 98100000

Three one-sided tests of "reviewer r gives its own answer no bonus", each on the same
stores of the independent generator (``tests/generators/independent_council.py``: integer
1-10 scores, 5% missing cells, each reviewer its own order). ``c`` is the ``scored``
table's paired deviation: r's score of an answer minus the other reviewers' mean on it
(the author's self-review never in that mean).

- **joint t** (the report's test today): the joint model's self-review term over its
  cluster-robust SE, t on (sessions - 1) df, one-sided (``analyses/self_preference.py``).
- **randomization z**: relabel "own" within each session (the design ADR 0082 names).
  ``T = sum_s (c_own,s - mean_j c_s,j)`` has randomization mean 0 and variance
  ``V = sum_s mean_j (c_s,j - mean c_s)^2``; p = 1 - Phi(T / sqrt(V)).
- **placebo t**: ``d_s = c_own,s - mean of r's other contrasts in s``. Under exchangeable
  contrasts within a session (r's noise the same on every answer it reads; any
  within-session correlation, session shifts and rank constraints included),
  ``Var(d_s) = s_w^2 m_s / (m_s - 1)``, with ``s_w^2`` the pooled within-session variance
  of the other contrasts (df ``sum (m_s - 2)``), so ``t = sum d_s / sqrt(s_w^2 sum m_s /
  (m_s - 1))`` on those df.

``--power``: one reviewer with a +1.0 bonus on its own answer (5 members, 30 sessions);
counts of stores whose p for that reviewer is at most each level, among them 0.0029, the
first-step level a self-preference hypothesis gets in the report at 5 members (ADR 0076:
0.05 x 7 / 23.75 / 5). ``--null``: honest councils; the share of (store, reviewer) tests
rejecting at each level. A statistical exploration: nothing here enters a report.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from generators.independent_council import CouncilSpec, generate_sessions, write_store  # noqa: E402
from llm_council.bias_audit.report.build import build_report  # noqa: E402
from llm_council.bias_audit.report.hypotheses import upper_one_sided_p  # noqa: E402
from llm_council.bias_audit.report.load.loading import load_store  # noqa: E402
from llm_council.bias_audit.report.load.tables import create_analysis_tables  # noqa: E402

LEVELS = (0.0029, 0.0055, 0.011, 0.025, 0.05)

#: per (reviewer, session): the number of contrasts m, the own one, the others' mean and
#: centred sum of squares, and the session's mean and variance over all m (randomization)
_PER_SESSION = """
WITH c AS (SELECT reviewer, session, is_self, deviation FROM scored
           WHERE deviation IS NOT NULL),
s AS (SELECT reviewer, session, count(*) AS m,
             sum(deviation) FILTER (WHERE is_self) AS own,
             count(*) FILTER (WHERE is_self) AS n_own,
             avg(deviation) FILTER (WHERE NOT is_self) AS other_mean,
             coalesce(var_pop(deviation) FILTER (WHERE NOT is_self)
                      * count(*) FILTER (WHERE NOT is_self), 0) AS other_ss,
             avg(deviation) AS all_mean, var_pop(deviation) AS all_var
      FROM c GROUP BY reviewer, session)
SELECT reviewer, count(*), sum(own - other_mean), sum(other_ss), sum(m - 2),
       sum(m / (m - 1.0)), sum(own - all_mean), sum(all_var)
FROM s WHERE n_own = 1 AND m >= 2 GROUP BY reviewer ORDER BY reviewer
"""


def within_session_p_values(path: Path) -> dict[str, tuple[float, float]]:
    """Per self-reviewing reviewer: (randomization z p, placebo t p), both one-sided."""
    loaded = load_store(path)
    create_analysis_tables(loaded.connection)
    rows = loaded.connection.execute(_PER_SESSION).fetchall()
    loaded.connection.close()
    found = {}
    for reviewer, _, d_sum, other_ss, df, inflation, t_sum, variance in rows:
        z_p = float(stats.norm.sf(t_sum / math.sqrt(variance))) if variance > 0 else math.nan
        t_p = math.nan
        if df >= 1 and other_ss > 0:
            t_p = float(stats.t.sf(d_sum / math.sqrt(other_ss / df * inflation), df))
        found[str(reviewer)] = (z_p, t_p)
    return found


def joint_t_p_values(path: Path) -> dict[str, float]:
    """The report's one-sided self-preference p per reviewer."""
    report = build_report(path, n_resamples=20, threads=1, session_summaries=False)
    return {
        item.reviewer: upper_one_sided_p(item.adjusted.p_value, item.adjusted.estimate)
        for item in report.self_preference
    }


def _stores(folder: Path, spec: CouncilSpec, sessions: int, runs: int, seed: int):
    for run in range(runs):
        path = folder / f"store-{run}.jsonl"
        write_store(path, generate_sessions(spec, sessions, seed=seed + run))
        yield path


def power(runs: int, seed: int) -> None:
    spec = CouncilSpec(n_members=5, missing_score_rate=0.05, self_bias=[1.0, 0, 0, 0, 0])
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for path in _stores(Path(folder), spec, 30, runs, seed):
            z_p, t_p = within_session_p_values(path)["judge-0"]
            rows.append((joint_t_p_values(path)["judge-0"], z_p, t_p))
    p = np.array(rows)
    print("| level | joint t (today) | randomization z | placebo t |\n|---|---|---|---|")
    for level in LEVELS:
        counts = [int((p[:, k] <= level).sum()) for k in range(3)]
        print(f"| {level} | " + " | ".join(f"{c}/{runs}" for c in counts) + " |")


def null(runs: int, seed: int, members: int, sessions: int) -> None:
    spec = CouncilSpec(n_members=members, missing_score_rate=0.05)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for path in _stores(Path(folder), spec, sessions, runs, seed):
            rows += list(within_session_p_values(path).values())
    p = np.array(rows)
    print(f"honest, {members} members, {sessions} sessions: {len(p)} tests")
    print("| level | randomization z | placebo t |\n|---|---|---|")
    for level in LEVELS:
        print(f"| {level} | {np.mean(p[:, 0] <= level):.4f} | {np.mean(p[:, 1] <= level):.4f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--power", action="store_true")
    parser.add_argument("--null", action="store_true")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=97_000_000)
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=10)
    args = parser.parse_args()
    if args.power:
        power(args.runs, args.seed)
    if args.null:
        null(args.runs, args.seed, args.members, args.sessions)


if __name__ == "__main__":
    main()
