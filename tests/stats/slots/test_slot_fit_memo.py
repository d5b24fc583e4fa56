"""The slot fit is computed once per fit and slots, and cannot be changed by a caller (ADR 0075)."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.design.design_cache import fit_additive_two_way_cached
from llm_council.stats.slots.slot_adjusted_fit import _refit, with_slot_effects


def _fit_and_slots() -> tuple[object, np.ndarray]:
    rng = np.random.default_rng(3)
    n = 5
    scores = rng.normal(6.0, 1.0, (n, n))
    np.fill_diagonal(scores, np.nan)
    fit = fit_additive_two_way_cached(scores)
    assert fit is not None
    slots = np.array([rng.permutation(n - 1) for _ in range(n)])  # each reviewer's order
    rows, columns = fit.rows, fit.columns
    display = np.array(
        [
            slots[r][c if c < r else c - 1]
            for r, c in zip(rows.tolist(), columns.tolist(), strict=True)
        ]
    )
    return fit, display


def test_the_same_fit_and_slots_give_the_same_object_and_the_computed_values() -> None:
    fit, slots = _fit_and_slots()
    first = with_slot_effects(fit, slots)
    assert first is not fit  # identified: slot columns appended
    assert with_slot_effects(fit, slots.copy()) is first  # equal slots, another array
    fresh = _refit(fit, np.asarray(slots, dtype=np.intp))
    for field in ("design", "covariance_unscaled", "coefficients", "residuals"):
        assert np.array_equal(getattr(first, field), getattr(fresh, field)), field
    assert first.residual_variance == fresh.residual_variance


def test_other_slots_are_another_fit() -> None:
    fit, slots = _fit_and_slots()
    first = with_slot_effects(fit, slots)
    other = slots.copy()
    other[[0, 1]] = other[[1, 0]]
    second = with_slot_effects(fit, other)
    assert second is not first
    assert not np.array_equal(second.design, first.design)


def test_a_caller_cannot_change_the_shared_slot_fit() -> None:
    fit, slots = _fit_and_slots()
    shared = with_slot_effects(fit, slots)
    with pytest.raises(ValueError, match="read-only"):
        shared.residuals[0] = 99.0
    with pytest.raises(ValueError, match="read-only"):
        shared.design[0, 0] = 99.0


def test_a_fit_changed_in_place_is_refitted() -> None:
    """The memo keys on the fit's identity and on its scores' and residuals' bytes."""
    fit, slots = _fit_and_slots()
    first = with_slot_effects(fit, slots)
    changed = fit.observed.copy()
    changed[0] += 1.0
    fit.observed[:] = changed  # a caller writing into the fit (none does)
    fit.residuals[0] += 1.0
    second = with_slot_effects(fit, slots)
    assert second is not first
    assert not np.array_equal(second.coefficients, first.coefficients)
