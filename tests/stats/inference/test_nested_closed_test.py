"""The closed test with a nested pair against a brute-force closed test (ADR 0082)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from llm_council.stats.inference.nested_closed_test import (
    NestedPair,
    nested_family_holm_adjusted,
)
from llm_council.stats.inference.report_multiplicity import family_holm_adjusted


def _brute_force(p, families, weights, pair: NestedPair) -> np.ndarray:
    """Every intersection's weighted Bonferroni local test, written out: a family's part is
    its members in the intersection, the pair counted once (combined p when ``full`` is in
    it, ``sub``'s p when only ``sub`` is), the family's share split equally among its parts;
    a hypothesis's adjusted p is the largest local p over the intersections that hold it."""
    m = len(p)
    adjusted = np.zeros(m)
    for size in range(1, m + 1):
        for chosen in itertools.combinations(range(m), size):
            parts: dict[str, list[float]] = {}
            for index in chosen:
                if index == pair.sub and pair.full in chosen:
                    continue
                value = pair.combined_p if index == pair.full else p[index]
                parts.setdefault(families[index], []).append(value)
            total = sum(weights[family] for family in parts)
            local = min(
                min(1.0, value * len(values) * total / weights[family])
                for family, values in parts.items()
                for value in values
            )
            for index in chosen:
                adjusted[index] = max(adjusted[index], local)
    return adjusted


@pytest.mark.parametrize("seed", range(40))
def test_it_equals_the_closed_test_written_out(seed: int):
    rng = np.random.default_rng(seed)
    families = ["cp", "cp", "len", "self", "self", "lenient"]
    weights = {"cp": 7.0, "len": 7.0, "self": 7.0, "lenient": 1.0}
    p = rng.uniform(0, 0.05, size=6) ** rng.uniform(0.5, 2)
    full, sub = (1, 0) if seed % 2 else (0, 1)
    smallest = min(p[full], p[sub])
    pair = NestedPair(full, sub, smallest * rng.uniform(1.0, 2.0))
    expected = _brute_force(p, families, weights, pair)
    got = nested_family_holm_adjusted(p, families, weights, [pair])
    assert got == pytest.approx(expected, rel=1e-12)


def test_without_a_pair_it_is_the_weighted_holm():
    p = [0.01, 0.2, 0.003, np.nan]
    families = ["a", "a", "b", "b"]
    weights = {"a": 2.0, "b": 1.0}
    expected = family_holm_adjusted(p, families, weights)
    np.testing.assert_array_equal(nested_family_holm_adjusted(p, families, weights, []), expected)
    nan_pair = [NestedPair(1, 0, float("nan"))]
    np.testing.assert_array_equal(
        nested_family_holm_adjusted(p, families, weights, nan_pair), expected
    )


def test_the_pair_is_never_worse_than_holm_within_its_family():
    rng = np.random.default_rng(5)
    families = ["cp", "cp", "len", "self"]
    weights = {"cp": 7.0, "len": 7.0, "self": 7.0}
    for _ in range(200):
        p = rng.uniform(0, 0.1, size=4) ** 2
        pair = NestedPair(1, 0, min(p[0], p[1]) * rng.uniform(1.0, 2.0))
        holm = family_holm_adjusted(p, families, weights)
        nested = nested_family_holm_adjusted(p, families, weights, [pair])
        assert nested[0] <= holm[0] + 1e-15 and nested[1] <= holm[1] + 1e-15


def test_a_pair_across_families_is_refused():
    with pytest.raises(ValueError, match="one family"):
        nested_family_holm_adjusted([0.1, 0.2], ["a", "b"], None, [NestedPair(0, 1, 0.15)])
