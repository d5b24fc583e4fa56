"""Coverage, false-alarm rate and power of the effective number of judges (slow: -m slow).

The full table is ``benchmarks/effective_judges_calibration.py`` (docs/calibration.md);
this pins two of its rows at 300 seeds each.
"""

from __future__ import annotations

import numpy as np
import pytest

from generators.shared_error_judges import error_matrix, true_effective_judges
from llm_council.calibration.judge_independence import too_few_reason
from llm_council.stats.reliability.effective_judges import effective_judges

SEEDS = 300


def _runs(judges: int, pairs: int, error: float, shared: float) -> tuple[float, float]:
    """(coverage of the true n_eff, share detected below k) over the seeds not too few."""
    names = [f"j{j}" for j in range(judges)]
    truth = true_effective_judges(shared, error, judges)
    covered = detected = used = 0
    for seed in range(SEEDS):
        errors = error_matrix(
            pairs, judges, shared=shared, error=error, rng=np.random.default_rng([seed, 77])
        )
        if too_few_reason(names, errors) is not None:
            continue
        result = effective_judges(errors, resamples=500, seed=seed)
        used += 1
        covered += result.ci_low <= truth <= result.ci_high
        detected += result.ci_high < judges
    assert used >= 0.9 * SEEDS
    return covered / used, detected / used


@pytest.mark.slow
def test_independent_judges_coverage_and_false_alarms() -> None:
    coverage, false_alarms = _runs(5, 100, 0.3, 0.0)
    # 300 seeds: Monte Carlo SE of a 95% coverage ~ 0.013, of a 2.5% rate ~ 0.009
    assert coverage >= 0.95 - 3 * 0.013
    assert false_alarms <= 0.025 + 3 * 0.009


@pytest.mark.slow
def test_shared_errors_detected() -> None:
    coverage, power = _runs(5, 100, 0.3, 0.1)
    assert coverage >= 0.95 - 3 * 0.013
    assert power >= 0.9
