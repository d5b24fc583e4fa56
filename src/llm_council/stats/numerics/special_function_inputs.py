"""Argument and result handling shared by the numpy special functions (scipy's conventions).

Floats in (integers, lists, 0-d arrays), a numpy float out for a 0-d result and an array
otherwise, and numpy's floating-point warnings silenced inside: each function masks its own
overflows and 0/0 with its limits and NaN rules, as scipy's ufuncs do.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

import numpy as np
from numpy.typing import ArrayLike

Function = TypeVar("Function", bound=Callable[..., np.ndarray])


def quiet(function: Function) -> Function:
    """Run ``function`` under ``np.errstate(all="ignore")``: an overflow or 0/0 inside is
    masked by the function's own limits and NaN rules, so numpy's warnings would only be
    noise in the caller's log (as scipy's ufuncs raise none)."""

    @functools.wraps(function)
    def silenced(*args: object, **kwargs: object) -> np.ndarray:
        with np.errstate(all="ignore"):
            return function(*args, **kwargs)

    return silenced  # type: ignore[return-value]


def as_floats(*values: ArrayLike) -> list[np.ndarray]:
    """Each argument as a float array (integers, booleans, lists and scalars alike)."""
    return [np.asarray(value, dtype=float) for value in values]


def scalar_or_array(values: np.ndarray) -> np.ndarray:
    """A numpy float for a 0-d result (as scipy's ufuncs return), the array otherwise."""
    return np.asarray(values, dtype=float)[()]
