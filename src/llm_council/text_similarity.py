"""Lexical similarity of two texts: cosine of character 3-gram counts (no model, no network).

A pure function shared by the bias audit (``similarity_to_own``, style mimicry) and the
simulated judges (a ``style_mimicry`` profile scores answers like its own higher), so both
measure style the same way. Each text is cut to its first :data:`MAX_SIMILARITY_CHARS`
characters first, so a 50 MB answer costs no more than a long one.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

#: characters of each answer a similarity reads (the rest is ignored): about 1,700 words,
#: enough for a style and cheap (5 such answers: a few ms per session)
MAX_SIMILARITY_CHARS = 10_000
NGRAM = 3


def _folded(text: str) -> str:
    """``text`` cut to :data:`MAX_SIMILARITY_CHARS`, lower-cased, whitespace runs as one space.

    ``str.split()`` splits on exactly the characters ``re``'s ``\\s`` matches in a str
    pattern (both use ``Py_UNICODE_ISSPACE``), so this is ``re.sub(r"\\s+", " ", t).strip()``
    at a fifth of the cost.
    """
    return " ".join(text[:MAX_SIMILARITY_CHARS].lower().split())


def _packed_ngrams(text: str) -> np.ndarray:
    """Every character 3-gram of the folded ``text`` in order, packed exactly into int64.

    A code point is below 2**21, so three of them pack into 63 bits with no collision.
    """
    # surrogatepass: a lone surrogate (valid in a Python str, e.g. from JSON) is one more
    # code point, not an error that would cost the session its audit
    encoded = _folded(text).encode("utf-32-le", "surrogatepass")
    codes = np.frombuffer(encoded, dtype=np.uint32).astype(np.int64)
    if codes.size < NGRAM:
        return np.empty(0, dtype=np.int64)
    return (codes[:-2] << 42) | (codes[1:-1] << 21) | codes[2:]


def ngram_profile(text: str) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct character 3-grams of ``text`` (packed exactly into int64) and counts.

    Lower-cased, whitespace runs folded to one space (:func:`_packed_ngrams`).
    """
    packed = _packed_ngrams(text)
    if packed.size == 0:
        return packed, np.empty(0, dtype=np.int64)
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


def ngram_cosine_matrix(texts: Sequence[str]) -> np.ndarray:
    r""":func:`ngram_cosine` of every pair of ``texts`` at once: a symmetric square matrix.

    .. math:: S = D^{-1/2} (K^T K) D^{-1/2} \ (\text{each entry capped at } 1), \quad
              D = \operatorname{diag}(K^T K)

    with :math:`K_{gt} = c_t(g)` the count of 3-gram ``g`` in text ``t`` (Damashek 1995).
    One sort of every text's 3-grams together gives ``K``, instead of a sort per text and a
    merge per pair. The counts are integers and every dot product is below
    :math:`\text{MAX\_SIMILARITY\_CHARS}^2 < 2^{53}`, so the float products are exact and
    each entry is the same number :func:`ngram_cosine` returns, bit for bit (tested). Rows
    and columns of a text with fewer than three characters are NaN.
    """
    size = len(texts)
    matrix = np.full((size, size), np.nan)
    packed = [_packed_ngrams(text) for text in texts]
    lengths = np.array([grams.size for grams in packed], dtype=np.intp)
    present = np.flatnonzero(lengths)
    if present.size == 0:
        return matrix
    keys = np.concatenate(packed)
    owners = np.repeat(np.arange(size), lengths)
    order = np.argsort(keys)
    ordered = keys[order]
    new_gram = np.empty(ordered.size, dtype=bool)
    new_gram[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=new_gram[1:])
    gram_ids = np.cumsum(new_gram) - 1
    counts = np.bincount(
        gram_ids * size + owners[order], minlength=(int(gram_ids[-1]) + 1) * size
    ).reshape(-1, size)
    products = counts.T.astype(np.float64) @ counts.astype(np.float64)
    roots = np.sqrt(np.diagonal(products))
    with np.errstate(invalid="ignore", divide="ignore"):
        cosines = np.minimum(1.0, products / (roots[:, None] * roots[None, :]))
    matrix[np.ix_(present, present)] = cosines[np.ix_(present, present)]
    return matrix
