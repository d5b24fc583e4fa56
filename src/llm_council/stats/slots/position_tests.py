"""Per-session position tests: does a score depend on the display slot a reviewer saw?

Two pieces: a randomization test of the additive model's residuals that re-draws each
reviewer's own display order (valid at any size when the orders were drawn at random),
and the slot effects fitted jointly with reviewer and answer effects, estimated only when
the design identifies them (a rank check of the small system they solve). Pure
functions: arrays in, frozen dataclasses out.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.additive_model import design_rank


@dataclass(frozen=True)
class PositionTest:
    """Between-slot variance of residuals, its randomization p-value, and slot means."""

    between_position_variance: float
    p_value: float
    n_permutations: int
    slot_means: dict[int, float]
    slot_counts: dict[int, int]


def _between_position_variance(
    slot_sums: np.ndarray, slot_counts: np.ndarray, total: float, n_cells: int
) -> np.ndarray:
    """:math:`\\frac1N \\sum_k n_k (\\bar e_k - \\bar e)^2` from slot sums (vectorized)."""
    return ((slot_sums**2 / slot_counts).sum(axis=-1) - total**2 / n_cells) / n_cells


#: display slots above this are counted with a sort instead of a table
_SLOT_TABLE_SIZE = 4096


def _slot_codes(slots: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``np.unique(slots, return_inverse=True, return_counts=True)`` for display slots.

    Slots are small non-negative integers, so one ``bincount`` gives the same sorted
    values, dense codes and counts without a sort (numpy's per-call cost dominates on a
    session's 20 cells); anything else goes through ``np.unique``.
    """
    if slots.size and int(slots.min()) >= 0 and int(slots.max()) < _SLOT_TABLE_SIZE:
        counts = np.bincount(slots)
        present = counts > 0
        code_of_slot = np.cumsum(present) - 1
        return np.flatnonzero(present), code_of_slot[slots], counts[present]
    values, codes, counts = np.unique(slots, return_inverse=True, return_counts=True)
    return values, codes.reshape(slots.shape), counts


#: groups up to this size draw from all their n! orderings, precomputed once
_ENUMERATED_GROUP_SIZE = 6


@lru_cache(maxsize=_ENUMERATED_GROUP_SIZE)
def _all_orderings(size: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(size))), dtype=np.intp)


def _groups_by_size(groups: np.ndarray) -> dict[int, np.ndarray]:
    """The cell indexes of each group, stacked per group size: ``{size: (G, size)}``, sizes
    in order of first appearance among the sorted group ids (the order draws are made in)."""
    return _groups_by_size_cached(groups.tobytes())


@lru_cache(maxsize=64)
def _groups_by_size_cached(group_bytes: bytes) -> dict[int, np.ndarray]:
    groups = np.frombuffer(group_bytes, dtype=np.intp)
    order = np.argsort(groups, kind="stable")
    _, starts, sizes = np.unique(groups[order], return_index=True, return_counts=True)
    members_by_size: dict[int, list[np.ndarray]] = {}
    for start, size in zip(starts.tolist(), sizes.tolist(), strict=True):
        members_by_size.setdefault(size, []).append(order[start : start + size])
    stacked = {size: np.array(member_lists) for size, member_lists in members_by_size.items()}
    for members in stacked.values():
        members.flags.writeable = False  # shared by every session with these groups
    return stacked


#: draw plans kept (one per seed, number of draws and group sizes: a council size is one)
_PICK_CACHE_SIZE = 64


@lru_cache(maxsize=_PICK_CACHE_SIZE)
def _ordering_picks(
    seed: int, n_draws: int, group_counts: tuple[tuple[int, int], ...]
) -> tuple[np.ndarray, ...]:
    """The ordering row each group gets in each draw, per ``(size, groups)`` bucket, drawn
    from ``default_rng(seed)`` in bucket order: exactly the integers the uncached path draws,
    so a seed gives the same p-value either way. Only for sizes that are enumerated."""
    rng = np.random.default_rng(seed)
    picks = []
    for size, count in group_counts:
        n_orderings = _all_orderings(size).shape[0]
        drawn = rng.integers(0, n_orderings, size=(count, n_draws))
        # as rows of the bucket's stacked (group, ordering) tables: group g's pick p is
        # row g * size! + p
        drawn += n_orderings * np.arange(count)[:, None]
        drawn.flags.writeable = False
        picks.append(drawn)
    return tuple(picks)


