"""The additive fit with slot effects: residuals free of a favoured slot."""

from __future__ import annotations

import numpy as np

from llm_council.stats.design.additive_model import fit_additive_two_way
from llm_council.stats.slots.slot_adjusted_fit import with_slot_effects


def _table(
    rng: np.random.Generator, n: int, slot_a: float, noise: float, *, shared: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    quality = rng.normal(0.0, 1.5, n)
    scores = np.full((n, n), np.nan)
    slots = np.full((n, n), -1)
    shared_order = rng.permutation(n)
    for r in range(n):
        order = shared_order if shared else rng.permutation(n)
        for slot, c in enumerate(order.tolist()):
            if c != r:
                scores[r, c] = quality[c] + slot_a * (slot == 0) + noise * rng.standard_normal()
                slots[r, c] = slot
    return scores, slots


def test_an_exact_slot_effect_leaves_no_residual() -> None:
    rng = np.random.default_rng(4)
    scores, slots = _table(rng, 5, 2.0, 0.0)
    fit = fit_additive_two_way(scores)
    assert fit is not None
    # the two-way fit counts the slot effect as noise ...
    assert fit.residual_variance > 0.1
    adjusted = with_slot_effects(fit, slots[fit.rows, fit.columns])
    # ... the slot model takes it out exactly, and spends k - 1 = 4 df on it
    assert np.allclose(adjusted.residuals, 0.0, atol=1e-9)
    assert adjusted.residual_df == fit.residual_df - 4
    assert adjusted.design.shape[1] == fit.design.shape[1] + 4


def test_unidentified_or_unknown_slots_keep_the_two_way_fit() -> None:
    rng = np.random.default_rng(5)
    scores, slots = _table(rng, 4, 2.0, 1.0, shared=True)
    fit = fit_additive_two_way(scores)
    assert fit is not None
    assert with_slot_effects(fit, slots[fit.rows, fit.columns]) is fit
    scores, slots = _table(rng, 5, 2.0, 1.0)
    fit = fit_additive_two_way(scores)
    assert fit is not None
    cell_slots = slots[fit.rows, fit.columns].copy()
    cell_slots[0] = -1  # one slot not recorded
    assert with_slot_effects(fit, cell_slots) is fit
    assert with_slot_effects(fit, cell_slots[:-1]) is fit
