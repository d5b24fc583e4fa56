"""fit_reviewer_effects against a direct least-squares fit and known effects (ADR 0046)."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.reviewers.reviewer_effects import fit_reviewer_effects, james_stein_factor


def _draw(seed: int, n_sessions: int = 200, noise: float = 0.5) -> dict[str, np.ndarray]:
    """4 reviewers score 4 answers a session (self left out: 3 each), per-reviewer orders.
    Reviewer 0: leniency -2; reviewer 1: +1.5 at slot 0; reviewer 2: 1 point per doubling."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sessions):
        quality = rng.normal(6, 1, 4)
        log2_len = rng.normal(10, 0.7, 4)
        centred = log2_len - log2_len.mean()
        for r in range(4):
            order = [c for c in rng.permutation(4) if c != r]
            for slot, c in enumerate(order):
                y = quality[c] + noise * rng.standard_normal()
                y += -2.0 * (r == 0) + 1.5 * (r == 1 and slot == 0) + 1.0 * (r == 2) * centred[c]
                rows.append((s * 4 + c, r, slot, centred[c], y))
    a = np.array(rows)
    return {
        "answer": a[:, 0].astype(int),
        "reviewer": a[:, 1].astype(int),
        "slot": a[:, 2].astype(int),
        "x": a[:, 3],
        "y": a[:, 4],
    }


def test_known_effects_are_recovered_relative_to_the_other_reviewers() -> None:
    d = _draw(1)
    effects = fit_reviewer_effects(d["answer"], d["reviewer"], d["slot"], d["x"], d["y"], 4)
    assert all(e is not None for e in effects)
    lenient = [e.leniency for e in effects]  # type: ignore[union-attr]
    # uncentred: -2, 1.5 / 3 slots = 0.5, 0, 0; their mean -0.375, so centred:
    # -1.625, 0.875, 0.375, 0.375
    assert lenient == pytest.approx([-1.625, 0.875, 0.375, 0.375], abs=0.1)
    # reviewer 1's slot effects: +1.5 at slot 0, centred over its 3 slots: +1, -0.5, -0.5
    assert effects[1].slot_effects == pytest.approx((1.0, -0.5, -0.5), abs=0.15)  # type: ignore[union-attr]
    # slopes centred over reviewers: 1 - 1/4 = 0.75 for reviewer 2, -0.25 for the others
    slopes = [e.length_slope for e in effects]  # type: ignore[union-attr]
    assert slopes[2] == pytest.approx(0.75, abs=0.12)


def test_the_backfit_equals_one_least_squares_fit_with_answer_dummies() -> None:
    """Without shrinkage in the way (large effects, small noise) the backfitted leniency of
    each reviewer equals the joint OLS fit of y on answer dummies + reviewer x slot dummies
    + reviewer x length, solved directly with numpy's lstsq (an independent reference)."""
    d = _draw(2, n_sessions=60, noise=0.05)
    n_answers = int(d["answer"].max()) + 1
    _, answer = np.unique(d["answer"], return_inverse=True)
    n_answers = int(answer.max()) + 1
    columns = [np.eye(n_answers)[answer]]
    for r in range(4):
        mine = d["reviewer"] == r
        for slot in range(3):
            columns.append((mine & (d["slot"] == slot)).astype(float)[:, None])
        columns.append((mine * d["x"])[:, None])
    design = np.hstack(columns)
    beta = np.linalg.lstsq(design, d["y"], rcond=None)[0]
    # lstsq's minimum-norm solution is not unique in the constant; contrasts are
    per_reviewer = beta[n_answers:].reshape(4, 4)
    leniency = per_reviewer[:, :3].mean(axis=1)
    slope = per_reviewer[:, 3]
    effects = fit_reviewer_effects(d["answer"], d["reviewer"], d["slot"], d["x"], d["y"], 4)
    fitted = np.array([e.leniency for e in effects])  # type: ignore[union-attr]
    assert fitted - fitted.mean() == pytest.approx(leniency - leniency.mean(), abs=0.02)
    fitted_slopes = np.array([e.length_slope for e in effects])  # type: ignore[union-attr]
    assert fitted_slopes == pytest.approx(slope - slope.mean(), abs=0.02)


def test_no_bias_shrinks_most_effects_to_nothing() -> None:
    rng = np.random.default_rng(3)
    n = 3000
    answer = np.repeat(np.arange(n // 3), 3)
    reviewer = np.tile(np.arange(3), n // 3)
    slot = rng.integers(0, 3, n)
    y = rng.normal(0, 1, n // 3)[answer] + rng.standard_normal(n)
    effects = fit_reviewer_effects(answer, reviewer, slot, np.zeros(n), y, 3)
    for effect in effects:
        assert effect is not None
        assert abs(effect.leniency) < 0.1
        assert max(abs(v) for v in effect.slot_effects) < 0.15


def test_james_stein_factor_by_hand_and_too_little_history() -> None:
    # 1 - se^2/est^2: est 2, se 1 -> 0.75; est 0.5, se 1 -> negative -> 0; est 0 -> 0
    assert james_stein_factor(np.array([2.0, 0.5, 0.0, np.nan]), np.array([1.0] * 4)) == (
        pytest.approx([0.75, 0.0, 0.0, 0.0])
    )
    few = np.arange(4)
    assert fit_reviewer_effects(few, few % 2, few % 2, np.zeros(4), np.ones(4), 2) == [None, None]