def _enumerated_tables(
    codes: np.ndarray, values: np.ndarray, members: np.ndarray, n_slots: int
) -> np.ndarray:
    """``tables[g, p, k]``: group g's residual sum at slot k under its ordering p.

    A group's cells sit at distinct slots, so each entry is one residual or 0 (no
    rounding, whatever the summation order)."""
    orderings = _all_orderings(members.shape[1])  # (size!, size)
    arranged = codes[members][:, orderings]  # (G, size!, size): slot of each cell
    n_groups, n_orderings = arranged.shape[:2]
    bins = arranged + n_slots * np.arange(n_groups * n_orderings).reshape(n_groups, -1, 1)
    # each group's values once per ordering, in the order of ``bins``
    cell_values = np.repeat(values[members], n_orderings, axis=0)
    return np.bincount(
        bins.ravel(), weights=cell_values.ravel(), minlength=n_groups * n_orderings * n_slots
    ).reshape(n_groups, n_orderings, n_slots)


def _permuted_slot_sums(
    codes: np.ndarray,
    values: np.ndarray,
    groups: np.ndarray,
    n_slots: int,
    n_draws: int,
    seed: int,
) -> np.ndarray:
    """Slot sums of the residuals under ``n_draws`` re-orderings of each group's own slots.

    Groups (reviewers) of up to :data:`_ENUMERATED_GROUP_SIZE` cells have their n!
    orderings enumerated once; a draw then picks one ordering index per group, which
    samples the same uniform distribution as shuffling at the cost of one gather. When
    every group is that small the picks depend only on the seed and the group sizes and
    are drawn once (:func:`_ordering_picks`). Larger groups are shuffled directly.
    """
    sums = np.zeros((n_draws, n_slots))
    members_by_size = _groups_by_size(groups)
    if max(members_by_size) <= _ENUMERATED_GROUP_SIZE:
        counts = tuple((size, members.shape[0]) for size, members in members_by_size.items())
        all_picks = _ordering_picks(seed, n_draws, counts)
        for members, picks in zip(members_by_size.values(), all_picks, strict=True):
            tables = _enumerated_tables(codes, values, members, n_slots)
            # row (g, pick) of the stacked tables: a row copy per draw (np.take) instead of
            # fancy indexing's element-wise gather, summed over groups in the same order
            sums += tables.reshape(-1, n_slots).take(picks, axis=0).sum(axis=0)
        return sums
    rng = np.random.default_rng(seed)
    for size, members in members_by_size.items():
        if size <= _ENUMERATED_GROUP_SIZE:
            tables = _enumerated_tables(codes, values, members, n_slots)
            picks = rng.integers(0, tables.shape[1], size=(members.shape[0], n_draws))
            sums += tables[np.arange(members.shape[0])[:, None], picks].sum(axis=0)
            continue
        for cells in members:
            shuffled = rng.permuted(np.broadcast_to(codes[cells], (n_draws, size)), axis=1)
            flat = (shuffled + n_slots * np.arange(n_draws)[:, None]).ravel()
            sums += np.bincount(
                flat, weights=np.tile(values[cells], n_draws), minlength=n_draws * n_slots
            ).reshape(n_draws, n_slots)
    return sums


