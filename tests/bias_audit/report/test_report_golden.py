"""The sped-up report computes exactly what the report computed before (issue 12).

The golden files were written by the code before the report's speed-ups
(``report_golden_cases.py``); every number must agree to 1e-9 and everything else
(labels, flags, names, notes, counts, None-ness) must be equal.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bias_audit.report.report_golden_cases import (
    CASES,
    GOLDEN_DIR,
    report_case,
    without_added_defaults,
)
from golden_compare import golden_differences

TOLERANCE = 1e-9


@pytest.mark.parametrize(("name", "write"), CASES, ids=[name for name, _ in CASES])
def test_the_report_equals_the_saved_report_to_1e_9(name: str, write: Any, tmp_path: Path) -> None:
    saved = json.loads((GOLDEN_DIR / f"{name}.json").read_text(encoding="utf-8"))
    rebuilt = without_added_defaults(json.loads(json.dumps(report_case(name, write, tmp_path))))
    problems = golden_differences(saved, rebuilt, name, TOLERANCE)
    assert not problems, "\n".join(problems[:20])


def test_the_golden_reports_exercise_every_family() -> None:
    """A comparison of empty sections proves nothing: each family has numbers somewhere."""
    saved = [json.loads(path.read_text("utf-8")) for path in GOLDEN_DIR.glob("*.json")]
    assert len(saved) == len(CASES)
    families = [report["families"] for report in saved]
    for family in ("favouritism", "style_mimicry", "amplification", "drift"):
        assert any(f[family] is not None for f in families), family
    for family in ("anchoring", "reasoning", "parse_outcomes"):
        assert any(f[family] for f in families), family
    assert all(report["profiles"] for report in saved)
    assert any(report["joint"] is not None for report in saved)
    assert any(report["leaderboard"] is not None for report in saved)
    labels = {p["leniency_label"] for report in saved for p in report["profiles"]}
    assert {"harsh", "generous", "neutral"} <= labels
