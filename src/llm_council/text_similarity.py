"""Lexical similarity of two texts: cosine of character 3-gram counts (no model, no network).

A pure function shared by the bias audit (``similarity_to_own``, style mimicry) and the
simulated judges (a ``style_mimicry`` profile scores answers like its own higher), so both
measure style the same way. Each text is cut to its first :data:`MAX_SIMILARITY_CHARS`
characters first, so a 50 MB answer costs no more than a long one.
"""

from __future__ import annotations

import math
import re

import numpy as np

#: characters of each answer a similarity reads (the rest is ignored): about 1,700 words,
#: enough for a style and cheap (5 such answers: a few ms per session)
MAX_SIMILARITY_CHARS = 10_000
NGRAM = 3
_WHITESPACE = re.compile(r"\s+")


def ngram_profile(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct character 3-grams of ``text`` (packed exactly into int64) and counts.

    Lower-cased, whitespace runs folded to one space. A code point is below 2**21, so
    three of them pack into 63 bits with no collision.
    """
    normal = _WHITESPACE.sub(" ", text[:MAX_SIMILARITY_CHARS].lower()).strip()
    # surrogatepass: a lone surrogate (valid in a Python str, e.g. from JSON) is one more
    # code point, not an error that would cost the session its audit
    encoded = normal.encode("utf-32-le", "surrogatepass")
    codes = np.frombuffer(encoded, dtype=np.uint32).astype(np.int64)
    if codes.size < NGRAM:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64)
    packed = (codes[:-2] << 42) | (codes[1:-1] << 21) | codes[2:]
    grams, counts = np.unique(packed, return_counts=True)
    return grams, counts.astype(np.int64)


def ngram_cosine(first: str, second: str) -> float:
    r"""Cosine similarity of the character 3-gram count vectors of two texts.

    .. math:: s(a, b) = \frac{\sum_g c_a(g)\, c_b(g)}{\lVert c_a \rVert\, \lVert c_b \rVert}

    with :math:`c_t(g)` the number of times the 3-gram ``g`` occurs in ``t`` (lower-cased,
    whitespace folded). Counts are non-negative, so :math:`s \in [0, 1]`; 1 for texts with
    proportional profiles. NaN when either text has fewer than three characters. Damashek
    (1995), "Gauging similarity with n-grams", *Science* 267(5199): 843-848.
    """
    return cosine_of_profiles(ngram_profile(first), ngram_profile(second))


def cosine_of_profiles(
    first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray]
) -> float:
    """:func:`ngram_cosine` of two :func:`ngram_profile` results (profiles computed once)."""
    grams_a, counts_a = first
    grams_b, counts_b = second
    if grams_a.size == 0 or grams_b.size == 0:
        return float("nan")
    # both are sorted and distinct: look each of a's 3-grams up in b (no merge sort)
    where = np.searchsorted(grams_b, grams_a)
    where[where == grams_b.size] = 0
    shared = grams_b[where] == grams_a
    dot = float(np.dot(counts_a[shared], counts_b[where[shared]]))
    norms = math.sqrt(float(np.dot(counts_a, counts_a))) * math.sqrt(
        float(np.dot(counts_b, counts_b))
    )
    return min(1.0, dot / norms)
