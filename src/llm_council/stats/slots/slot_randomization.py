"""A display-slot test that stays valid where the cluster-robust Wald covariance is singular.

A judge that always ranks Response A first gives slot A the same rank points in every
session. Its slot-A effect then has a cluster-robust variance of exactly zero, the Wald
covariance of the slot contrasts is singular, and a pseudo-inverse drops exactly the
direction of the effect: the strongest possible evidence printed as "none detected"
(issue 23). This module replaces the Wald p-value in that case by a randomization test
over the display orders, which needs no covariance at all.

Statistic: the count-weighted variance of the slot means of ``values`` (each score minus
its reviewer's mean in the session), :math:`V = \\frac1N \\sum_k n_k (\\bar v_k - \\bar v)^2`.
Under "no position effect" and display orders drawn uniformly at random, every re-shuffle
of a unit's slots among its own cells is equally likely, so
:math:`p = (1 + \\#\\{V_b \\ge V\\}) / (B + 1)` over B re-shuffles is valid at any sample
size (Fisher 1935, *The Design of Experiments*, sec. 21; Phipson & Smyth 2010, Stat. Appl.
Genet. Mol. Biol. 9:39). The re-shuffling is
:func:`~llm_council.stats.slots.position_tests.position_randomization_test`'s (the per-session
audit's test); this module only chooses the randomized units:

- one unit per reviewer and session when orders were drawn per reviewer;
- one unit per session when every reviewer of a session saw one shared order (the
  reference design): the values are then first averaged per (session, model), since one
  order was drawn for all of them and re-shuffling reviewers apart would be a different
  design.

A first stage of B = 999 re-shuffles gives :math:`p_1 = (1 + c_1)/1000`. When fewer than
10 of them reach the observed value (:math:`p_1 \\le 0.01`), the test goes on to
:math:`N = 19{,}999` re-shuffles in all (fresh streams) and reports
:math:`p = (1 + c)/(N + 1)`, so the smallest p-value is 1/20,000 instead of 0.001. Why: the
report-wide procedure gives one reviewer's position test a level far below 0.001 (ADR
0060), which a p floored at 0.001 could never reach. Valid: think of all N draws as made;
for :math:`u < 0.011` the event :math:`p \\le u` needs the refined branch and is within
the full N-draw test's :math:`\\{p_N \\le u\\}`; for :math:`u \\ge 0.011` it is within
:math:`\\{p_1 \\le u\\}`; either has probability at most u (the two-stage argument of
Besag & Clifford 1991, Biometrika 78(2), with a fixed second stage).

Above :data:`MAX_UNITS` units a seeded random subset of that many is used: a
randomization test on units chosen independently of the data is still exact, and the
draws' memory (units x B x slots floats) stays bounded.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.dense_ids import dense_codes
from llm_council.stats.slots.position_tests import PositionTest, position_randomization_test

#: randomized units kept (a seeded random subset beyond): the permuted slot sums of 500
#: units x 999 draws x 5 slots are 20 MB, and the cached draw plan 4 MB; a deterministic
#: effect reaches the smallest p-value with a few dozen sessions
MAX_UNITS = 500

#: re-shuffles: the p-value's resolution is 1 / (B + 1)
N_PERMUTATIONS = 999

#: a first stage with fewer exceedances than this goes on to N_REFINED_PERMUTATIONS draws
REFINE_BELOW_EXCEEDANCES = 10

#: re-shuffles in all when refined: the p-value's resolution is then 1 / 20,000
N_REFINED_PERMUTATIONS = 19_999


def randomization_units(
    session: ArrayLike, group: ArrayLike, model: ArrayLike, slot: ArrayLike, values: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values, slots, units)`` to re-shuffle: per (session, model) means with the
    session as the unit when every model of every session sat at one slot for all its
    reviewers (a shared order); else the cells as given, ``group`` (reviewer-session) the
    unit.

    Parameters
    ----------
    session, group, model, slot : array_like of int, shape (n,)
        Each cell's session, reviewer-session group, candidate model and display slot.
    values : array_like, shape (n,)
        Each cell's value (not depending on the slots under the null).

    Returns
    -------
    values, slots, units : ndarray, shape (m,)
        What to re-shuffle (m = n, or the number of (session, model) means).
    """
    session_ids = np.asarray(session, dtype=np.int64)
    model_ids = np.asarray(model, dtype=np.int64)
    slots = np.asarray(slot, dtype=np.int64)
    cell_values = np.asarray(values, dtype=float)
    groups = np.asarray(group, dtype=np.int64)
    _, answer = dense_codes(session_ids * (int(model_ids.max(initial=0)) + 1) + model_ids)
    n_answers = int(answer.max(initial=-1)) + 1
    lowest = np.full(n_answers, np.iinfo(np.int64).max)
    highest = np.full(n_answers, np.iinfo(np.int64).min)
    np.minimum.at(lowest, answer, slots)
    np.maximum.at(highest, answer, slots)
    shared = bool(np.all(lowest == highest))
    # more reviewer-sessions than sessions: several reviewers share each session's order
    several_reviewers = dense_codes(groups)[0].size > dense_codes(session_ids)[0].size
    if not (shared and several_reviewers):
        return cell_values, slots, groups
    counts = np.bincount(answer, minlength=n_answers).astype(float)
    means = np.bincount(answer, weights=cell_values, minlength=n_answers) / counts
    _, first = np.unique(answer, return_index=True)  # a row of each (session, model)
    return means, slots[first], session_ids[first]


