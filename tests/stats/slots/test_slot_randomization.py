"""The singular-covariance check of the Wald test and the slot randomization test."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.design.joint_model import covariance_rank, wald_test
from llm_council.stats.slots.slot_randomization import randomization_units, slot_randomization_test


def test_covariance_rank_counts_directions_that_varied() -> None:
    assert covariance_rank(np.diag([2.0, 1.0, 0.5])) == 3
    assert covariance_rank(np.diag([2.0, 1.0, 0.0])) == 2
    assert covariance_rank(np.zeros((2, 2))) == 0
    # the outer product of one vector has rank 1, whatever its round-off
    v = np.array([1.0, -2.0, 3.0])
    assert covariance_rank(np.outer(v, v) + 1e-15) == 1


def test_wald_test_reports_a_singular_covariance_and_keeps_its_value_otherwise() -> None:
    beta = np.array([1.0, 0.5])
    full = np.array([[0.2, 0.05], [0.05, 0.1]])
    test = wald_test(beta, full, 20)
    assert not test.singular
    # reference: W = b' V^-1 b by solve; F = (C - q) / (q (C - 1)) W on (q, C - q) df
    wald = float(beta @ np.linalg.solve(full, beta))
    f_value = (20 - 2) / (2 * 19) * wald
    assert test.f_statistic == pytest.approx(f_value, rel=1e-12)
    assert test.p_value == pytest.approx(stats.f.sf(f_value, 2, 18), rel=1e-9)
    # slot A never varied: its variance and covariances are 0, the pseudo-inverse drops it
    singular = np.array([[0.0, 0.0], [0.0, 0.1]])
    degenerate = wald_test(np.array([1.5, 0.0]), singular, 30)
    assert degenerate.singular
    assert degenerate.f_statistic == pytest.approx(0.0)  # the bug: the effect is invisible


def _between_slot_variance(values: np.ndarray, slots: np.ndarray) -> float:
    mean = values.mean()
    return float(
        sum((slots == k).sum() * (values[slots == k].mean() - mean) ** 2 for k in set(slots))
        / values.size
    )


def test_slot_randomization_matches_full_enumeration() -> None:
    """Three units of three cells: all 6^3 = 216 re-orderings enumerated by hand."""
    values = np.array([2.0, 0.5, -1.0, 1.0, 1.5, -0.5, 0.3, -0.2, 0.9])
    slots = np.array([0, 1, 2, 2, 0, 1, 0, 2, 1])
    units = np.repeat([0, 1, 2], 3)
    observed = _between_slot_variance(values, slots)
    null = []
    for orders in itertools.product(itertools.permutations(range(3)), repeat=3):
        shuffled = np.concatenate(
            [slots[3 * unit : 3 * unit + 3][list(order)] for unit, order in enumerate(orders)]
        )
        null.append(_between_slot_variance(values, shuffled))
    exact = float(np.mean(np.array(null) >= observed - 1e-12))
    test = slot_randomization_test(values, slots, units, n_permutations=20_000, seed=3)
    assert test is not None
    assert test.between_position_variance == pytest.approx(observed, rel=1e-12)
    # Monte Carlo p within 4 binomial standard errors of the exact one
    assert abs(test.p_value - exact) < 4 * np.sqrt(exact * (1 - exact) / 20_000) + 1e-4


@pytest.mark.parametrize("n_slots", [2, 3, 4, 5])
def test_a_deterministic_slot_effect_gets_the_smallest_p_value(n_slots: int) -> None:
    """Slot 0 always holds the top rank points over 30 units: exact p is at most
    (1 / n_slots)^30, far below 1 / 20,000, so no re-shuffle of the first stage (999) nor of
    the refined stage (19,999 in all) reaches it: the test returns 1 / (19,999 + 1)."""
    rng = np.random.default_rng(n_slots)
    values, slots, units = [], [], []
    for unit in range(30):
        order = rng.permutation(n_slots)
        points = np.arange(n_slots, 0, -1, dtype=float)
        points[1:] = rng.permutation(points[1:])
        values += (points - points.mean()).tolist()
        slots += [0] + order[order != 0].tolist()
        units += [unit] * n_slots
    test = slot_randomization_test(values, slots, units)
    assert test is not None
    assert test.p_value == pytest.approx(1 / 20_000)
    assert test.n_permutations == 19_999


def test_the_two_stage_p_value_holds_its_level_under_no_slot_effect() -> None:
    """Null data (values independent of the slots): P(p <= u) <= u + 3 SE at u = 0.05 and
    0.01 (3 SE: a valid test fails this about once in 700 runs), and a first stage with 10+
    exceedances is returned unrefined (999 draws)."""
    rng = np.random.default_rng(4)
    p_values, draws = [], []
    for _ in range(800):
        values = rng.normal(size=20 * 4)
        slots = np.concatenate([rng.permutation(4) for _ in range(20)])
        units = np.repeat(np.arange(20), 4)
        test = slot_randomization_test(values, slots, units, seed=int(rng.integers(1 << 30)))
        assert test is not None
        p_values.append(test.p_value)
        draws.append(test.n_permutations)
    p = np.asarray(p_values)
    for level in (0.05, 0.01):
        assert np.mean(p <= level) <= level + 3 * np.sqrt(level * (1 - level) / p.size)
    refined = np.asarray(draws) == 19_999
    assert np.all(p[~refined] > 0.01) and np.all(np.asarray(draws)[~refined] == 999)


def test_units_are_sessions_when_reviewers_share_an_order() -> None:
    session = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    group = np.array([0, 0, 1, 1, 2, 2, 3, 3])  # two reviewers per session
    model = np.array([0, 1, 0, 1, 0, 1, 0, 1])
    slot = np.array([0, 1, 0, 1, 1, 0, 1, 0])  # one order per session
    values = np.array([1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 1.0, -1.0])
    shared_values, shared_slots, shared_units = randomization_units(
        session, group, model, slot, values
    )
    # per (session, model) means, the session as the unit
    assert shared_values.tolist() == [0.75, -0.75, 1.5, -1.5]
    assert shared_slots.tolist() == [0, 1, 1, 0]
    assert shared_units.tolist() == [0, 0, 1, 1]
    own = np.array([0, 1, 1, 0, 1, 0, 0, 1])  # each reviewer its own order
    cells = randomization_units(session, group, model, own, values)
    assert cells[0].tolist() == values.tolist() and cells[2].tolist() == group.tolist()


def test_at_most_max_units_are_kept() -> None:
    rng = np.random.default_rng(0)
    units = np.repeat(np.arange(50), 3)
    slots = np.tile([0, 1, 2], 50)
    values = rng.standard_normal(150)
    test = slot_randomization_test(values, slots, units, max_units=10, n_permutations=99)
    assert test is not None
    assert sum(test.slot_counts.values()) == 30
