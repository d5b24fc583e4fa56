"""Uniform numbers keyed by (seed, row key, draw, cell): a row's numbers do not depend on
which other rows are drawn with it, nor in what order.

A summary saved per session must get the same random numbers for a session whether it is
drawn with all the store's sessions (a cold report) or only with the new ones (an
incremental report, ADR 0073). A sequential generator gives a session the numbers that
happen to come at its turn; here each row (a session, or a session and reviewer) has its
own SplitMix64 stream, started from its key and the seed: Steele, Lea & Flood (2014),
"Fast splittable pseudorandom number generators", OOPSLA '14, with the constants of
Vigna's reference ``splitmix64.c``. Output ``x`` becomes the uniform ``(x >> 11) / 2**53``,
a multiple of ``2**-53`` in [0, 1) as ``numpy.random.Generator.random`` gives.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

import numpy as np

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)
#: cells per draw in a row's stream: draw ``d``, cell ``c`` is the stream's element
#: ``d * CELLS_PER_DRAW + c`` (cells are display slots: far fewer)
CELLS_PER_DRAW = 1 << 16


def splitmix64(values: np.ndarray) -> np.ndarray:
    """SplitMix64's output function (a bijection of 64-bit integers) applied elementwise."""
    z = np.asarray(values, dtype=np.uint64).copy()
    z ^= z >> np.uint64(30)
    z *= _MIX_1
    z ^= z >> np.uint64(27)
    z *= _MIX_2
    z ^= z >> np.uint64(31)
    return z


def text_keys(texts: Iterable[str]) -> np.ndarray:
    """A 64-bit key per text: the first 8 bytes of its BLAKE2b digest (UTF-8)."""
    return np.asarray(
        [
            int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")
            for text in texts
        ],
        dtype=np.uint64,
    )


def row_streams(seed: int, row_keys: np.ndarray) -> np.ndarray:
    """Each row's stream start from the seed and its key (distinct keys: distinct streams)."""
    seed_key = splitmix64(np.asarray([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))[0]
    return splitmix64(np.asarray(row_keys, dtype=np.uint64) ^ seed_key)


class KeyedUniforms:
    """``random(size)`` for ``size = (draws, *row_shape, cells)``: element ``[d, *r, c]`` is
    draw ``first + d``, cell ``c`` of row ``r``'s stream, where ``first`` counts the draws
    returned so far (so successive calls continue the streams, as a generator's would).

    Stands in for the ``numpy.random.Generator`` of a randomization test whose draws have
    the shape ``(draws, *rows, cells)``.
    """

    def __init__(self, seed: int, row_keys: np.ndarray) -> None:
        self._starts = row_streams(seed, row_keys)
        self._drawn = 0

    def random(self, size: tuple[int, ...]) -> np.ndarray:
        draws, *rows, cells = size
        if tuple(rows) != self._starts.shape or cells > CELLS_PER_DRAW:
            raise ValueError(f"draw shape {size} does not match rows {self._starts.shape}")
        draw = np.arange(self._drawn, self._drawn + draws, dtype=np.uint64)
        self._drawn += draws
        first = draw.reshape(-1, *[1] * len(rows), 1) * np.uint64(CELLS_PER_DRAW)
        counter: np.ndarray = first + np.arange(1, cells + 1, dtype=np.uint64)
        state = self._starts[None, ..., None] + counter * _GAMMA
        return (splitmix64(state) >> np.uint64(11)).astype(np.float64) * 2.0**-53
