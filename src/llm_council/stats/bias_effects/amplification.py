"""Amplification: sessions whose judges agree strongly *and* whose scores follow display order.

Per session the scores are laid out as ``scores[reviewer, slot]`` in each reviewer's own
display order (NaN where nothing was scored). Two numbers:

- *agreement*: the mean pairwise Pearson correlation of the reviewers' scores over the
  answers both scored (a descriptive gate, not a test);
- *alignment*: how much the scores fall with display slot,
  :math:`T = \\frac{1}{R}\\sum_r \\sum_i (y_{ri} - \\bar y_r)(\\bar c - c_i)`
  with :math:`c_i` the slot index (positive = earlier slots score higher, primacy; negative
  = recency), tested two-sided by re-randomising the display orders.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike


def alignment_statistic(scores_by_slot: ArrayLike) -> np.ndarray:
    """:math:`T` per session for ``scores_by_slot`` of shape (..., reviewers, slots)."""
    values = np.asarray(scores_by_slot, dtype=float)
    observed = np.isfinite(values)
    slots = np.broadcast_to(np.arange(values.shape[-1], dtype=float), values.shape)
    count = np.maximum(observed.sum(axis=-1, keepdims=True), 1)
    centred_y = np.where(observed, values - np.nansum(values, -1, keepdims=True) / count, 0.0)
    slot_mean = np.where(observed, slots, 0.0).sum(axis=-1, keepdims=True) / count
    centred_c = np.where(observed, slot_mean - slots, 0.0)
    per_reviewer = (centred_y * centred_c).sum(axis=-1)
    scored = observed.sum(axis=-1) >= 2
    with np.errstate(invalid="ignore"):
        return np.asarray(
            np.where(scored, per_reviewer, 0.0).sum(axis=-1) / np.maximum(scored.sum(axis=-1), 1)
        )


#: random keys are drawn for about this many cells at a time: several permutations per
#: draw, which is the same stream of numbers as one draw per permutation
_KEYS_PER_DRAW = 1 << 20
#: ``Generator.random`` returns k / 2**53 for an integer k < 2**53 (numpy's
#: ``random_standard_uniform``), so ``key * 2**53`` is that integer, exactly
_KEY_RESOLUTION = float(2**53)
#: the most low bits a slot index may take beside a 53-bit key below bit 62
_MAX_SLOT_BITS = 9
#: a slot outside the permuted set sorts after every permuted slot
_UNUSED_KEY = 1 << 62
#: up to this many slots the keys are ordered by a sorting network; past it its
#: O(n log^2 n) pairs cost more than a per-row ``np.sort``
_MAX_NETWORK_SLOTS = 16


def _slots_by_key(keys: np.ndarray, in_use: np.ndarray) -> np.ndarray:
    """Per row, the slots in use ordered by ``keys``, then the others in slot order.

    The order of ``np.argsort(np.where(in_use, keys, np.inf), axis=-1)`` wherever no two
    keys of a row are equal (probability about 2**-53 per pair): each key becomes the
    integer ``key * 2**53`` shifted left with its slot in the low bits, and one integer
    ``np.sort`` gives the order and the slots together, without an argsort and a gather.
    """
    n_slots = keys.shape[-1]
    slot_bits = max(1, (n_slots - 1).bit_length())
    if slot_bits > _MAX_SLOT_BITS:
        return np.argsort(np.where(in_use, keys, np.inf), axis=-1, kind="stable")
    slots = np.arange(n_slots, dtype=np.int64)
    composite = (keys * _KEY_RESOLUTION).astype(np.int64)
    composite <<= slot_bits
    composite |= slots
    composite = np.where(in_use, composite, _UNUSED_KEY | slots)
    composite.sort(axis=-1)
    composite &= (1 << slot_bits) - 1
    return composite


@lru_cache(maxsize=_MAX_NETWORK_SLOTS)
def _sorting_network(n_items: int) -> tuple[tuple[int, int], ...]:
    """Compare-exchange pairs ``(low, high)`` that sort ``n_items`` values: Batcher's odd-even
    merge sort (K. E. Batcher 1968, "Sorting networks and their applications", AFIPS
    Spring Joint Computer Conference 32, 307-314).

    Built for the next power of two with every pair that touches a position past
    ``n_items`` left out: those positions would hold +inf padding, which such a pair never
    moves. Five items take 9 pairs.
    """
    size = 1 << max(0, (n_items - 1).bit_length())
    pairs = []
    block = 1
    while block < size:
        gap = block
        while gap >= 1:
            for start in range(gap % block, size - gap, 2 * gap):
                for offset in range(min(gap, size - start - gap)):
                    low, high = start + offset, start + offset + gap
                    if low // (2 * block) == high // (2 * block) and high < n_items:
                        pairs.append((low, high))
            gap //= 2
        block *= 2
    return tuple(pairs)


def _slots_by_key_rank_major(keys: np.ndarray, in_use: np.ndarray) -> list[np.ndarray]:
    """:func:`_slots_by_key` as one array per rank: ``result[k]`` is ``[..., k]`` of it.

    For at most :data:`_MAX_NETWORK_SLOTS` slots. The same integers (key, then slot in the
    low bits) are ordered by :func:`_sorting_network` run on whole ranks at a time, one
    ``np.minimum`` and one ``np.maximum`` over every row per pair: a few times faster than
    ``np.sort`` along rows of a handful of slots, which pays a call per row.
    """
    n_slots = keys.shape[-1]
    slot_bits = max(1, (n_slots - 1).bit_length())
    slots = np.arange(n_slots, dtype=np.int64).reshape(n_slots, *[1] * (keys.ndim - 1))
    composite = np.empty((n_slots, *keys.shape[:-1]), dtype=np.int64)
    # a power-of-two scale is exact: the integer key, already shifted past the slot bits
    np.multiply(
        np.moveaxis(keys, -1, 0),
        _KEY_RESOLUTION * (1 << slot_bits),
        out=composite,
        casting="unsafe",
    )
    composite |= slots
    if not in_use.all():
        unused = np.broadcast_to(~np.moveaxis(in_use, -1, 0)[:, None], composite.shape)
        np.copyto(composite, _UNUSED_KEY | slots, where=unused)
    by_rank = list(composite)
    spare = np.empty_like(by_rank[0])
    for low, high in _sorting_network(n_slots):
        np.minimum(by_rank[low], by_rank[high], out=spare)
        np.maximum(by_rank[low], by_rank[high], out=by_rank[high])
        by_rank[low], spare = spare, by_rank[low]
    for ranked in by_rank:
        ranked &= (1 << slot_bits) - 1
    return by_rank


def _permuted_reviewer_alignment(
    keys: np.ndarray,
    in_use: np.ndarray,
    centred_y_in_slot_order: np.ndarray,
    slot_mean: np.ndarray,
) -> np.ndarray:
    """Per permutation and (session, reviewer): the sum over ranks ``k`` of the ``k``-th
    scored slot's centred score times the weight (slot mean - slot) of the ``k``-th slot in
    key order; ``slot_mean`` has a trailing axis of 1.

    Added rank by rank in rank order, the order ``sum(axis=-1)`` adds fewer than 8 terms
    in; with more, the rounding may differ, far below the 1e-12 the p-value's comparison
    allows (the observed statistic is computed as before).
    """
    if keys.shape[-1] > _MAX_NETWORK_SLOTS:
        weights = slot_mean - _slots_by_key(keys, in_use)
        return np.asarray((centred_y_in_slot_order * weights).sum(axis=-1))
    total = np.zeros(keys.shape[:-1])
    centred_by_rank = np.moveaxis(centred_y_in_slot_order, -1, 0)
    for centred, source in zip(
        centred_by_rank, _slots_by_key_rank_major(keys, in_use), strict=True
    ):
        weight = np.subtract(slot_mean[..., 0], source)
        weight *= centred
        total += weight
    return total


def alignment_randomization_p(
    scores_by_slot: ArrayLike,
    rng: np.random.Generator,
    n_permutations: int = 199,
    shared_order: bool = False,
) -> np.ndarray:
    """Two-sided Monte Carlo p-value of :math:`|T|` per session under re-randomised orders.

    The council assigns display orders at random, so under "no position effect" every
    reordering of a reviewer's scores over its slots was equally likely: permuting the slot
    axis (independently per reviewer, or one permutation for all with ``shared_order``)
    gives the exact null of :math:`T` (Fisher's randomization test; Edgington & Onghena,
    *Randomization Tests*, 4th ed., 2007), with the +1 correction so
    :math:`P(p \\le \\alpha) \\le \\alpha`.

    Each permutation orders the slots in use by uniform random keys, one key per
    (session, reviewer, slot) cell, or per (session, slot) with ``shared_order``, drawn
    permutation after permutation from ``rng``.
    """
    values = np.asarray(scores_by_slot, dtype=float)
    observed = np.abs(alignment_statistic(values)) - 1e-12
    n_sessions, _, n_slots = values.shape
    at_least = np.zeros(n_sessions)
    # the slots a permutation may use: a reviewer's scored slots, or (shared order) every
    # slot any reviewer of the session used; other slots stay where they are
    in_use = np.isfinite(values)
    if shared_order:
        in_use = in_use.any(axis=1, keepdims=True)
    slots = np.broadcast_to(np.arange(n_slots, dtype=float), in_use.shape)
    # the slots in use in slot order, then the others: the k-th key-ordered slot moves here
    targets = np.argsort(np.where(in_use, slots, np.inf), axis=-1, kind="stable")
    key_shape = in_use.shape
    per_draw = max(1, _KEYS_PER_DRAW // max(values.size, 1))
    if shared_order:
        # a missing score moves with its answer, so each permuted table is re-centred; the
        # slots not in use sort last in slot order, as in ``targets``, so they stay put
        slot_of_target = np.argsort(targets, axis=-1)
        for done in range(0, n_permutations, per_draw):
            keys = rng.random((min(per_draw, n_permutations - done), *key_shape))
            sources = _slots_by_key(keys, in_use)
            source_of_slot = np.take_along_axis(sources, slot_of_target[None], axis=-1)
            permuted = np.take_along_axis(
                values[None], np.broadcast_to(source_of_slot, (len(keys), *values.shape)), -1
            )
            at_least += (np.abs(alignment_statistic(permuted)) >= observed).sum(axis=0)
        return np.asarray((1.0 + at_least) / (n_permutations + 1.0))
    # per-reviewer orders permute only scored slots: the centred scores and slot weights
    # keep their sets, so T of a permutation pairs the k-th scored slot's centred score with
    # the weight (slot mean - slot) of the k-th slot in key order
    count = np.maximum(in_use.sum(axis=-1, keepdims=True), 1)
    centred_y = np.where(in_use, values - np.nansum(values, -1, keepdims=True) / count, 0.0)
    centred_y_in_slot_order = np.take_along_axis(centred_y, targets, -1)  # zeros past the last
    slot_mean = np.where(in_use, slots, 0.0).sum(axis=-1, keepdims=True) / count
    scored = in_use.sum(axis=-1) >= 2
    n_scored = np.maximum(scored.sum(axis=-1), 1)
    for done in range(0, n_permutations, per_draw):
        keys = rng.random((min(per_draw, n_permutations - done), *key_shape))
        per_reviewer = _permuted_reviewer_alignment(
            keys, in_use, centred_y_in_slot_order, slot_mean
        )
        per_reviewer = np.where(scored, per_reviewer, 0.0)
        at_least += (np.abs(per_reviewer.sum(axis=-1) / n_scored) >= observed).sum(axis=0)
    return np.asarray((1.0 + at_least) / (n_permutations + 1.0))


#: below this many terms numpy's ``sum`` adds them one after another, whatever the axis
#: (past it, pairwise along a contiguous last axis)
_SEQUENTIAL_SUM_TERMS = 8


def mean_pairwise_correlation(scores_by_model: ArrayLike) -> np.ndarray:
    """Mean Pearson r over reviewer pairs, per session, on answers both scored (NaN if none).

    ``scores_by_model`` has shape (sessions, reviewers, models); pairs with fewer than 3
    common answers or a constant vector are left out of the mean.
    """
    values = np.asarray(scores_by_model, dtype=float)
    n_sessions, n_reviewers, n_models = values.shape
    # each reviewer's (models, sessions) table, so that a sum over models adds whole rows
    # of sessions (several times faster than along a last axis of a few models), in the
    # order numpy adds fewer than 8 terms; with more, models stay last as before
    if n_models < _SEQUENTIAL_SUM_TERMS:
        by_reviewer, model_axis = np.ascontiguousarray(values.transpose(1, 2, 0)), 0
    else:
        by_reviewer, model_axis = values.transpose(1, 0, 2), -1
    finite = np.isfinite(by_reviewer)
    total = np.zeros(n_sessions)
    count = np.zeros(n_sessions)

    def model_sum(terms: np.ndarray) -> np.ndarray:
        return np.asarray(terms.sum(axis=model_axis, keepdims=True))

    for a in range(n_reviewers):
        for b in range(a + 1, n_reviewers):
            x, y = by_reviewer[a], by_reviewer[b]
            both = finite[a] & finite[b]
            n = model_sum(both)
            safe_n = np.maximum(n, 1)
            xm = model_sum(np.where(both, x, 0.0)) / safe_n
            ym = model_sum(np.where(both, y, 0.0)) / safe_n
            dx = np.where(both, x - xm, 0.0)
            dy = np.where(both, y - ym, 0.0)
            denominator = np.sqrt(model_sum(dx * dx) * model_sum(dy * dy))
            usable = (n >= 3) & (denominator > 0)
            r = np.where(usable, model_sum(dx * dy) / np.where(usable, denominator, 1.0), 0.0)
            total += r.reshape(n_sessions)
            count += usable.reshape(n_sessions)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.asarray(np.where(count > 0, total / count, np.nan))


@dataclass(frozen=True)
class AmplificationScreen:
    """Per session: agreement, alignment, its p-value and whether it is flagged as suspect."""

    agreement: np.ndarray
    alignment: np.ndarray
    p_value: np.ndarray  # NaN for sessions below the agreement gate (not tested)
    suspect: np.ndarray  # agreement >= threshold and p < alpha
    expected_false_flags: float  # alpha * sessions passing the agreement gate


def amplification_screen(
    scores_by_slot: ArrayLike,
    scores_by_model: ArrayLike,
    rng: np.random.Generator,
    *,
    agreement_threshold: float = 0.7,
    significance_level: float = 0.05,
    n_permutations: int = 199,
    shared_order: bool = False,
) -> AmplificationScreen:
    """Flag sessions with agreement >= ``agreement_threshold`` and alignment p < alpha.

    The agreement gate is descriptive; the alignment test is exact under random display
    orders, so with no position effect a session is flagged with probability at most
    ``significance_level`` whatever the agreement, and the expected number of false flags
    is at most ``significance_level`` times the number of sessions passing the gate.

    Parameters
    ----------
    scores_by_slot : array_like, shape (S, R, K)
        Each session's scores by reviewer and display slot (NaN for none).
    scores_by_model : array_like, shape (S, R, M)
        The same scores by reviewer and candidate model.
    rng : numpy.random.Generator
        Source of the permutations.
    agreement_threshold : float
        The agreement gate.
    significance_level : float
        alpha of the alignment test.
    n_permutations : int
        Permutations per gated session.
    shared_order : bool
        Every reviewer of a session saw one display order.

    Returns
    -------
    AmplificationScreen
        ``agreement``, ``alignment``, ``p_value`` (NaN below the gate) and ``suspect``, each
        shape (S,), and ``expected_false_flags``.
    """
    by_slot = np.asarray(scores_by_slot, dtype=float)
    agreement = mean_pairwise_correlation(scores_by_model)
    alignment = alignment_statistic(by_slot)
    gated = np.where(np.isfinite(agreement), agreement >= agreement_threshold, False)
    # only sessions through the gate can be flagged, so only they are tested (the costly part)
    p_value = np.full(gated.shape, np.nan)
    if gated.any():
        p_value[gated] = alignment_randomization_p(
            by_slot[gated], rng, n_permutations, shared_order
        )
    suspect = gated & np.where(np.isfinite(p_value), p_value < significance_level, False)
    return AmplificationScreen(
        agreement=agreement,
        alignment=alignment,
        p_value=p_value,
        suspect=suspect,
        expected_false_flags=float(significance_level * gated.sum()),
    )
