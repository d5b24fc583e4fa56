"""How often the anchoring estimator flags a judge that has no anchoring, but drifts or
prefers itself, and how often it flags one that does anchor (see docs/bias-report.md).

Five judges with noise sd 1, 300 sessions over five weeks, ``--stores`` stores per
scenario: none (no bias at all), drift (judge j0 drifts 0.4 points a week), self (j0 gives
its own answer +1.5), anchored (j0 is pulled toward its earlier scores with weight
``--pull``, the power check). Prints, per scenario, the stores with any anchoring flag and
those flagging j0; then the per-reviewer result on the real pairwise PRD Vicuna80 fixture
(two answers per review, where anchoring is not identified).

    .venv/bin/python benchmarks/anchoring_confounds.py [--stores 20] [--pull 0.3]
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from llm_council.bias_audit.report import build_report
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import write_record_store

PRD_FIXTURE = (
    Path(__file__).parents[1] / "tests" / "data" / "prd_vicuna80" / "prd_sessions.jsonl.gz"
)


def _scenarios(pull: float) -> dict[str, dict[str, Any]]:
    return {
        "none": {},
        "drift": {"leniency_drift_per_week": 0.4},
        "self": {"self_preference": 1.5},
        "anchored": {"anchoring": pull},
    }


def _prd(scratch: Path) -> None:
    store = scratch / "prd.jsonl"
    with gzip.open(PRD_FIXTURE, "rb") as source, store.open("wb") as target:
        shutil.copyfileobj(source, target)
    families = build_report(store, n_resamples=10).families
    assert families is not None
    for item in families.anchoring:
        state = "identified" if item.identified else "not identified"
        print(
            f"prd: {item.reviewer}: conditional r {item.conditional.estimate:.3f} "
            f"({state}, detected={item.detected}); design r "
            f"{item.design_correlation.estimate:.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stores", type=int, default=20)
    parser.add_argument("--pull", type=float, default=0.3)
    args = parser.parse_args()
    for scenario, bias in _scenarios(args.pull).items():
        members = [("j0", SimulatedProfile(noise_sd=1.0, **bias))] + [
            (f"j{i}", SimulatedProfile(noise_sd=1.0)) for i in range(1, 5)
        ]
        any_flag = j0_flag = 0
        with tempfile.TemporaryDirectory() as scratch:
            for seed in range(args.stores):
                path = Path(scratch) / f"{seed}.jsonl"
                write_record_store(
                    path,
                    members,
                    300,
                    seed=seed,
                    end_time=datetime(2026, 6, 1, tzinfo=UTC),
                    session_spacing=timedelta(weeks=5) / 300,
                )
                families = build_report(path, n_resamples=10).families
                assert families is not None
                flagged = [item.reviewer for item in families.anchoring if item.detected]
                any_flag += bool(flagged)
                j0_flag += "j0" in flagged
        print(
            f"{scenario}: any anchoring flag in {any_flag}/{args.stores} stores; "
            f"j0 flagged in {j0_flag}/{args.stores}",
            flush=True,
        )
    with tempfile.TemporaryDirectory() as scratch:
        _prd(Path(scratch))


if __name__ == "__main__":
    main()
