"""The array form of the independent generator draws what the loop version draws."""

from __future__ import annotations

import numpy as np

from generators.independent_arrays import draw_score_arrays
from generators.independent_council import CouncilSpec, generate_session

SPEC = CouncilSpec(
    n_members=4,
    noise_sds=[0.5, 0.8, 1.1, 1.5],
    leniency=[-1.0, 0.0, 0.5, 0.0],
    self_bias=[0.0, 1.5, 0.0, 0.0],
    slot_effects=[[], [], [], [2.0]],
)


def _loop_tables(n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    members = SPEC.members()
    tables, firsts = [], []
    for index in range(n):
        session = generate_session(SPEC, rng, session_index=index)
        tables.append([[session.stage2_scores[r][c] for c in members] for r in members])
        shown = session.position_mapping
        firsts.append([members.index(min(shown[r], key=shown[r].get)) for r in members])
    return np.array(tables, dtype=float), np.array(firsts)


def test_the_array_form_has_the_loop_forms_moments() -> None:
    loop, loop_first = _loop_tables(1500)
    arrays, first = draw_score_arrays(SPEC, (4000,), np.random.default_rng(2))
    assert arrays.shape == (4000, 4, 4) and first.shape == (4000, 4)
    assert set(np.unique(arrays)) <= set(range(1, 11))  # clipped integers
    # every cell's mean and SD within about 3 SE of the loop version's (SD ~1.8 per cell:
    # SE of a mean ~0.05 at 1500 sessions)
    np.testing.assert_allclose(arrays.mean(axis=0), loop.mean(axis=0), atol=0.17)
    np.testing.assert_allclose(arrays.std(axis=0), loop.std(axis=0), atol=0.15)

    # the slot effect lands on the first-shown answer: reviewer 3's first cell is ~2 higher
    def first_minus_rest(tables: np.ndarray, firsts: np.ndarray) -> float:
        picked = np.take_along_axis(tables[:, 3], firsts[:, 3:4], axis=-1)[:, 0]
        return float(picked.mean() - tables[:, 3].mean())

    assert abs(first_minus_rest(arrays, first) - first_minus_rest(loop, loop_first)) < 0.2
    assert first_minus_rest(arrays, first) > 1.0
