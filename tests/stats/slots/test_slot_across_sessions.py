"""Across-session slot effects of centred scores: hand-derived CR1, scipy's t and F, identification."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.slots.slot_across_sessions import fit_centred_slots, slots_identified
from llm_council.stats.slots.slot_identification import slot_effects_identified

SLOT_BONUS = np.array([0.5, 0.0, -0.2])


def _shared_order_sessions(n_sessions: int, n_reviewers: int, seed: int, fixed: bool = False):  # type: ignore[no-untyped-def]
    """One display order per session (the reference design); every reviewer scores all 3."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sessions):
        quality = rng.normal(0, 1.0, size=3)
        order = np.arange(3) if fixed else rng.permutation(3)
        for r in range(n_reviewers):
            for slot, model in enumerate(order):
                score = 5 + 0.4 * r + quality[model] + SLOT_BONUS[slot] + rng.normal()
                rows.append((s, s * n_reviewers + r, model, slot, score))
    session, group, model, slot, score = (np.array(column) for column in zip(*rows, strict=True))
    centred = score - (np.bincount(group, score) / np.bincount(group))[group]
    return session, group, model, slot, centred


def test_effects_are_slot_means_and_se_is_the_hand_cr1() -> None:
    session, group, _, slot, centred = _shared_order_sessions(25, 3, seed=4)
    effects = fit_centred_slots(session, group, slot, centred, 3)
    n, k, g = centred.size, 3, 25
    means = np.array([centred[slot == j].mean() for j in range(3)])
    assert effects.estimates == pytest.approx(means, abs=1e-12)
    # CR1 with dummy columns: V_jj = g/(g-1) (n-1)/(n-k) sum_c (sum_{i in c, slot j} e_i)^2 / n_j^2
    residual = centred - means[slot]
    t_crit = stats.t.ppf(0.975, g - 1)
    for j in range(3):
        cluster_sums = np.bincount(session[slot == j], residual[slot == j], minlength=g)
        variance = (
            g / (g - 1) * (n - 1) / (n - k) * (cluster_sums**2).sum() / (slot == j).sum() ** 2
        )
        se = np.sqrt(variance)
        assert effects.ci_high[j] - effects.estimates[j] == pytest.approx(t_crit * se, rel=1e-9)
        expected_p = 2 * stats.t.sf(abs(means[j] / se), g - 1)
        assert effects.p_values[j] == pytest.approx(expected_p, rel=1e-9)
    assert effects.n_clusters == g
    assert effects.wald_df == (2, g - 2)
    assert effects.wald_p == pytest.approx(stats.f.sf(effects.wald_f, 2, g - 2), rel=1e-9)


def test_trend_is_the_within_group_slope() -> None:
    session, group, _, slot, centred = _shared_order_sessions(40, 4, seed=5)
    effects = fit_centred_slots(session, group, slot, centred, 3)
    # slope of y on the slot demeaned within each reviewer-session (Frisch-Waugh-Lovell)
    demeaned = slot - (np.bincount(group, slot) / np.bincount(group))[group]
    slope = float(demeaned @ centred / (demeaned @ demeaned))
    assert effects.trend == pytest.approx(slope, abs=1e-12)
    assert effects.trend < 0  # slot A +0.5, slot C -0.2: primacy
    assert effects.trend_ci[0] < slope < effects.trend_ci[1]


def test_a_planted_slot_effect_is_found_and_a_null_is_not() -> None:
    session, group, _, slot, centred = _shared_order_sessions(800, 5, seed=6)
    planted = fit_centred_slots(session, group, slot, centred, 3)
    assert planted.wald_p < 1e-6
    assert planted.estimates[0] - planted.estimates[2] == pytest.approx(0.7, abs=0.15)
    shuffled = np.random.default_rng(0).permutation(slot.size)
    null = fit_centred_slots(session, group, slot, centred[shuffled], 3)
    assert null.wald_p > 0.001


def test_identification_matches_the_rank_check() -> None:
    for seed, fixed in ((1, False), (2, True)):
        session, group, model, slot, _ = _shared_order_sessions(12, 3, seed=seed, fixed=fixed)
        mine = slots_identified(group, model, slot, 3)
        assert mine == slot_effects_identified(group, model, slot)
        assert mine is (not fixed)


def test_degenerate_inputs() -> None:
    assert not slots_identified(np.array([], dtype=int), np.array([], dtype=int), np.array([]), 3)
    assert not slots_identified(np.zeros(3, dtype=int), np.arange(3), np.arange(3), 1)
    # an always-slot-A judge on rank points: zero variance at every slot, a singular Wald
    session = np.repeat(np.arange(10), 3)
    slot = np.tile(np.arange(3), 10)
    centred = np.tile([1.0, 0.0, -1.0], 10)
    effects = fit_centred_slots(session, session, slot, centred, 3)
    assert effects.estimates == pytest.approx([1.0, 0.0, -1.0])
    assert effects.wald_singular
    assert np.isnan(effects.p_values).all()  # se 0: no p-value, not a spurious 0


def test_bad_codes_raise_one_clear_error() -> None:
    session = np.repeat(np.arange(4), 3)
    slot = np.tile(np.arange(3), 4)
    centred = np.zeros(12)
    with pytest.raises(ValueError, match=r"slot codes must lie in 0\.\.1, got 0\.\.2"):
        fit_centred_slots(session, session, slot, centred, 2)
    with pytest.raises(ValueError, match="one shape"):
        fit_centred_slots(session[:-1], session, slot, centred, 3)
    with pytest.raises(ValueError, match="finite"):
        fit_centred_slots(session, session, slot, np.r_[centred[:-1], np.nan], 3)
    with pytest.raises(ValueError, match="slot codes"):
        slots_identified(session, slot, slot - 1, 3)


def test_nine_integer_judges_with_holes_and_a_degenerate_one() -> None:
    """9 reviewers, integer scores 1-10 (many ties), 15% of cells missing, and one judge
    that gives every answer the same score (its centred scores are all 0)."""
    rng = np.random.default_rng(9)
    rows = []
    for s in range(150):
        quality = rng.normal(0, 1.0, size=4)
        order = rng.permutation(4)
        for r in range(9):
            for slot, model in enumerate(order):
                if rng.random() < 0.15:
                    continue
                raw = 6 + quality[model] + (1.0 if slot == 0 else 0.0) + rng.normal()
                score = 7.0 if r == 8 else float(np.clip(np.rint(raw), 1, 10))
                rows.append((s, s * 9 + r, model, slot, score))
    session, group, model, slot, score = (np.array(c) for c in zip(*rows, strict=True))
    centred = score - (np.bincount(group, score) / np.bincount(group))[group]
    assert slots_identified(group, model, slot, 4)
    effects = fit_centred_slots(session, group, slot, centred, 4)
    means = np.array([centred[slot == j].mean() for j in range(4)])
    assert effects.estimates == pytest.approx(means, abs=1e-12)
    assert effects.wald_p < 1e-6  # slot A +1 point for 8 of 9 judges
    assert effects.estimates[0] > 0.4
    assert effects.trend < 0
    judge = group % 9 == 8
    flat = fit_centred_slots(session[judge], group[judge], slot[judge], centred[judge], 4)
    assert flat.estimates == pytest.approx(np.zeros(4), abs=1e-12)
    assert np.isnan(flat.p_values).all()
