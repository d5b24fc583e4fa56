"""The independent generator's score model as arrays: many sessions in one draw.

:func:`generators.independent_council.generate_session` builds each session with Python
loops and answer texts (about 0.6 ms at 5 members); sequential-monitor studies need
hundreds of thousands of sessions. This draws the same scores (no verbosity term, no
texts, no missing cells) as ``(..., reviewer, candidate)`` arrays::

    round(clip(base + quality_scale * q_c + leniency_r + slot_effects_r[s]
               + self_bias_r * [r == c] + noise_sd_r * e, 1, 10))

with every reviewer shown every answer (its own too) in its own uniformly shuffled
order. ``tests/generators/test_independent_arrays.py`` checks it against the loop
version's moments.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from generators.independent_council import SCORE_SCALE, CouncilSpec


def draw_score_arrays(
    spec: CouncilSpec, shape: Sequence[int], rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``(scores, first)`` for sessions of leading ``shape``: scores ``(*shape, R, R)``
    (rows reviewers, columns candidates) and each reviewer's first-shown candidate
    ``(*shape, R)``."""
    n = spec.n_members
    lead = tuple(shape)
    noise = spec.per_reviewer(spec.noise_sds) if spec.noise_sds is not None else None
    sds = np.full(n, spec.noise_sd) if noise is None else noise
    slot_table = np.zeros((n, n))
    if spec.slot_effects is not None:
        for r, effects in enumerate(spec.slot_effects):
            slot_table[r, : len(effects)] = effects
    quality = rng.standard_normal((*lead, n))
    order = np.argsort(rng.random((*lead, n, n)), axis=-1)  # order[..., r, slot] = candidate
    slot_of = np.argsort(order, axis=-1)  # slot_of[..., r, c] = the slot c was shown at
    slot_effect = np.take_along_axis(np.broadcast_to(slot_table, (*lead, n, n)), slot_of, axis=-1)
    raw = (
        spec.base
        + spec.quality_scale * quality[..., None, :]
        + spec.per_reviewer(spec.leniency)[:, None]
        + slot_effect
        + np.diag(spec.per_reviewer(spec.self_bias))
        + sds[:, None] * rng.standard_normal((*lead, n, n))
    )
    return np.rint(np.clip(raw, *SCORE_SCALE)), order[..., 0]
