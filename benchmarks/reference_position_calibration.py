"""Calibration of ``calculate_position_bias`` (the reference design's helper).

Draws councils from the independent test generator (``tests/generators``: integer scores
clipped to 1-10, per-reviewer random display orders, optional missing cells and reviews)
and counts how often the helper's ``detected`` fires:

1. null councils (no slot effect) at several sizes: the false-positive rate, target
   <= 5% + Monte Carlo error; also how often the result is ``(None, None)``;
2. a primacy effect (+1 point at slot A, -0.5 at the last slot, every reviewer): power.

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
from llm_council.bias_audit import calculate_position_bias  # noqa: E402


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    args = parser.parse_args()
    runs = args.runs
    print("| null council | flag rate [95% MC] | (None, None) | seconds |")
    print("|---|---|---|---|")
    for label, spec, n_sessions, with_id in NULL_SCENARIOS:
        started = time.perf_counter()
        fired = undefined = 0
        for seed in range(runs):
            variance, detected = calculate_position_bias(
                session_data(spec, n_sessions, seed, with_session_id=with_id)
            )
            fired += bool(detected)
            undefined += variance is None
        rate = fired / runs
        error = 1.96 * math.sqrt(max(rate * (1 - rate), 1e-12) / runs)
        elapsed = time.perf_counter() - started
        print(f"| {label} | {rate:.2%} ± {error:.2%} | {undefined} | {elapsed:.0f} |", flush=True)
    print()
    print("| primacy +1 / -0.5, 4 members | power |")
    print("|---|---|")
    primacy = CouncilSpec(n_members=4, slot_effects=[[1.0, 0.0, 0.0, -0.5]] * 4)
    power_runs = max(runs // 10, 50)
    for n_sessions in (3, 6, 12):
        fired = sum(
            bool(calculate_position_bias(session_data(primacy, n_sessions, seed))[1])
            for seed in range(power_runs)
        )
        print(f"| {n_sessions} sessions | {fired / power_runs:.1%} |", flush=True)


if __name__ == "__main__":
    main()
