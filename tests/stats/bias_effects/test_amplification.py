"""Amplification statistics against hand values, exact enumeration and numpy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from llm_council.stats.bias_effects.amplification import (
    _MAX_NETWORK_SLOTS,
    _sorting_network,
    alignment_randomization_p,
    alignment_statistic,
    amplification_screen,
    mean_pairwise_correlation,
)


def test_alignment_by_hand() -> None:
    # reviewer 0: y = 9, 7, 5 (mean 7), c-bar - c = 1, 0, -1 -> 2 + 0 + 2 = 4
    # reviewer 1: y = 5, nan, 7 (mean 6), observed slots 0, 2 (mean 1) -> (-1)(1) + (1)(-1) = -2
    scores = np.array([[[9.0, 7.0, 5.0], [5.0, np.nan, 7.0]]])
    assert alignment_statistic(scores).tolist() == pytest.approx([(4.0 - 2.0) / 2])


def test_randomization_p_matches_exact_enumeration() -> None:
    scores = np.array([[[9.0, 8.0, 5.0, 6.0]]])
    observed = abs(alignment_statistic(scores)[0])
    exact = np.mean(
        [
            abs(alignment_statistic(scores[:, :, list(order)])[0]) >= observed - 1e-12
            for order in itertools.permutations(range(4))
        ]
    )
    p = alignment_randomization_p(scores, np.random.default_rng(0), n_permutations=20000)
    assert p[0] == pytest.approx(exact, abs=0.01)


def test_randomization_keeps_missing_slots_fixed() -> None:
    scores = np.array([[[7.0, np.nan, 3.0, 5.0]]])
    # scored slots 0, 2, 3 -> weights c-bar - c = 5/3, -1/3, -4/3; centred scores 2, -2, 0.
    # The 3! = 6 assignments give T = 4, 6, -4, -6, 2, -2; |T| >= 4 in 4 of 6 -> p = 4/6
    # (a permutation over all four slots, moving the gap, would give other values).
    p = alignment_randomization_p(scores, np.random.default_rng(1), n_permutations=20000)
    assert p[0] == pytest.approx(4 / 6, abs=0.01)


@pytest.mark.parametrize("n_models", [6, 9])  # models-first sums, then models-last ones
def test_mean_pairwise_correlation_matches_numpy(n_models: int) -> None:
    rng = np.random.default_rng(2)
    table = rng.normal(size=(1, 3, n_models))
    r = np.corrcoef(table[0])
    assert mean_pairwise_correlation(table)[0] == pytest.approx((r[0, 1] + r[0, 2] + r[1, 2]) / 3)


def test_screen_false_flags_stay_at_alpha_and_primacy_is_found() -> None:
    rng = np.random.default_rng(3)
    n_sessions, k = 1500, 5
    quality = rng.normal(0, 2.0, (n_sessions, 1, k))
    by_model = quality + rng.normal(0, 0.5, (n_sessions, k, k))  # strong agreement
    order = np.argsort(rng.random((n_sessions, k, k)), axis=-1)  # slot -> model
    by_slot = np.take_along_axis(by_model, order, axis=-1)
    null = amplification_screen(by_slot, by_model, rng, n_permutations=99)
    assert null.suspect.mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / n_sessions)
    primacy = by_slot + np.array([2.0, 1.0, 0.0, 0.0, 0.0])
    found = amplification_screen(primacy, by_model, rng, n_permutations=99)
    assert found.suspect.mean() > 0.2


def _one_permutation_at_a_time_p(
    values: np.ndarray, rng: np.random.Generator, n_permutations: int, shared_order: bool
) -> np.ndarray:
    """The randomization p-value as first written: one draw, argsort and re-scatter per
    permutation (the reference the batched integer-sort version must reproduce exactly)."""
    observed = np.abs(alignment_statistic(values)) - 1e-12
    n_sessions, _, n_slots = values.shape
    in_use = np.isfinite(values)
    if shared_order:
        in_use = np.broadcast_to(in_use.any(axis=1, keepdims=True), values.shape)
    slots = np.broadcast_to(np.arange(n_slots, dtype=float), values.shape)
    targets = np.argsort(np.where(in_use, slots, np.inf), axis=-1, kind="stable")
    key_shape = (n_sessions, 1, n_slots) if shared_order else values.shape
    at_least = np.zeros(n_sessions)
    if shared_order:
        for _ in range(n_permutations):
            keys = np.broadcast_to(rng.random(key_shape), values.shape)
            sources = np.argsort(np.where(in_use, keys, np.inf), axis=-1, kind="stable")
            permuted = values.copy()
            np.put_along_axis(permuted, targets, np.take_along_axis(values, sources, -1), -1)
            at_least += np.abs(alignment_statistic(permuted)) >= observed
        return (1.0 + at_least) / (n_permutations + 1.0)
    # per-reviewer orders: the k-th scored slot's centred score meets the k-th slot's weight
    count = np.maximum(in_use.sum(axis=-1, keepdims=True), 1)
    centred_y = np.where(in_use, values - np.nansum(values, -1, keepdims=True) / count, 0.0)
    slot_mean = np.where(in_use, slots, 0.0).sum(axis=-1, keepdims=True) / count
    centred_c = np.where(in_use, slot_mean - slots, 0.0)
    scored = in_use.sum(axis=-1) >= 2
    n_scored = np.maximum(scored.sum(axis=-1), 1)
    for _ in range(n_permutations):
        sources = np.argsort(np.where(in_use, rng.random(key_shape), np.inf), axis=-1)
        weights = np.zeros_like(centred_c)
        np.put_along_axis(weights, targets, np.take_along_axis(centred_c, sources, -1), -1)
        per_reviewer = np.where(scored, (centred_y * weights).sum(axis=-1), 0.0)
        at_least += np.abs(per_reviewer.sum(axis=-1) / n_scored) >= observed
    return (1.0 + at_least) / (n_permutations + 1.0)


@pytest.mark.parametrize("shared_order", [False, True])
def test_batched_randomization_equals_one_permutation_at_a_time(shared_order: bool) -> None:
    rng = np.random.default_rng(5)
    # up to 20 slots: the sorting network (at most 16) and the per-row sort
    for trial in range(80):
        shape = (rng.integers(1, 6), rng.integers(1, 5), rng.integers(1, 21))
        scores = rng.integers(1, 10, shape).astype(float)
        scores[rng.random(shape) < rng.random() * 0.5] = np.nan
        n_permutations = int(rng.integers(1, 60))
        expected = _one_permutation_at_a_time_p(
            scores, np.random.default_rng(trial), n_permutations, shared_order
        )
        got = alignment_randomization_p(
            scores, np.random.default_rng(trial), n_permutations, shared_order
        )
        assert np.array_equal(got, expected), (trial, shape)


@pytest.mark.parametrize("n_items", range(1, _MAX_NETWORK_SLOTS + 1))
def test_sorting_network_sorts_every_zero_one_input(n_items: int) -> None:
    # the 0-1 principle (Knuth, TAOCP vol. 3, 5.3.4, Theorem Z): a comparator network that
    # sorts all 2**n inputs of zeros and ones sorts every input
    bits = (np.arange(2**n_items)[:, None] >> np.arange(n_items)) & 1
    columns = list(bits.T.copy())
    for low, high in _sorting_network(n_items):
        columns[low], columns[high] = (
            np.minimum(columns[low], columns[high]),
            np.maximum(columns[low], columns[high]),
        )
    assert np.array_equal(np.stack(columns, axis=1), np.sort(bits, axis=1))
