"""Pooled (n, mean, M2) against numpy on the concatenated samples."""

from __future__ import annotations

import numpy as np

from llm_council.stats.numerics.moments import merged_moments


def _row(values: np.ndarray) -> list[float]:
    if values.size == 0:
        return [0.0, float("nan"), 0.0]
    return [values.size, values.mean(), ((values - values.mean()) ** 2).sum()]


def test_pooled_moments_equal_numpy_on_the_union() -> None:
    rng = np.random.default_rng(5)
    samples = [
        (rng.normal(3, 2, 7), rng.normal(-1, 1, 11)),
        (np.array([4.0]), np.array([4.0, 4.0])),  # ties: M2 stays 0
        (np.array([1e8 + 1, 1e8 + 2]), np.array([1e8 + 3])),  # a large offset
        (np.array([]), np.array([2.0, 5.0])),  # an empty side
        (np.array([2.0, 5.0]), np.array([])),
    ]
    first = np.array([_row(a) for a, _ in samples])
    second = np.array([_row(b) for _, b in samples])
    pooled = merged_moments(first, second)
    expected = np.array([_row(np.concatenate([a, b])) for a, b in samples])
    np.testing.assert_allclose(pooled, expected, rtol=1e-12, atol=1e-9)
    # the sample variance, as scipy/numpy define it, of the first pair
    union = np.concatenate(samples[0])
    assert pooled[0, 2] / (pooled[0, 0] - 1) == np.float64(np.var(union, ddof=1)).item() or (
        abs(pooled[0, 2] / (pooled[0, 0] - 1) - np.var(union, ddof=1)) < 1e-12
    )


def test_two_empty_sides_stay_empty() -> None:
    empty = np.array([[0.0, float("nan"), 0.0]])
    pooled = merged_moments(empty, empty)
    assert pooled[0, 0] == 0 and np.isnan(pooled[0, 1]) and pooled[0, 2] == 0
