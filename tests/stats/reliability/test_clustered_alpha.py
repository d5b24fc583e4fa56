"""Clustered alpha: the same alpha and session-bootstrap interval as the matrix form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_council.stats.reliability.clustered_alpha import clustered_alpha, group_coincidences
from llm_council.stats.reliability.krippendorff_alpha import (
    coincidence_matrix,
    krippendorff_alpha,
    krippendorff_alpha_interval,
)


def _random_long(seed: int, raters: int, units: int, per_group: int):
    """A raters x units table with missing cells, and its long format."""
    rng = np.random.default_rng(seed)
    table = rng.integers(1, 8, size=(raters, units)).astype(float)
    table[rng.random((raters, units)) < 0.25] = math.nan
    groups = np.repeat(np.arange(units // per_group), per_group)
    rater, unit = np.nonzero(~np.isnan(table))
    return table, groups, unit, rater, table[rater, unit]


@pytest.mark.parametrize("metric", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize(("raters", "units"), [(3, 45), (9, 90)])
def test_equals_the_matrix_form_and_its_session_bootstrap(metric, raters, units):
    table, groups, unit, rater, value = _random_long(raters * units, raters, units, 3)
    result = clustered_alpha(unit, rater, value, groups, metric, resamples=150, seed=11)
    reference = krippendorff_alpha_interval(
        table, metric, resamples=150, seed=11, unit_groups=groups
    )
    # same draws (same seed, same group sequence): the same interval to rounding
    assert result.alpha.estimate == pytest.approx(reference.alpha, abs=1e-12)
    assert result.alpha.ci_low == pytest.approx(reference.ci_low, abs=1e-12)
    assert result.alpha.ci_high == pytest.approx(reference.ci_high, abs=1e-12)
    assert result.resamples == 150
    assert result.n_groups == units // 3
    for row in range(raters):
        without = krippendorff_alpha(np.delete(table, row, axis=0), metric)
        assert result.without_rater[row].estimate == pytest.approx(without, abs=1e-12)
        change = result.change_without_rater[row]
        assert change.estimate == pytest.approx(without - reference.alpha, abs=1e-12)
        assert change.ci_low <= change.ci_high


def test_equals_the_krippendorff_package():
    krippendorff = pytest.importorskip("krippendorff")
    table, groups, unit, rater, value = _random_long(5, 5, 60, 4)
    for metric in ("interval", "ordinal"):
        result = clustered_alpha(unit, rater, value, groups, metric, resamples=10)
        expected = krippendorff.alpha(reliability_data=table, level_of_measurement=metric)
        assert result.alpha.estimate == pytest.approx(expected, abs=1e-9)


def test_group_matrices_add_up_to_the_whole_table():
    table, groups, unit, rater, value = _random_long(2, 4, 30, 5)
    values, codes = np.unique(value, return_inverse=True)
    stacks = group_coincidences(unit, codes, groups, 6, values.size)
    _, whole = coincidence_matrix(table)
    np.testing.assert_allclose(stacks.sum(axis=0), whole, atol=1e-12)


def test_seeded_runs_repeat_exactly_and_another_seed_differs():
    _, groups, unit, rater, value = _random_long(4, 4, 60, 3)
    first = clustered_alpha(unit, rater, value, groups, "interval", resamples=80, seed=3)
    again = clustered_alpha(unit, rater, value, groups, "interval", resamples=80, seed=3)
    other = clustered_alpha(unit, rater, value, groups, "interval", resamples=80, seed=4)
    assert first == again
    assert (first.alpha.ci_low, first.alpha.ci_high) != (other.alpha.ci_low, other.alpha.ci_high)


def test_a_constant_judge_panel_gives_undefined_alpha_and_no_interval():
    unit = np.repeat(np.arange(10), 3)
    rater = np.tile(np.arange(3), 10)
    value = np.full(30, 7.0)
    result = clustered_alpha(unit, rater, value, np.arange(10) // 2, "interval", resamples=50)
    assert math.isnan(result.alpha.estimate)
    assert math.isnan(result.alpha.ci_low) and math.isnan(result.alpha.ci_high)
    assert result.resamples == 0


def test_one_group_has_no_interval_and_bad_input_is_refused():
    _, _, unit, rater, value = _random_long(6, 3, 12, 12)
    one_group = np.zeros(12, dtype=int)
    result = clustered_alpha(unit, rater, value, one_group, "ordinal", resamples=20)
    assert math.isfinite(result.alpha.estimate)
    assert math.isnan(result.alpha.ci_low)
    with pytest.raises(ValueError, match="finite"):
        clustered_alpha([0, 0], [0, 1], [1.0, math.inf], [0], "interval")
    with pytest.raises(ValueError, match="one entry per rating"):
        clustered_alpha([0, 0], [0], [1.0, 2.0], [0], "interval")
    with pytest.raises(ValueError, match="no group"):
        clustered_alpha([0, 5], [0, 1], [1.0, 2.0], [0], "interval")
