"""The paired statistics behind study mode, against independent references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.inference.proportions import mean_t_interval
from llm_council.stats.reliability.agreement import (
    agreement_of_coded_pairs,
    cohen_kappa_from_table,
    kappa_of_coded_pairs,
    paired_bootstrap_difference,
)


def test_mean_t_interval_matches_scipy() -> None:
    values = [0.0, 0.5, 1.0, 1.0, -1.0, 0.5, 0.0, 1.0, 0.5, 0.5, -0.5, 1.0]
    mean, low, high = mean_t_interval(values, 0.9)
    reference = stats.ttest_1samp(values, 0.0).confidence_interval(0.9)
    assert mean == pytest.approx(np.mean(values))
    assert (low, high) == pytest.approx((reference.low, reference.high))
    assert math.isnan(mean_t_interval([1.0], 0.95)[1])


def _codes(rng: np.random.Generator, n: int, accuracy: float) -> np.ndarray:
    truth = rng.integers(0, 3, size=n)
    noise = rng.integers(0, 3, size=n)
    judged = np.where(rng.random(n) < accuracy, truth, noise)
    return np.column_stack([judged, truth])


def test_bootstrap_of_one_kappa_matches_the_fce_standard_error() -> None:
    # kappa(judge) minus a statistic that is always 0 is the bootstrap of kappa itself;
    # its percentile interval must match the analytic Fleiss-Cohen-Everitt interval
    # (an independent derivation: kappa +- 1.96 SE)
    rng = np.random.default_rng(3)
    codes = _codes(rng, 400, 0.6)
    zeros = np.zeros((400, 1), dtype=np.int64)
    result = paired_bootstrap_difference(
        lambda c: kappa_of_coded_pairs(c) if c.shape[1] == 2 else 0.0, codes, zeros, seed=4
    )
    table = np.zeros((3, 3), dtype=np.int64)
    np.add.at(table, (codes[:, 0], codes[:, 1]), 1)
    analytic = cohen_kappa_from_table(table)
    assert result.difference == pytest.approx(analytic.kappa)
    assert result.ci_low == pytest.approx(analytic.ci_low, abs=0.015)
    assert result.ci_high == pytest.approx(analytic.ci_high, abs=0.015)


def test_paired_difference_in_agreement_matches_the_analytic_paired_interval() -> None:
    # two judges on the same 300 pairs; difference of accuracies against the same truth.
    # Analytic reference (paired proportions, Agresti 2013 eq. 11.2): with b = pairs only
    # judge 1 got right, c = only judge 2, d = (b - c)/n, Var = ((b + c)/n - d^2)/n
    rng = np.random.default_rng(7)
    truth = rng.integers(0, 3, size=300)
    judge_1 = np.where(rng.random(300) < 0.8, truth, (truth + 1) % 3)
    judge_2 = np.where(rng.random(300) < 0.7, truth, (truth + 2) % 3)
    first = np.column_stack([judge_1, truth])
    second = np.column_stack([judge_2, truth])
    result = paired_bootstrap_difference(
        agreement_of_coded_pairs, first, second, resamples=4000, seed=1
    )
    right_1, right_2 = judge_1 == truth, judge_2 == truth
    b, c = int(np.sum(right_1 & ~right_2)), int(np.sum(~right_1 & right_2))
    d = (b - c) / 300
    se = math.sqrt(((b + c) / 300 - d * d) / 300)
    assert result.difference == pytest.approx(d)
    assert result.ci_low == pytest.approx(d - 1.96 * se, abs=0.012)
    assert result.ci_high == pytest.approx(d + 1.96 * se, abs=0.012)


def test_bootstrap_is_reproducible_and_refuses_unpaired_samples() -> None:
    rng = np.random.default_rng(2)
    first, second = _codes(rng, 50, 0.7), _codes(rng, 50, 0.5)
    one = paired_bootstrap_difference(kappa_of_coded_pairs, first, second, seed=5)
    two = paired_bootstrap_difference(kappa_of_coded_pairs, first, second, seed=5)
    assert one == two and one.ci_low <= one.difference <= one.ci_high
    with pytest.raises(ValueError, match="differ in length"):
        paired_bootstrap_difference(kappa_of_coded_pairs, first, second[:10])
