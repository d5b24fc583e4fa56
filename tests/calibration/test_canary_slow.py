"""The canary drift test's level and power on the simulated judge (issue 33's targets).

500 re-runs of an unchanged 40-item canary set (judge noise SD 0.7, integer scores):
drift declared in <= 5% + 2 SE; a leniency shift of -0.5 found in >= 80%. Run with
``pytest -m slow tests/calibration/test_canary_slow.py``.
"""

from __future__ import annotations

import math

import pytest

from llm_council.calibration.canary import canary_drift

from .test_canary import run_document, simulated_scores

pytestmark = pytest.mark.slow
RERUNS = 500


def test_level_and_power_over_500_reruns():
    false_alarms = found = 0
    for rerun in range(RERUNS):
        baseline = run_document(simulated_scores(seed=10_000 + rerun))
        unchanged = canary_drift(run_document(simulated_scores(seed=20_000 + rerun)), [baseline])
        shifted = canary_drift(
            run_document(simulated_scores(seed=30_000 + rerun, leniency=-0.5)), [baseline]
        )
        false_alarms += bool(unchanged["drifted"])
        found += bool(shifted["drifted"])
    print(f"false alarms {false_alarms}/{RERUNS}, power {found}/{RERUNS}")
    assert false_alarms / RERUNS <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / RERUNS)
    assert found / RERUNS >= 0.80
