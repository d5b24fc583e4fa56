"""Double-double sums: exact error terms, the correctly rounded sum, and the same bits
whatever the grouping (the property a merged summary needs, ADR 0079)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from llm_council.stats.numerics.double_double_sums import (
    add_double_double,
    double_double_sum,
    two_sum,
)


def _values(seed: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # mixed magnitudes and signs, so plain float sums depend on their order
    return rng.normal(size=n) * 10.0 ** rng.integers(-8, 9, size=n)


def test_two_sum_is_error_free() -> None:
    a, b = _values(1, 500), _values(2, 500)
    s, e = two_sum(a, b)
    for x, y, hi, lo in zip(a, b, s, e, strict=True):
        assert Fraction(x) + Fraction(y) == Fraction(hi) + Fraction(lo)


def test_the_high_part_is_the_correctly_rounded_sum() -> None:
    # math.fsum is Shewchuk's exact summation, correctly rounded: an independent reference
    for seed in range(20):
        values = _values(seed, 1000)
        hi, lo = double_double_sum(values)
        assert float(hi) == math.fsum(values.tolist())
        assert abs(float(lo)) <= abs(float(hi)) * 2.0**-52


def test_sums_of_parts_merge_to_the_same_bits_in_any_grouping() -> None:
    values = _values(5, 12000).reshape(3000, 4)
    whole = double_double_sum(values)
    rng = np.random.default_rng(0)
    for _ in range(10):
        cuts = np.sort(rng.choice(np.arange(1, 3000), size=3, replace=False))
        parts = [double_double_sum(part) for part in np.split(values[rng.permutation(3000)], cuts)]
        hi, lo = parts[0]
        for part_hi, part_lo in parts[1:]:
            hi, lo = add_double_double(hi, lo, part_hi, part_lo)
        np.testing.assert_array_equal(hi, whole[0])
    # plain float64 does depend on the order here (the reason for the module)
    assert any(
        values[rng.permutation(3000)].sum(axis=0)[i] != values.sum(axis=0)[i] for i in range(4)
    )


def test_empty_and_non_finite_inputs() -> None:
    hi, lo = double_double_sum(np.zeros((0, 3)))
    np.testing.assert_array_equal(hi, np.zeros(3))
    hi, lo = double_double_sum(np.array([1.0, np.inf, 2.0]))
    assert not np.isfinite(hi) and lo == 0.0