def position_randomization_test(
    residuals: ArrayLike,
    display_indexes: ArrayLike,
    reviewer_indexes: ArrayLike,
    *,
    n_permutations: int = 999,
    seed: int = 0,
) -> PositionTest | None:
    r"""Does the residual score depend on the display slot? Randomization test.

    Statistic: the count-weighted variance of the slot means of the residuals,

    .. math:: V = \frac1N \sum_k n_k (\bar e_k - \bar e)^2

    (the one-way ANOVA between-groups sum of squares over N). Each reviewer's display
    order was drawn uniformly at random and independently of the answers, so under "no
    position effect" every re-shuffle of a reviewer's slots among its own scored cells
    is equally likely. The p-value :math:`(1 + \#\{V_b \ge V\}) / (B + 1)` over B such
    re-shuffles is therefore valid at any sample size (Fisher 1935, *The Design of
    Experiments*, sec. 21; Phipson & Smyth 2010, Stat. Appl. Genet. Mol. Biol. 9:39 for
    the +1). The residuals must not depend on the slots (e.g. from a model fitted
    without them), which holds for
    :func:`~llm_council.stats.design.additive_model.fit_additive_two_way`.

    Parameters
    ----------
    residuals : array_like, shape (n,)
        Residual scores, not depending on the slots.
    display_indexes : array_like of int, shape (n,)
        Each cell's display slot.
    reviewer_indexes : array_like of int, shape (n,)
        Each cell's reviewer (slots are re-shuffled within a reviewer).
    n_permutations : int
        B, the re-shuffles.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    PositionTest or None
        V, its p-value, B, and the slot means and counts; None when there is nothing to test.
    """
    residual_values = np.asarray(residuals, dtype=float)
    slots = np.asarray(display_indexes, dtype=np.intp)
    groups = np.asarray(reviewer_indexes, dtype=np.intp)
    n_cells = residual_values.size
    if n_cells < 2 or slots.shape != residual_values.shape or groups.shape != slots.shape:
        return None
    slot_values, slot_codes, counts = _slot_codes(slots)
    if slot_values.size < 2:
        return None
    n_slots = slot_values.size
    slot_counts = counts.astype(float)
    total = float(residual_values.sum())
    observed_sums = np.bincount(slot_codes, weights=residual_values, minlength=n_slots)
    observed = float(_between_position_variance(observed_sums, slot_counts, total, n_cells))

    permuted_sums = _permuted_slot_sums(
        slot_codes, residual_values, groups, n_slots, n_permutations, seed
    )
    null_values = _between_position_variance(permuted_sums, slot_counts, total, n_cells)
    # a relative tolerance so floating-point ties with the observed value count as >=
    exceed = int(np.count_nonzero(null_values >= observed * (1 - 1e-9) - 1e-12))
    p_value = (1 + exceed) / (n_permutations + 1)
    slot_list = slot_values.tolist()
    slot_means = dict(zip(slot_list, (observed_sums / slot_counts).tolist(), strict=True))
    slot_count_map = dict(zip(slot_list, counts.tolist(), strict=True))
    return PositionTest(
        between_position_variance=observed,
        p_value=p_value,
        n_permutations=n_permutations,
        slot_means=slot_means,
        slot_counts=slot_count_map,
    )


@dataclass(frozen=True)
class SlotEffects:
    """Display-slot effects estimated jointly with reviewer and answer effects."""

    effects: dict[int, float]
    counts: dict[int, int]
    weighted_variance: float


def slot_effects_identified(
    design: ArrayLike, slot_indicators: ArrayLike, *, design_rank_known: int | None = None
) -> bool:
    r"""Whether every slot contrast is estimable next to the reviewer and answer effects.

    The slot effects :math:`\gamma` of ``y = X b + Z \gamma + e`` are all estimable iff
    :math:`\operatorname{rank}[X\;Z] = \operatorname{rank} X + \operatorname{cols} Z`
    (Searle 1987, sec. 5.4: estimability), checked by SVD with
    :func:`~llm_council.stats.design.additive_model.design_rank`. It fails when every reviewer
    saw the same order (slot = answer) or when too few reviewers saw too few orders.
    ``design_rank_known``: rank X when the caller already has it (it saves one SVD).
    """
    x = np.asarray(design, dtype=float)
    z = np.asarray(slot_indicators, dtype=float)
    if z.ndim != 2 or z.shape[1] == 0:
        return False
    rank_x = design_rank(x) if design_rank_known is None else design_rank_known
    return design_rank(np.concatenate([x, z], axis=1)) == rank_x + z.shape[1]


#: :math:`Z^TMZ` is singular when its smallest eigenvalue is below this fraction of the
#: largest slot count (the largest eigenvalue of :math:`Z^TZ`, which bounds it). Over
#: 20,000 random 3-8 member designs (shared and per-reviewer orders, 15% of cells
#: missing) identified designs had ratios of 1.2e-3 or more and confounded ones 5e-15 or
#: less, and this split agreed with the SVD rank test of :func:`slot_effects_identified`
#: on every one.
_GRAM_RANK_TOLERANCE = 1e-9


