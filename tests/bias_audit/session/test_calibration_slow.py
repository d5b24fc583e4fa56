"""A smaller run of benchmarks/audit_calibration.py that asserts the FPR bounds (slow).

.venv/bin/pytest tests/bias_audit -m slow
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCHMARK = Path(__file__).resolve().parents[3] / "benchmarks" / "audit_calibration.py"


def load_benchmark() -> ModuleType:
    spec = importlib.util.spec_from_file_location("audit_calibration", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_null_council_flags_stay_within_their_false_positive_rates() -> None:
    calibration = load_benchmark()
    n_sessions = 500
    rates = asyncio.run(calibration.run_scenario(calibration.NULL_SCENARIO, n_sessions, seed=11))
    checks = calibration.null_checks(rates, n_sessions)
    assert all(checks.values()), (rates, checks)
    ceiling = 0.05 + calibration.monte_carlo_margin(0.05, n_sessions)
    for flag in calibration.CALIBRATED_FLAGS:
        assert rates[flag] <= ceiling


@pytest.mark.slow
def test_injected_harsh_reviewer_is_found() -> None:
    calibration = load_benchmark()
    harsh = next(s for s in calibration.BIASED_SCENARIOS if s.name == "harsh")
    rates = asyncio.run(calibration.run_scenario(harsh, 300, seed=12, n_members=9))
    # 9 members, per-reviewer noise (the default): m0 named in 79% of 300 sessions in
    # benchmarks/audit_null_by_size.py. At 5 members a single session has ~2 residual df
    # per reviewer and the harsh reviewer is named in only ~6% (docs/bias-audit.md); a
    # floor far below 79% but far above the null rate (~1%) proves the flag responds.
    assert rates["harsh = m0"] >= 0.50
    assert rates["generous"] <= 0.08
