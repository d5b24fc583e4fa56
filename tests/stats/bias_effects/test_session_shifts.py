"""Welch's early/late shift and the leave-one-out outlier t, against scipy and by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.bias_effects.session_shifts import early_late_shift, outlying_sessions


def test_early_late_shift_is_scipys_welch_test() -> None:
    values = [6.1, 5.8, 6.4, 6.0, 5.9, 7.2, 7.0, 6.8, 7.5, 6.9, 7.1]
    shift = early_late_shift(values)
    assert shift is not None and (shift.n_early, shift.n_late) == (5, 6)
    reference = stats.ttest_ind(values[5:], values[:5], equal_var=False)
    assert shift.t_statistic == pytest.approx(reference.statistic)
    assert shift.p_value == pytest.approx(reference.pvalue)
    assert shift.difference == pytest.approx(np.mean(values[5:]) - np.mean(values[:5]))


def test_early_late_shift_degenerate_inputs() -> None:
    assert early_late_shift([1.0, 2.0, 3.0]) is None  # one session in the early half
    flat = early_late_shift([5.0] * 6)
    assert flat is not None and flat.p_value == 1.0 and flat.difference == 0.0
    stepped = early_late_shift([5.0, 5.0, 6.0, 6.0])
    assert stepped is not None and stepped.p_value == 0.0
    assert early_late_shift([5.0, math.nan, 5.5, 6.0, math.inf, 6.5]) is not None


def test_outlier_t_by_hand() -> None:
    values = np.array([5.0, 5.2, 4.8, 5.1, 4.9, 8.0])
    found = {o.index: o for o in outlying_sessions(values)}
    others = values[:5]
    # hand: (8 - 5.0) / (sd(others) * sqrt(1 + 1/5)), sd(others) = sqrt(0.1) = 0.3162
    t = (8.0 - others.mean()) / (others.std(ddof=1) * math.sqrt(1.2))
    assert found[5].t_statistic == pytest.approx(t)
    assert found[5].p_value == pytest.approx(2 * stats.t.sf(abs(t), 4))
    assert found[5].adjusted_p_value == pytest.approx(min(1.0, 6 * found[5].p_value))


def test_outliers_need_four_sessions_and_spread() -> None:
    assert outlying_sessions([1.0, 2.0, 3.0]) == []
    assert [o.index for o in outlying_sessions([2.0, 2.0, 2.0, 9.0])] == [0, 1, 2]
    assert outlying_sessions([1.0, math.nan, 2.0, 3.0, 4.0]) == []


def test_both_hold_their_level_on_normal_session_means() -> None:
    # K = 20 normal session means, 1000 stores: the early/late test rejects ~5% and the
    # Bonferroni outlier screen flags a store at most ~5% (the family-wise bound)
    rng = np.random.default_rng(58)
    shifts = outliers = 0
    for _ in range(1000):
        values = rng.normal(6.0, 0.7, 20)
        shift = early_late_shift(values)
        assert shift is not None
        shifts += shift.p_value < 0.05
        outliers += any(o.adjusted_p_value < 0.05 for o in outlying_sessions(values))
    # binomial sd at 5% of 1000 is 0.69%: 3%-7% is about three sd
    assert 0.03 <= shifts / 1000 <= 0.07
    assert outliers / 1000 <= 0.07