def joint_slot_effects(
    design: ArrayLike,
    residuals: ArrayLike,
    display_indexes: ArrayLike,
    covariance_unscaled: ArrayLike | None = None,
    *,
    annihilator: ArrayLike | None = None,
) -> SlotEffects | None:
    r"""Slot effects :math:`\hat\gamma_k` of the model score = mean + reviewer + answer + slot.

    ``design`` is the additive model's X and ``residuals`` its residuals e. By
    Frisch-Waugh-Lovell, with :math:`M = I - X X^+` and slot indicators Z (first slot as
    base), :math:`\hat\gamma = (Z^T M Z)^{-1} Z^T e` (since :math:`Me = e`);
    ``covariance_unscaled`` is :math:`(X^TX)^{-1}` when the caller has it (X then has full
    column rank), ``annihilator`` M when the caller has it. Slot means of e
    are shrunk towards 0 because the answer and reviewer effects soak up part of a slot
    effect; :math:`\hat\gamma` is not. Returned centred (count-weighted mean 0) with the
    count-weighted variance :math:`\frac1N\sum_k n_k \hat\gamma_k^2` in points squared.
    Returns ``None`` when the slot effects are not identified: a near-singular system
    would give any number. Since :math:`\operatorname{rank}[X\;Z] = \operatorname{rank} X
    + \operatorname{rank} MZ` and :math:`\operatorname{rank} MZ = \operatorname{rank}
    Z^TMZ`, that is :func:`slot_effects_identified`'s test, read off the eigenvalues of
    the small :math:`Z^TMZ` the estimate needs anyway (:data:`_GRAM_RANK_TOLERANCE`).
    Reference: Lovell (1963), JASA 58:993-1010; Searle (1987), ch. 6.

    Parameters
    ----------
    design : array_like, shape (n, p)
        The additive model's X over its n cells.
    residuals : array_like, shape (n,)
        Its residuals e.
    display_indexes : array_like of int, shape (n,)
        Each cell's display slot.
    covariance_unscaled : array_like, shape (p, p), optional
        (X'X)^-1, when X has full column rank.
    annihilator : array_like, shape (n, n), optional
        M = I - X X^+.

    Returns
    -------
    SlotEffects or None
        Centred ``effects`` and ``counts`` by slot and the count-weighted variance; None when
        the slot effects are not identified.
    """
    x = np.asarray(design, dtype=float)
    e = np.asarray(residuals, dtype=float)
    slots = np.asarray(display_indexes, dtype=np.intp)
    if e.size < 2 or x.shape[0] != e.size or slots.shape != e.shape:
        return None
    slot_values, slot_codes, slot_counts = _slot_codes(slots)
    n_slots = slot_values.size
    if n_slots < 2:
        return None
    indicators = (slot_codes[:, None] == np.arange(1, n_slots)[None, :]).astype(float)
    if annihilator is None:
        inverse_gram = (
            np.linalg.pinv(x.T @ x)
            if covariance_unscaled is None
            else np.asarray(covariance_unscaled)
        )
        annihilator = np.eye(e.size) - x @ inverse_gram @ x.T
    gram = indicators.T @ np.asarray(annihilator) @ indicators
    # one eigendecomposition both decides identifiability and solves the system
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    if not eigenvalues[0] > _GRAM_RANK_TOLERANCE * float(slot_counts[1:].max()):
        return None
    gamma = eigenvectors @ ((eigenvectors.T @ (indicators.T @ e)) / eigenvalues)
    counts = slot_counts.astype(float)
    effects = np.concatenate([[0.0], gamma])
    effects -= (counts @ effects) / e.size
    slot_list = slot_values.tolist()
    return SlotEffects(
        effects=dict(zip(slot_list, effects.tolist(), strict=True)),
        counts=dict(zip(slot_list, slot_counts.tolist(), strict=True)),
        weighted_variance=float(counts @ effects**2) / e.size,
    )
