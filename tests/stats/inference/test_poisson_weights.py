"""Poisson bootstrap weights: the Poisson(1) law (scipy), a pure-Python SplitMix64, and
stability of each unit's weights when other units come and go."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.inference.poisson_weights import (
    POISSON_ONE_CDF,
    poisson_weights,
    unit_keys,
)

_MASK = (1 << 64) - 1


def _splitmix64_reference(z: int) -> int:
    """SplitMix64's output function in Python integers (Steele, Lea & Flood 2014, fig. 1;
    the constants of Vigna's splitmix64.c)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def test_the_table_is_the_poisson_one_distribution_function() -> None:
    j = np.arange(POISSON_ONE_CDF.size)
    np.testing.assert_allclose(POISSON_ONE_CDF, stats.poisson.cdf(j, 1.0), rtol=1e-15, atol=0)
    assert POISSON_ONE_CDF[-1] == 1.0 and POISSON_ONE_CDF[-2] < 1.0


def test_weights_follow_the_reference_hash_and_quantile() -> None:
    ids = ["s-1", "session two", "ü-3"]
    keys = unit_keys(ids, seed=11)
    for unit, key in zip(ids, keys.tolist(), strict=True):
        digest = hashlib.blake2b(unit.encode(), digest_size=8, key=b"11").digest()
        assert key == int.from_bytes(digest, "little")
    weights = poisson_weights(keys, np.arange(5))
    for b in range(5):
        for u, key in enumerate(keys.tolist()):
            z = _splitmix64_reference((key + (b + 1) * 0x9E3779B97F4A7C15) & _MASK)
            uniform = (z >> 11) / 2**53
            expected = int(stats.poisson.ppf(uniform, 1.0))
            # ppf(u) is the smallest j with F(j) >= u; ours counts F(j) <= u: they differ
            # only where u equals a table entry exactly (probability 2^-53)
            assert weights[b, u] == expected


def test_weights_are_poisson_one_and_independent() -> None:
    keys = unit_keys([f"session-{i}" for i in range(4000)], seed=0)
    weights = poisson_weights(keys, np.arange(100))
    assert weights.mean() == pytest.approx(1.0, abs=0.01)  # se 1/sqrt(4e5) = 0.0016
    assert weights.var() == pytest.approx(1.0, abs=0.02)
    # frequencies against the Poisson(1) probabilities: chi-square, 0..4 and 5+
    observed = np.bincount(np.minimum(weights.ravel(), 5), minlength=6)
    expected = stats.poisson.pmf(np.arange(5), 1.0).tolist()
    expected.append(1 - sum(expected))
    chi2 = stats.chisquare(observed, np.array(expected) * weights.size)
    assert chi2.pvalue > 1e-4
    # neighbouring resamples and neighbouring units are uncorrelated
    assert abs(np.corrcoef(weights[0], weights[1])[0, 1]) < 0.06  # se 1/sqrt(4000)
    assert abs(np.corrcoef(weights[:, 0], weights[:, 1])[0, 1]) < 0.35  # 100 resamples


def test_a_unit_keeps_its_weights_when_others_are_added_or_reordered() -> None:
    ids = [f"s{i}" for i in range(50)]
    alone = poisson_weights(unit_keys(ids[:10], seed=3), np.arange(20))
    together = poisson_weights(unit_keys(ids[::-1], seed=3), np.arange(20))
    np.testing.assert_array_equal(alone, together[:, ::-1][:, :10])
    # a later batch of resamples is the same columns as one long run
    np.testing.assert_array_equal(
        poisson_weights(unit_keys(ids, seed=3), np.arange(10, 20)),
        poisson_weights(unit_keys(ids, seed=3), np.arange(20))[10:],
    )
    # another seed, other weights
    other = poisson_weights(unit_keys(ids[:10], seed=4), np.arange(20))
    assert not np.array_equal(alone, other)


def test_any_integer_seed_gives_keys() -> None:
    ids = ["a", "b"]
    huge = unit_keys(ids, seed=10**80)  # longer than BLAKE2b's 64-byte key
    assert huge.shape == (2,) and not np.array_equal(huge, unit_keys(ids, seed=10**80 + 1))
    assert not np.array_equal(unit_keys(ids, seed=-1), unit_keys(ids, seed=1))
