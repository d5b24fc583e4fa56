"""The rank check that says whether display-slot effects can be estimated at all."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_council.stats.slots.slot_identification import slot_effects_identified


def test_two_reviews_in_both_orders_identify_the_slots() -> None:
    # cells (row, column, slot): (0, X, A), (0, Y, B), (1, Y, A), (1, X, B).
    # Slot A's indicator [1, 0, 1, 0] = a R0 + b R1 + c X + d Y needs a + c = 1, a + d = 0,
    # b + d = 1, b + c = 0, hence (from the first three) b + c = 2: no solution, so A adds
    # a dimension to the row/column span: identified.
    assert slot_effects_identified([0, 0, 1, 1], [0, 1, 1, 0], [0, 1, 0, 1])


def test_one_shared_order_does_not_identify_the_slots() -> None:
    # every row shows column k at slot k: slot indicators equal column indicators
    rows = np.repeat(np.arange(5), 4)
    columns = np.tile(np.arange(4), 5)
    assert not slot_effects_identified(rows, columns, columns)


def test_fewer_than_two_slots_or_no_cells() -> None:
    assert not slot_effects_identified([0, 1], [0, 1], [0, 0])
    assert not slot_effects_identified([], [], [])
    assert not slot_effects_identified([0, 1], [0, 1], [0])


@settings(max_examples=60, deadline=None)
@given(
    cells=st.lists(
        st.tuples(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=16
    )
)
def test_agrees_with_estimability_by_least_squares(cells: list[tuple[int, int, int]]) -> None:
    # Independent check (Searle 1987, sec. 5.4): a slot contrast s_k - s_0 is estimable iff
    # its coefficient vector lies in the row space of the full design; test each one by
    # projecting it on that row space with lstsq.
    rows, columns, slots = (np.array(values) for values in zip(*cells, strict=True))

    def dummies(codes: np.ndarray) -> np.ndarray:
        levels = np.unique(codes)
        return (codes[:, None] == levels[None, :]).astype(float)

    design = np.hstack([dummies(rows), dummies(columns), dummies(slots)])
    n_base = design.shape[1] - np.unique(slots).size
    estimable = []
    for k in range(1, np.unique(slots).size):
        contrast = np.zeros(design.shape[1])
        contrast[n_base + k] = 1.0
        contrast[n_base] = -1.0
        coefficients, *_ = np.linalg.lstsq(design.T, contrast, rcond=None)
        estimable.append(bool(np.allclose(design.T @ coefficients, contrast, atol=1e-8)))
    expected = bool(estimable) and all(estimable)
    assert slot_effects_identified(rows, columns, slots) is expected
