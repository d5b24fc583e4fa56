"""The paired shift test (stats/inference/paired_shift.py) against scipy.stats.ttest_rel, its level
and its power on a 40-item canary set."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.inference.paired_shift import paired_shift


def test_equals_scipy_ttest_rel():
    rng = np.random.default_rng(0)
    for _ in range(20):
        before = rng.integers(1, 11, size=40).astype(float)
        after = np.clip(before + rng.normal(0.3, 1.0, size=40).round(), 1, 10)
        ours = paired_shift(before.tolist(), after.tolist())
        theirs = stats.ttest_rel(after, before)
        assert ours.t_statistic == pytest.approx(theirs.statistic, rel=1e-12)
        assert ours.p_value == pytest.approx(theirs.pvalue, rel=1e-9)
        interval = theirs.confidence_interval(0.95)
        assert (ours.ci_low, ours.ci_high) == pytest.approx((interval.low, interval.high))


def test_degenerate_inputs():
    assert paired_shift([1.0], [2.0]) is None
    same = paired_shift([5, 6, 7], [5, 6, 7])
    assert same.shift == 0.0 and same.p_value == 1.0
    moved = paired_shift([5, 6, 7], [6, 7, 8])
    assert moved.shift == 1.0 and moved.p_value == 0.0
    with pytest.raises(ValueError, match="finite"):
        paired_shift([1, math.nan], [1, 2])
    with pytest.raises(ValueError, match="3 scores before but 2"):
        paired_shift([1, 2, 3], [1, 2])


def _rerun(rng, quality, shift, noise_sd):
    """An integer 1-10 judge scoring the same items again (noise on each scoring)."""
    score = np.clip(np.round(quality + shift + rng.normal(0, noise_sd, quality.size)), 1, 10)
    return score.tolist()


@pytest.mark.parametrize("noise_sd", [0.5, 0.7, 1.0])
def test_level_on_an_unchanged_judge(noise_sd):
    # 500 re-runs of an unchanged judge on 40 items: rejections <= 5% + 2 SE (= 6.95%)
    rng = np.random.default_rng(11)
    rejections = 0
    for _ in range(500):
        quality = rng.uniform(3, 8, 40)
        result = paired_shift(_rerun(rng, quality, 0, noise_sd), _rerun(rng, quality, 0, noise_sd))
        rejections += result.p_value < 0.05
    assert rejections / 500 <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 500)


def test_power_for_half_a_point_on_forty_items():
    # noise SD 0.7 per scoring (difference SD ~1.0): power of the paired t test at n=40 for
    # 0.5 is about 0.87 by the normal approximation (z = 0.5/(1/sqrt(40)) - 1.96 = 1.20)
    rng = np.random.default_rng(12)
    found = 0
    for _ in range(500):
        quality = rng.uniform(3, 8, 40)
        result = paired_shift(_rerun(rng, quality, 0, 0.7), _rerun(rng, quality, 0.5, 0.7))
        found += result.p_value < 0.05
    assert found / 500 >= 0.80