def slot_randomization_test(
    values: ArrayLike,
    slots: ArrayLike,
    units: ArrayLike,
    *,
    n_permutations: int = N_PERMUTATIONS,
    seed: int = 0,
    max_units: int = MAX_UNITS,
) -> PositionTest | None:
    """The randomization test of the module docstring on at most ``max_units`` units.

    ``values`` must not depend on the slots under the null (a score minus its reviewer's
    session mean qualifies). None when fewer than two slots or cells are left.

    Parameters
    ----------
    values : array_like, shape (n,)
        Values not depending on the slots under the null.
    slots : array_like of int, shape (n,)
        Each value's slot.
    units : array_like of int, shape (n,)
        The unit within which slots are re-shuffled.
    n_permutations : int
        B, the re-shuffles.
    seed : int
        Seed of ``numpy.random.default_rng``.
    max_units : int
        Units kept at most (a seeded random subset beyond it).

    Returns
    -------
    PositionTest or None
        The between-slot variance, its p-value, B, and the slot means and counts.
    """
    cell_values = np.asarray(values, dtype=float)
    cell_slots = np.asarray(slots, dtype=np.intp)
    unit_ids, codes = dense_codes(np.asarray(units, dtype=np.int64))
    if unit_ids.size > max_units:
        keep_units = np.zeros(unit_ids.size, dtype=bool)
        chosen = np.random.default_rng(seed).choice(unit_ids.size, max_units, replace=False)
        keep_units[chosen] = True
        keep = keep_units[codes]
        cell_values, cell_slots, codes = cell_values[keep], cell_slots[keep], codes[keep]
    unit_codes = codes.astype(np.intp)
    first = position_randomization_test(
        cell_values, cell_slots, unit_codes, n_permutations=n_permutations, seed=seed
    )
    if first is None:
        return None
    exceeded = round(first.p_value * (n_permutations + 1)) - 1
    if exceeded >= REFINE_BELOW_EXCEEDANCES or n_permutations >= N_REFINED_PERMUTATIONS:
        return first
    drawn, stream = n_permutations, 1
    while drawn < N_REFINED_PERMUTATIONS:
        size = min(n_permutations, N_REFINED_PERMUTATIONS - drawn)
        more = position_randomization_test(
            cell_values, cell_slots, unit_codes, n_permutations=size, seed=seed + stream * 1_000_003
        )
        assert more is not None  # the same cells as the first stage
        exceeded += round(more.p_value * (size + 1)) - 1
        drawn, stream = drawn + size, stream + 1
    return replace(first, p_value=(1 + exceeded) / (drawn + 1), n_permutations=drawn)
