"""An effect at the floor reaches it whatever the last bits of its computation
(ADR 0095); one a visible distance below does not."""

from __future__ import annotations

import math

import pytest

from llm_council.stats.inference.effect_floors import FLOOR_TOLERANCE, reaches_floor


@pytest.mark.parametrize(
    ("effect", "floor", "reaches"),
    [
        (1.0, 1.0, True),
        (0.9999999999999998, 1.0, True),  # 1.0 in exact arithmetic, one kernel's rounding
        (1.0000000000000013, 1.0, True),  # the other kernel's
        (1.0 - 0.5 * FLOOR_TOLERANCE, 1.0, True),
        (1.0 - 2.0 * FLOOR_TOLERANCE, 1.0, False),
        (0.99, 1.0, False),
        (2.5 - 1e-13, 2.5, True),  # relative above 1 point
        (2.5 - 2.0 * FLOOR_TOLERANCE * 2.5, 2.5, False),
        (1e-10, 0.0, True),  # a zero floor: every non-negative effect
        (-0.5 * FLOOR_TOLERANCE, 0.0, True),  # absolute below 1 point
        (-2.0 * FLOOR_TOLERANCE, 0.0, False),
        (math.nan, 1.0, False),
        (math.inf, 1.0, True),
    ],
)
def test_reaches_floor(effect: float, floor: float, reaches: bool) -> None:
    assert reaches_floor(effect, floor) is reaches


def test_the_tolerance_sits_between_rounding_and_a_readable_effect() -> None:
    """Far above the 1e-15..1e-11 kernels move a fit (measured, ADR 0095), far below the
    0.01 points a report prints."""
    assert 1e-11 * 100 <= FLOOR_TOLERANCE <= 0.01 / 1000
