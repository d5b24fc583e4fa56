"""The all-pairs 3-gram cosine equals the pairwise one bit for bit, and the folding equals
the regular expression it replaced."""

from __future__ import annotations

import math
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_council.text_similarity import (
    MAX_SIMILARITY_CHARS,
    _folded,
    ngram_cosine,
    ngram_cosine_matrix,
)

#: every character str.isspace() accepts, and some that look like spaces but are not
_SPACES = "".join(chr(c) for c in range(0x110000) if chr(c).isspace()) + "\u200b\ufeff"
_TEXT = st.text(alphabet=st.sampled_from("abcAB\u0130\ud800\U0001f600" + _SPACES), max_size=40)


def _regex_folded(text: str) -> str:
    """The folding ngram_profile used before (``re`` whitespace runs to one space)."""
    return re.sub(r"\s+", " ", text[:MAX_SIMILARITY_CHARS].lower()).strip()


@settings(max_examples=300, deadline=None)
@given(_TEXT)
def test_split_folding_equals_the_regular_expression(text: str) -> None:
    assert _folded(text) == _regex_folded(text)


def _same(left: float, right: float) -> bool:
    return (math.isnan(left) and math.isnan(right)) or left == right


@settings(max_examples=150, deadline=None)
@given(st.lists(_TEXT, min_size=0, max_size=6))
def test_matrix_equals_every_pairwise_cosine_bit_for_bit(texts: list[str]) -> None:
    matrix = ngram_cosine_matrix(texts)
    assert matrix.shape == (len(texts), len(texts))
    for i, first in enumerate(texts):
        for j, second in enumerate(texts):
            assert _same(float(matrix[i, j]), ngram_cosine(first, second)), (first, second)


def test_matrix_on_long_answers_and_undefined_ones() -> None:
    words = ["latency", "tail", "p99", "queue", "retry", "budget", "cache", "warm", "cold", "shard"]
    rng = np.random.default_rng(7)
    texts = [" ".join(rng.choice(words, size=size)) for size in (300, 1200, 2500)]
    texts += ["ab", "", texts[0] * 20]  # too short twice, and one past the character cap
    matrix = ngram_cosine_matrix(texts)
    for i, first in enumerate(texts):
        for j, second in enumerate(texts):
            assert _same(float(matrix[i, j]), ngram_cosine(first, second))
    assert np.isnan(matrix[3]).all() and np.isnan(matrix[:, 4]).all()
    assert 0.0 < matrix[0, 1] < 1.0


def test_matrix_sort_paths_agree_inside_and_beyond_the_bmp() -> None:
    """BMP-only texts take the one-integer sort; one astral character switches every pair
    to the argsort path. Both give each pairwise cosine exactly, for 3 and 13 texts (the
    text number then needs 4 bits of the key)."""
    rng = np.random.default_rng(11)
    alphabet = list("abcde ") + ["\u00e9", "\u4e2d", "\uffff"]
    for size in (3, 13):
        texts = ["".join(rng.choice(alphabet, size=int(rng.integers(0, 60)))) for _ in range(size)]
        for variant in (texts, [*texts[:-1], texts[-1] + "\U0010ffff"]):
            matrix = ngram_cosine_matrix(variant)
            for i, first in enumerate(variant):
                for j, second in enumerate(variant):
                    assert _same(float(matrix[i, j]), ngram_cosine(first, second))
