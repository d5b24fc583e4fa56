"""Alpha from weighted pair-count sums: each replicate equals Krippendorff's alpha of the
table with its groups explicitly repeated by their weights, and the multinomial weights
give clustered_alpha's interval; sums of disjoint groups add up exactly."""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_council.stats.reliability.alpha_pair_sums import (
    alpha_from_pair_sums,
    alphas_from_coincidences,
    coincidences_from_pair_sums,
    group_pair_counts,
    triangle_cells,
    weighted_pair_sums,
)
from llm_council.stats.reliability.clustered_alpha import (
    clustered_alpha,
    group_coincidences,
    resample_counts,
)
from llm_council.stats.reliability.krippendorff_alpha import (
    alpha_from_coincidences,
    krippendorff_alpha,
)


def _random_table(seed: int, raters: int, units: int, per_group: int, levels: int = 7):
    """A raters x units table of integer scores with missing cells, and its long format."""
    rng = np.random.default_rng(seed)
    table = rng.integers(1, levels + 1, size=(raters, units)).astype(float)
    table[rng.random((raters, units)) < 0.25] = math.nan
    groups = np.repeat(np.arange(units // per_group), per_group)
    rater, unit = np.nonzero(~np.isnan(table))
    return table, groups, unit, rater, table[rater, unit]


def _sums(table, groups, unit, rater, value, weights):
    """(values, divisors, whole, removed) of the long ratings under ``weights`` (B, G)."""
    values, index = np.unique(value, return_inverse=True)
    stacks = [group_pair_counts(unit, index, groups, values.size)]
    for r in range(table.shape[0]):
        kept = rater != r
        stacks.append(group_pair_counts(unit[kept], index[kept], groups, values.size))
    divisors = np.unique(np.concatenate([s.divisor for s in stacks]))
    cells = values.size * (values.size + 1) // 2
    summed = weighted_pair_sums(stacks, weights, divisors, cells)
    return values, divisors, summed[0], summed[0][None] - summed[1:]


def _repeated(table, groups, weights_row):
    """The table with each group's columns repeated ``weights_row[g]`` times."""
    columns = [np.flatnonzero(groups == g) for g in range(weights_row.size)]
    chosen = [columns[g] for g in range(weights_row.size) for _ in range(int(weights_row[g]))]
    return table[:, np.concatenate(chosen)] if chosen else table[:, :0]


@pytest.mark.parametrize("metric", ["nominal", "ordinal", "interval", "ratio"])
@pytest.mark.parametrize(("raters", "units"), [(3, 45), (5, 60), (9, 90)])
def test_each_replicate_is_alpha_of_the_explicitly_repeated_table(metric, raters, units):
    table, groups, unit, rater, value = _random_table(raters * units + 1, raters, units, 3)
    rng = np.random.default_rng(raters)
    weights = rng.poisson(1.0, size=(12, units // 3)).astype(np.uint8)
    values, divisors, whole, removed = _sums(table, groups, unit, rater, value, weights)
    matrices = coincidences_from_pair_sums(divisors, whole, values.size)
    got = alphas_from_coincidences(values, matrices, metric)
    assert got[0] == pytest.approx(krippendorff_alpha(table, metric), abs=1e-12)
    for b in range(weights.shape[0]):
        reference = krippendorff_alpha(_repeated(table, groups, weights[b]), metric)
        assert got[b + 1] == pytest.approx(reference, abs=1e-12, nan_ok=True)
    for r in range(raters):  # a value a left-out rater alone gave is an empty row: no effect
        matrices = coincidences_from_pair_sums(divisors, whole - removed[r], values.size)
        without = alphas_from_coincidences(values, matrices, metric)
        for b in range(0, weights.shape[0], 3):
            repeated = _repeated(np.delete(table, r, axis=0), groups, weights[b])
            reference = krippendorff_alpha(repeated, metric)
            assert without[b + 1] == pytest.approx(reference, abs=1e-12, nan_ok=True)


@pytest.mark.parametrize("metric", ["ordinal", "interval"])
@pytest.mark.parametrize(("raters", "units"), [(3, 45), (9, 90)])
def test_multinomial_weights_give_clustered_alphas_interval(metric, raters, units):
    table, groups, unit, rater, value = _random_table(raters + units, raters, units, 3)
    n_groups = units // 3
    counts = resample_counts(n_groups, 150, seed=11)
    values, divisors, whole, removed = _sums(table, groups, unit, rater, value, counts)
    got = alpha_from_pair_sums(
        values, divisors, whole, removed, metric, n_units=0, n_groups=n_groups, n_ratings=0
    )
    want = clustered_alpha(unit, rater, value, groups, metric, resamples=150, seed=11)
    assert got.resamples == want.resamples == 150
    pairs = [(got.alpha, want.alpha)]
    pairs += list(zip(got.without_rater, want.without_rater, strict=True))
    pairs += list(zip(got.change_without_rater, want.change_without_rater, strict=True))
    for mine, theirs in pairs:
        assert mine.estimate == pytest.approx(theirs.estimate, abs=1e-12)
        assert mine.ci_low == pytest.approx(theirs.ci_low, abs=1e-12)
        assert mine.ci_high == pytest.approx(theirs.ci_high, abs=1e-12)


def test_coincidences_equal_the_group_matrices_summed():
    table, groups, unit, rater, value = _random_table(3, 4, 30, 5)
    values, index = np.unique(value, return_inverse=True)
    pairs = group_pair_counts(unit, index, groups, values.size)
    divisors = np.unique(pairs.divisor)
    whole = weighted_pair_sums([pairs], np.zeros((0, 6), np.uint8), divisors, 28)[0, 0]
    matrix = coincidences_from_pair_sums(divisors, whole, values.size)
    reference = group_coincidences(unit, index, groups, 6, values.size).sum(axis=0)
    np.testing.assert_allclose(matrix, reference, rtol=0, atol=1e-12)
    # by hand: a unit rated (1, 1, 2) has d = 2 and pairs (1,1) x2, (1,2) x2, (2,1) x2:
    # o_11 = 2/2, o_12 = o_21 = 2/2, o_22 = 0
    one = group_pair_counts(np.array([0, 0, 0]), np.array([0, 0, 1]), np.array([0]), 2)
    hand = coincidences_from_pair_sums(np.array([2]), _dense(one, 2, 3), 2)
    np.testing.assert_array_equal(hand, [[1.0, 1.0], [1.0, 0.0]])


def _dense(counts, n_divisors, n_cells):
    out = np.zeros((1, n_cells))
    out[0, counts.cell] = counts.count
    return out


def test_sums_of_disjoint_groups_add_up_exactly():
    table, groups, unit, rater, value = _random_table(8, 5, 60, 4)
    values, index = np.unique(value, return_inverse=True)
    rng = np.random.default_rng(0)
    weights = rng.poisson(1.0, size=(40, 15)).astype(np.uint8)
    pairs = group_pair_counts(unit, index, groups, values.size)
    divisors = np.unique(pairs.divisor)
    whole = weighted_pair_sums([pairs], weights, divisors, 28)
    halves = []
    for keep in (groups[unit] < 7, groups[unit] >= 7):
        part = group_pair_counts(unit[keep], index[keep], groups, values.size)
        halves.append(weighted_pair_sums([part], weights, divisors, 28))
    np.testing.assert_array_equal(halves[0] + halves[1], whole)


def test_degenerate_judges_and_a_single_group():
    # every rating the same value: no expected disagreement, alpha undefined, no interval
    unit = np.repeat(np.arange(6), 3)
    index = np.zeros(18, dtype=np.int64)
    groups = np.repeat(np.arange(3), 2)
    pairs = group_pair_counts(unit, index, groups, 1)
    weights = np.ones((5, 3), dtype=np.uint8)
    summed = weighted_pair_sums([pairs], weights, np.unique(pairs.divisor), 1)
    got = alpha_from_pair_sums(
        np.array([5.0]), np.unique(pairs.divisor), summed[0], np.zeros((0, 6, 1, 1)),
        "interval", n_units=6, n_groups=3, n_ratings=18,
    )  # fmt: skip
    assert math.isnan(got.alpha.estimate) and got.resamples == 0
    # one group: an estimate, no interval
    table, groups, unit, rater, value = _random_table(4, 3, 3, 3)
    values, divisors, whole, removed = _sums(
        table, groups, unit, rater, value, np.ones((4, 1), np.uint8)
    )
    got = alpha_from_pair_sums(
        values, divisors, whole, removed, "interval", n_units=3, n_groups=1, n_ratings=0
    )
    assert got.resamples == 0 and math.isnan(got.alpha.ci_low)
    assert got.alpha.estimate == pytest.approx(krippendorff_alpha(table, "interval"), abs=1e-12)


def test_vectorised_alpha_equals_the_scalar_one_on_a_published_example():
    """Krippendorff (2011) pp. 3-8's worked example: the same value from both paths."""
    nan = math.nan
    table = np.array(
        [
            [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
            [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
        ]
    )
    rater, unit = np.nonzero(~np.isnan(table))
    values, index = np.unique(table[rater, unit], return_inverse=True)
    pairs = group_pair_counts(unit, index, np.zeros(12, dtype=np.int64), values.size)
    divisors = np.unique(pairs.divisor)
    cells = triangle_cells(values.size)
    summed = weighted_pair_sums([pairs], np.zeros((0, 1), np.uint8), divisors, cells.max() + 1)
    matrix = coincidences_from_pair_sums(divisors, summed[0, 0], values.size)
    published = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}
    for metric, value in published.items():
        got = float(alphas_from_coincidences(values, matrix, metric))
        assert got == pytest.approx(alpha_from_coincidences(values, matrix, metric), abs=1e-14)
        assert round(got, 3) == value
