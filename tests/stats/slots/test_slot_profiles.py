"""Within-answer slot effects: exact recovery, identification, and a hand-computed case."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.slots.slot_profiles import fit_reviewer_slots, scope_contrasts, slot_effects

#: per reviewer, per slot: reviewer 0 favours slot A by 1 point, reviewer 2 slot C by 0.6
TRUE_SLOTS = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.6]])


def _design(n_sessions: int, shared_order: bool, noise: float, seed: int):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_sessions):
        quality = rng.normal(0, 1.5, size=3)
        shared = rng.permutation(3)
        for r in range(3):
            order = shared if shared_order else rng.permutation(3)
            for slot, m in enumerate(order):
                score = quality[m] + 0.3 * r + TRUE_SLOTS[r, slot] + noise * rng.normal()
                rows.append((s * 3 + m, s, r, slot, r == m, score))
    columns = list(zip(*rows, strict=True))
    return [np.array(column) for column in columns]


def test_noise_free_effects_are_recovered_exactly() -> None:
    answer, session, reviewer, slot, own, score = _design(30, False, 0.0, seed=1)
    fit = fit_reviewer_slots(answer, session, reviewer, slot, own, score, 3, 3)
    for r in range(3):
        effects = slot_effects(fit, scope_contrasts([r], 3, 3))
        assert effects is not None
        # centred on the reviewer's own average slot: [1, 0, 0] -> [2/3, -1/3, -1/3]
        expected = TRUE_SLOTS[r] - TRUE_SLOTS[r].mean()
        assert effects.estimates == pytest.approx(expected, abs=1e-9)
    council = slot_effects(fit, scope_contrasts([0, 1, 2], 3, 3))
    assert council is not None
    expected_council = (TRUE_SLOTS - TRUE_SLOTS.mean(axis=1, keepdims=True)).mean(axis=0)
    assert council.estimates == pytest.approx(expected_council, abs=1e-9)
    # trend: least-squares slope of the council effects on the centred slot index
    slots = np.arange(3) - 1.0
    assert council.trend == pytest.approx(float(slots @ expected_council / (slots @ slots)))


def test_shared_order_is_not_identified() -> None:
    answer, session, reviewer, slot, own, score = _design(30, True, 1.0, seed=2)
    fit = fit_reviewer_slots(answer, session, reviewer, slot, own, score, 3, 3)
    assert slot_effects(fit, scope_contrasts([0], 3, 3)) is None
    assert slot_effects(fit, scope_contrasts([0, 1, 2], 3, 3)) is None


def test_noisy_effects_cover_the_truth_and_flag_reviewer_zero() -> None:
    answer, session, reviewer, slot, own, score = _design(300, False, 1.0, seed=3)
    fit = fit_reviewer_slots(answer, session, reviewer, slot, own, score, 3, 3)
    effects = slot_effects(fit, scope_contrasts([0], 3, 3))
    assert effects is not None
    expected = TRUE_SLOTS[0] - TRUE_SLOTS[0].mean()
    assert np.all(effects.ci_low < expected) and np.all(expected < effects.ci_high)
    assert effects.wald_p < 1e-6 and effects.trend_ci[1] < 0
    assert effects.wald_df == (2, fit.n_clusters - 2)
