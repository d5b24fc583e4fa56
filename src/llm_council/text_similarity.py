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
    folded = [_folded(text) for text in texts]
    present = np.flatnonzero([len(text) >= NGRAM for text in folded])
    if present.size == 0:
        return matrix
    # every text's code points in one array; a 3-gram is one text's when its first and
    # last characters belong to the same text (no gram spans two texts)
    codes = np.frombuffer(
        "".join(folded).encode("utf-32-le", "surrogatepass"), dtype=np.uint32
    ).astype(np.int64)
    char_owners = np.repeat(np.arange(size), [len(text) for text in folded])
    inside = char_owners[:-2] == char_owners[2:]
    counts = _gram_counts_by_text(codes, char_owners, inside, size)
    products = counts.T @ counts  # exact: integer counts, sums below 2**53
    roots = np.sqrt(np.diagonal(products))
    with np.errstate(invalid="ignore", divide="ignore"):
        cosines = np.minimum(1.0, products / (roots[:, None] * roots[None, :]))
    matrix[np.ix_(present, present)] = cosines[np.ix_(present, present)]
    return matrix


def _gram_counts_by_text(
    codes: np.ndarray, char_owners: np.ndarray, inside: np.ndarray, size: int
) -> np.ndarray:
    """``K`` as float64: one row per distinct 3-gram (code-point order), one column per text.

    ``codes`` are the texts' code points end to end, ``char_owners`` the text each belongs
    to, ``inside[i]`` whether the 3-gram starting at ``i`` lies within one text. When the
    code points and the text number fit in 63 bits together (any texts whose largest code
    point is below U+10000, for up to 2**15 texts), gram and text are one integer and a
    plain sort groups them, cheaper than an argsort; otherwise (a code point beyond the
    BMP) the 63-bit gram is argsorted and the texts follow.
    """
    code_bits = int(codes.max()).bit_length()
    owner_bits = (size - 1).bit_length()
    if NGRAM * code_bits + owner_bits <= 63:
        keys = (
            (codes[:-2] << (2 * code_bits + owner_bits))
            | (codes[1:-1] << (code_bits + owner_bits))
            | (codes[2:] << owner_bits)
            | char_owners[:-2]
        )[inside]
        keys.sort()
        run_starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
        run_lengths = np.diff(np.append(run_starts, keys.size))
        run_keys = keys[run_starts]
        run_grams = run_keys >> owner_bits
        run_owners = run_keys & ((1 << owner_bits) - 1)
    else:
        grams = ((codes[:-2] << 42) | (codes[1:-1] << 21) | codes[2:])[inside]
        order = np.argsort(grams)
        run_grams, run_owners = grams[order], char_owners[:-2][inside][order]
        run_lengths = None  # each occurrence counts once
    new_gram = np.empty(run_grams.size, dtype=bool)
    new_gram[0] = True
    np.not_equal(run_grams[1:], run_grams[:-1], out=new_gram[1:])
    gram_ids = np.cumsum(new_gram) - 1
    n_grams = int(gram_ids[-1]) + 1
    flat = np.bincount(gram_ids * size + run_owners, weights=run_lengths, minlength=n_grams * size)
    return flat.reshape(n_grams, size)
