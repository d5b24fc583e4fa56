"""Seeded stores whose whole cross-session reports were saved before the report was sped up.

``tests/data/report_golden/<case>.json`` holds ``build_report(...).to_dict()`` for each
case below (without the time it was generated and the store's temporary path), as
computed by the code before the issue-12 speed-ups of the report. ``test_report_golden.py``
rebuilds them and requires every number to agree to 1e-9 and every flag, label, name and
note to be equal. The cases cover both generators (the simulator and the independent
one), 3, 5 and 9 members, missing scores and reviews, recusal, similarity, rationales and
refusals. Regenerate only when a statistic is *meant* to change:
``.venv/bin/python tests/bias_audit/report/report_golden_cases.py``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

GOLDEN_DIR = Path(__file__).resolve().parents[2] / "data" / "report_golden"


def _simulated(path: Path, names: list[str] | None, sessions: int, seed: int, **kw: Any) -> None:
    from llm_council.simulation.simulated_records import (
        load_simulated_profiles,
        write_record_store,
    )

    write_record_store(path, load_simulated_profiles(names), sessions, seed=seed, **kw)


def _independent(path: Path, sessions: int, seed: int, **spec: Any) -> None:
    from generators.independent_council import CouncilSpec, generate_sessions, write_store

    write_store(path, generate_sessions(CouncilSpec(**spec), sessions, seed))


def _reasoning(path: Path, sessions: int, seed: int) -> None:
    from generators.independent_council import CouncilSpec
    from generators.reasoning_council import ReasoningSpec, write_reasoning_store

    spec = ReasoningSpec(
        council=CouncilSpec(n_members=5, missing_score_rate=0.05),
        reasoning_bias=[0.5, 0.0, 0.0, 0.0, 0.0],
        mismatch_probability=[0.0, 0.2, 0.0, 0.0, 0.0],
        abstention_probability=[0.0, 0.0, 0.1, 0.0, 0.0],
    )
    write_reasoning_store(path, spec, sessions, seed)


#: (case name, writer of the store at the given path)
CASES: tuple[tuple[str, Callable[[Path], None]], ...] = (
    ("simulated-default-5", lambda p: _simulated(p, None, 240, 1, missing_score_rate=0.05)),
    (
        "simulated-mimic-recused-6",
        lambda p: _simulated(
            p,
            ["balanced", "harsh", "verbose", "primacy", "narcissist", "mimic"],
            150,
            2,
            self_review=False,
        ),
    ),
    ("simulated-null-3", lambda p: _simulated(p, ["unbiased"] * 3, 120, 3)),
    (
        "independent-3-missing",
        lambda p: _independent(
            p, 80, 4, n_members=3, missing_score_rate=0.1, quality_length_correlation=0.4
        ),
    ),
    (
        "independent-9-biased",
        lambda p: _independent(
            p,
            60,
            5,
            n_members=9,
            leniency=[-2.0, 0, 0, 0, 0, 0, 0, 0, 1.0],
            self_bias=[0, 1.5, 0, 0, 0, 0, 0, 0, 0],
            slot_effects=[[1.0] + [0.0] * 8] * 9,
            verbosity=[0, 0, 0.8, 0, 0, 0, 0, 0, 0],
            missing_review_rate=0.2,
            quality_length_correlation=0.5,
        ),
    ),
    ("reasoning-5", lambda p: _reasoning(p, 120, 6)),
)


#: fields ADR 0040 added, with the value they hold wherever the design is not at issue
#: (no pair always at one slot, no singular Wald covariance). The golden reports predate
#: them; :func:`without_added_defaults` removes them where they hold that value, so any
#: other value is a difference.
ADDED_FIELDS: dict[str, Any] = {
    "confounded_with_slot": False,
    "fixed_slot": None,
    "n_unconverged_resamples": 0,
    "test_method": "wald",
}


def without_added_defaults(value: Any) -> Any:
    """A report (as JSON) without the :data:`ADDED_FIELDS` that hold their default."""
    if isinstance(value, dict):
        return {
            key: without_added_defaults(item)
            for key, item in value.items()
            if not (key in ADDED_FIELDS and item == ADDED_FIELDS[key])
        }
    if isinstance(value, list):
        return [without_added_defaults(item) for item in value]
    return value


def report_case(name: str, write: Callable[[Path], None], directory: Path) -> dict[str, Any]:
    """The report of one case as JSON, without its time and temporary path."""
    from llm_council.bias_audit.report import build_report

    path = directory / f"{name}.jsonl"
    write(path)
    report = build_report(path, n_resamples=50, seed=7).to_dict()
    report.pop("generated_at")
    report.pop("store")
    # ADR 0062's sections postdate the golden files; tested in report/test_reliability.py
    # and report/test_fingerprint_segments.py (no golden store carries a fingerprint)
    report.pop("reliability", None)
    report.pop("fingerprints", None)
    # the anytime monitor's section (ADR 0053) is checked by its own tests
    # (tests/bias_audit/report/analyses/test_monitor_section.py) against the monitor of the same
    # store: kept out of the saved reports, so a change of the monitor's statistic does not
    # rewrite every one of them
    report.pop("monitor", None)
    return report


def main() -> None:
    import tempfile

    GOLDEN_DIR.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as directory:
        for name, write in CASES:
            report = without_added_defaults(report_case(name, write, Path(directory)))
            target = GOLDEN_DIR / f"{name}.json"
            target.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n", "utf-8")
            print(f"wrote {target}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    main()
