"""Calibration of ``calculate_position_bias`` (the reference design's helper).

Draws councils from the independent test generator (``tests/generators``: integer scores
clipped to 1-10, per-reviewer random display orders, optional missing cells and reviews)
and counts how often the helper's ``detected`` fires:

1. null councils (no slot effect) at several sizes: the false-positive rate, target
   <= 5% + Monte Carlo error; also how often the result is ``(None, None)``;
2. a primacy effect (+2 points at slot A, -1 at the last slot, every reviewer; a
   slot-effect variance of 1.19 points^2, above the default 0.5 floor): power.

Each rate is given with the default thresholds and with ``position_variance_threshold``
0 (the randomization test's p < significance_level alone: its level).

Printed as markdown rows.

    .venv/bin/python benchmarks/reference_position_calibration.py [--runs 2000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402
from llm_council.bias_audit import AuditThresholds, calculate_position_bias  # noqa: E402


def session_data(
    spec: CouncilSpec, n_sessions: int, seed: int, *, with_session_id: bool = True
) -> list[dict[str, Any]]:
    """The generator's sessions as the reference's ``[{"display_order", "scores"}]``."""
    entries: list[dict[str, Any]] = []
    for session in generate_sessions(spec, n_sessions, seed):
        for reviewer, scores in session.stage2_scores.items():
            shown = session.position_mapping[reviewer]
            entry: dict[str, Any] = {
                "reviewer": reviewer,
                "display_order": sorted(shown, key=shown.__getitem__),
                "scores": scores,
            }
            if with_session_id:
                entry["session_id"] = session.session_id
            entries.append(entry)
    return entries


NULL_SCENARIOS: list[tuple[str, CouncilSpec, int, bool]] = [
    (
        "3 members, 5 sessions, 20% missing reviews",
        CouncilSpec(n_members=3, missing_review_rate=0.2),
        5,
        True,
    ),
    (
        "4 members, 3 sessions, 5% missing scores",
        CouncilSpec(n_members=4, missing_score_rate=0.05),
        3,
        True,
    ),
    ("5 members, 1 session", CouncilSpec(n_members=5), 1, True),
    ("5 members, 4 sessions, no session_id", CouncilSpec(n_members=5), 4, False),
    ("7 members, 2 sessions", CouncilSpec(n_members=7), 2, True),
]


def _rate(count: int, runs: int) -> str:
    rate = count / runs
    error = 1.96 * math.sqrt(max(rate * (1 - rate), 1e-12) / runs)
    return f"{rate:.2%} ± {error:.2%}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    runs = args.runs
    p_only = AuditThresholds(position_variance_threshold=0.0)
    print("| null council | flag rate [95% MC] | p < 0.05 alone | (None, None) | seconds |")
    print("|---|---|---|---|---|")
    for label, spec, n_sessions, with_id in NULL_SCENARIOS:
        started = time.perf_counter()
        fired = fired_p = undefined = 0
        for seed in range(runs):
            data = session_data(spec, n_sessions, seed, with_session_id=with_id)
            variance, detected = calculate_position_bias(data)
            fired += bool(detected)
            fired_p += bool(calculate_position_bias(data, thresholds=p_only)[1])
            undefined += variance is None
        elapsed = time.perf_counter() - started
        print(
            f"| {label} | {_rate(fired, runs)} | {_rate(fired_p, runs)} | {undefined} "
            f"| {elapsed:.0f} |",
            flush=True,
        )
    print()
    print("| primacy +2 / -1, 4 members | power |")
    print("|---|---|")
    primacy = CouncilSpec(n_members=4, slot_effects=[[2.0, 0.0, 0.0, -1.0]] * 4)
    power_runs = max(runs // 5, 50)
    for n_sessions in (1, 3, 6):
        fired = sum(
            bool(calculate_position_bias(session_data(primacy, n_sessions, seed))[1])
            for seed in range(power_runs)
        )
        print(f"| {n_sessions} session(s) | {_rate(fired, power_runs)} |", flush=True)


if __name__ == "__main__":
    main()
