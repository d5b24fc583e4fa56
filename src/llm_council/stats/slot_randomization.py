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
:func:`~llm_council.stats.position_tests.position_randomization_test`'s (the per-session
audit's test); this module only chooses the randomized units:

- one unit per reviewer and session when orders were drawn per reviewer;
- one unit per session when every reviewer of a session saw one shared order (the
  reference design): the values are then first averaged per (session, model), since one
  order was drawn for all of them and re-shuffling reviewers apart would be a different
  design.

The smallest p-value is :math:`1 / (B + 1)` (0.001 at B = 999), reached by a deterministic
effect over enough sessions. Above :data:`MAX_UNITS` units a seeded random subset of that
many is used: a randomization test on units chosen independently of the data is still
exact, and the draws' memory (units x B x slots floats) stays bounded.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.dense_ids import dense_codes
from llm_council.stats.position_tests import PositionTest, position_randomization_test

#: randomized units kept (a seeded random subset beyond): the permuted slot sums of 500
#: units x 999 draws x 5 slots are 20 MB, and the cached draw plan 4 MB; a deterministic
#: effect reaches the smallest p-value with a few dozen sessions
MAX_UNITS = 500

#: re-shuffles: the p-value's resolution is 1 / (B + 1)
N_PERMUTATIONS = 999


def randomization_units(
    session: ArrayLike, group: ArrayLike, model: ArrayLike, slot: ArrayLike, values: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(values, slots, units)`` to re-shuffle: per (session, model) means with the
    session as the unit when every model of every session sat at one slot for all its
    reviewers (a shared order); else the cells as given, ``group`` (reviewer-session) the
    unit."""
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
    return position_randomization_test(
        cell_values,
        cell_slots,
        codes.astype(np.intp),
        n_permutations=n_permutations,
        seed=seed,
    )
