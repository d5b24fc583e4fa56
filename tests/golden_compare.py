"""Structural comparison of saved (golden) results with recomputed ones, for golden tests.

Numbers compare with a tolerance (NaN equals NaN); everything else (keys, lengths, flags,
names, None-ness, types) must be equal.
"""

from __future__ import annotations

import math
from typing import Any


def golden_differences(expected: Any, actual: Any, where: str, tolerance: float) -> list[str]:
    """Every place where ``actual`` differs from ``expected``, as ``path: old != new``."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        if expected.keys() != actual.keys():
            return [f"{where}: keys {sorted(expected)} != {sorted(actual)}"]
        return [
            difference
            for key in expected
            for difference in golden_differences(
                expected[key], actual[key], f"{where}.{key}", tolerance
            )
        ]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: {len(expected)} items != {len(actual)} items"]
        return [
            difference
            for position, (left, right) in enumerate(zip(expected, actual, strict=True))
            for difference in golden_differences(left, right, f"{where}[{position}]", tolerance)
        ]
    if (
        isinstance(expected, float)
        and isinstance(actual, float | int)
        and not isinstance(actual, bool)
    ):
        if math.isnan(expected) and math.isnan(actual):
            return []
        if math.isclose(expected, actual, rel_tol=tolerance, abs_tol=tolerance):
            return []
        return [f"{where}: {expected!r} != {actual!r}"]
    return (
        []
        if expected == actual and type(expected) is type(actual)
        else [f"{where}: {expected!r} != {actual!r}"]
    )
