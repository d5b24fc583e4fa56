"""Checked reading of a section summary's payload: each bad field is one ``ValueError``.

A saved summary is verified on its bytes before it is read, so a malformed payload means
a bug or a summary of another format; either way the caller rebuilds it, and the message
names the section and the field.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np


class PayloadReader:
    """Typed access to one section's ``meta`` and ``arrays``, naming ``section`` in errors."""

    def __init__(
        self, section: str, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> None:
        self.section = section
        self.meta = meta
        self.arrays = arrays

    def fail(self, field: str, problem: str) -> ValueError:
        """The error for ``field``."""
        return ValueError(f"{self.section} summary: field {field!r} {problem}")

    def integer(self, field: str, *, low: int = 0) -> int:
        """A JSON integer (not a bool) of at least ``low``."""
        value = self.meta.get(field)
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise self.fail(field, f"is not an integer >= {low}")
        return value

    def names(self, field: str, *, unique: bool = True) -> tuple[str, ...]:
        """A JSON list of strings (distinct unless ``unique`` is False)."""
        value = self.meta.get(field)
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(field, "is not a list of strings")
        if unique and len(set(value)) != len(value):
            raise self.fail(field, "repeats a name")
        return tuple(value)

    def array(self, field: str, kind: str, shape: tuple[int | None, ...]) -> np.ndarray:
        """A numeric array of dtype kind ``kind`` ('i' integers, 'f' floats, 'b' booleans)
        and the given shape (None: any length); integers are returned as int64."""
        value = self.arrays.get(field)
        if not isinstance(value, np.ndarray):
            raise self.fail(field, "is missing")
        kinds = {"i": "iu", "f": "f", "b": "b"}[kind]
        if value.dtype.kind not in kinds:
            raise self.fail(field, f"has dtype {value.dtype}, expected kind {kind!r}")
        if value.ndim != len(shape) or any(
            want is not None and have != want for have, want in zip(value.shape, shape, strict=True)
        ):
            raise self.fail(field, f"has shape {value.shape}, expected {shape}")
        if kind == "i":
            return value.astype(np.int64)
        return value

    def codes(self, field: str, length: int, bound: int) -> np.ndarray:
        """Integer codes, ``length`` of them, each in ``0..bound-1``."""
        value = self.array(field, "i", (length,))
        if value.size and (value.min() < 0 or value.max() >= bound):
            raise self.fail(field, f"holds a code outside 0..{bound - 1}")
        return value

    def finite(
        self, field: str, shape: tuple[int | None, ...], *, nan_ok: bool = False
    ) -> np.ndarray:
        """A float array without infinities (and without NaN unless ``nan_ok``)."""
        value = self.array(field, "f", shape).astype(float)
        bad = np.isinf(value) if nan_ok else ~np.isfinite(value)
        if bad.any():
            raise self.fail(field, "holds a non-finite number")
        return value

    def counts(self, field: str, shape: tuple[int | None, ...]) -> np.ndarray:
        """Non-negative integers."""
        value = self.array(field, "i", shape)
        if value.size and value.min() < 0:
            raise self.fail(field, "holds a negative count")
        return value
