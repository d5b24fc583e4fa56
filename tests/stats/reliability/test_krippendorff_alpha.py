"""Krippendorff's alpha against the published worked example and the `krippendorff` package."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_council.stats.reliability.krippendorff_alpha import (
    METRICS,
    alpha_without_each_rater,
    coincidence_matrix,
    krippendorff_alpha,
    krippendorff_alpha_interval,
)

NAN = math.nan
# Krippendorff (2011), "Computing Krippendorff's alpha-reliability", the example with
# missing data: 4 observers x 12 units
EXAMPLE = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
]


@pytest.mark.parametrize(
    ("metric", "published"),
    [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)],
)
def test_the_published_example(metric, published):
    assert krippendorff_alpha(EXAMPLE, metric) == pytest.approx(published, abs=5e-4)


def test_the_example_coincidence_matrix_by_hand():
    # paper, p. 4: n_1 = 9, n_2 = 13, n_3 = 10, n_4 = 5, n_5 = 3; n = 40 (unit 12 has one value)
    values, coincidences = coincidence_matrix(EXAMPLE)
    assert values.tolist() == [1, 2, 3, 4, 5]
    assert coincidences.sum(axis=1).tolist() == pytest.approx([9, 13, 10, 5, 3])
    # o_11 = unit 1 (three 1s, m=3): 3*2/2 + unit 8 (three 1s, m=4): 3*2/3 + unit 11
    # (two 1s, m=2): 2*1/1 = 3 + 2 + 2 = 7 (the paper's table, p. 4)
    assert coincidences[0, 0] == pytest.approx(7.0)
    assert np.allclose(coincidences, coincidences.T)


def _random_table(rng, raters, units, levels, missing):
    table = rng.integers(1, levels + 1, size=(raters, units)).astype(float)
    # raters agree with a unit's true value more often than chance
    truth = rng.integers(1, levels + 1, size=units)
    agree = rng.random((raters, units)) < 0.5
    table[agree] = np.broadcast_to(truth, (raters, units))[agree]
    table[rng.random((raters, units)) < missing] = np.nan
    return table


@pytest.mark.parametrize("metric", METRICS)
def test_equals_the_krippendorff_package_on_random_tables_with_missing_cells(metric):
    krippendorff = pytest.importorskip("krippendorff")
    rng = np.random.default_rng(7)
    for trial in range(40):
        table = _random_table(rng, rng.integers(2, 10), rng.integers(5, 40), 5, 0.3)
        theirs = krippendorff.alpha(table, level_of_measurement=metric)
        ours = krippendorff_alpha(table, metric)
        if math.isnan(theirs):
            assert math.isnan(ours), trial
        else:
            assert ours == pytest.approx(theirs, abs=1e-9), trial


def test_undefined_cases_are_nan_not_perfect():
    assert math.isnan(krippendorff_alpha([[3, 3, 3], [3, 3, 3]]))  # one value throughout
    assert math.isnan(krippendorff_alpha([[1, NAN], [NAN, 2]]))  # nothing pairable
    assert krippendorff_alpha([[1, 2, 3], [1, 2, 3]], "interval") == 1.0


def test_bad_shapes_and_values_are_refused():
    with pytest.raises(ValueError, match="raters x units"):
        krippendorff_alpha([1, 2, 3])
    with pytest.raises(ValueError, match="infinite"):
        krippendorff_alpha([[1, math.inf], [1, 2]])
    with pytest.raises(ValueError, match="unknown metric"):
        krippendorff_alpha([[1, 2], [1, 2]], "cosine")  # type: ignore[arg-type]


def test_leaving_out_the_disagreeing_rater_raises_alpha():
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 8, size=60).astype(float)
    raters = np.vstack([truth + rng.normal(0, 0.3, 60) for _ in range(3)])
    noisy = rng.integers(1, 8, size=60).astype(float)
    table = np.vstack([np.round(raters), noisy])
    without = alpha_without_each_rater(table, "interval")
    assert without[3] > krippendorff_alpha(table, "interval") > max(without[:3]) - 1.0
    assert without[3] == max(without)


def test_the_bootstrap_interval_covers_the_estimate_and_is_seeded():
    table = np.asarray(EXAMPLE, dtype=float)
    first = krippendorff_alpha_interval(table, "interval", resamples=300, seed=1)
    again = krippendorff_alpha_interval(table, "interval", resamples=300, seed=1)
    assert first == again
    assert first.ci_low <= first.alpha <= first.ci_high
    grouped = krippendorff_alpha_interval(
        table, "interval", resamples=300, unit_groups=[0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
    )
    assert grouped.units == 12 and grouped.ci_low <= grouped.alpha <= grouped.ci_high
