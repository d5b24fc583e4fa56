"""The answer similarity behind ``similarity_to_own``: formula, embeddings through the real
OpenAI SDK against a loopback fake, configuration and failure handling."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fakes.loopback_http import LoopbackJsonServer, ReceivedRequest, Reply
from llm_council.bias_audit.session.similarity import (
    MAX_EMBEDDING_CHARS,
    MAX_SIMILARITY_CHARS,
    CharNgramSimilarity,
    EmbeddingsSimilarity,
    SimilarityUnavailable,
    ngram_cosine,
    similarities_between_answers,
    similarity_from_spec,
)
from llm_council.errors import ConfigError

CANARY_KEY = "sk-canary-similarity-0123456789"


def test_hand_computed_trigram_cosines() -> None:
    # "abcd" -> {abc, bcd}; "abce" -> {abc, bce}: dot 1, norms sqrt(2) * sqrt(2) -> 1/2
    assert ngram_cosine("abcd", "abce") == pytest.approx(0.5)
    # "aaaa" -> {aaa: 2}; "aaa" -> {aaa: 1}: 2 / (2 * 1) = 1 (proportional profiles)
    assert ngram_cosine("aaaa", "aaa") == pytest.approx(1.0)
    # "abab" -> {aba, bab}; "abba" -> {abb, bba}: nothing shared
    assert ngram_cosine("abab", "abba") == 0.0
    # "the cat" -> {the, "he ", "e c", " ca", cat}; "The  cat sat" folds case and spaces ->
    # the same five plus {"at ", "t s", " sa", sat}: dot 5, norms sqrt(5) * 3 -> 5 / (3 sqrt 5)
    assert ngram_cosine("the cat", "The  cat sat") == pytest.approx(5 / (3 * math.sqrt(5)))
    assert math.isnan(ngram_cosine("ab", "abc"))


def test_trigram_cosine_matches_an_independent_counter() -> None:
    from collections import Counter

    def reference(a: str, b: str) -> float:
        grams_a = Counter(a[i : i + 3] for i in range(len(a) - 2))
        grams_b = Counter(b[i : i + 3] for i in range(len(b) - 2))
        dot = sum(grams_a[g] * grams_b[g] for g in grams_a)
        norm_a = math.sqrt(sum(v * v for v in grams_a.values()))
        norm_b = math.sqrt(sum(v * v for v in grams_b.values()))
        return dot / (norm_a * norm_b)

    first = "measure first, then optimise the slow path; measure again after"
    second = "optimise only what you measured: the slow path first, then again"
    assert ngram_cosine(first, second) == pytest.approx(reference(first, second), rel=1e-12)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=60), st.text(max_size=60))
def test_trigram_cosine_is_symmetric_and_in_the_unit_interval(a: str, b: str) -> None:
    forward, backward = ngram_cosine(a, b), ngram_cosine(b, a)
    assert (math.isnan(forward) and math.isnan(backward)) or forward == pytest.approx(backward)
    assert math.isnan(forward) or 0.0 <= forward <= 1.0


def test_hostile_text_is_measured_not_an_error() -> None:
    # a lone surrogate (json.loads accepts "\\ud800"), NUL, bidi controls, astral emoji
    hostile = "abc\ud800def\x00\u202e\U0001f600 ghi"
    assert ngram_cosine(hostile, hostile) == pytest.approx(1.0)
    assert 0.0 < ngram_cosine(hostile, "abcdef ghi") < 1.0


def test_only_the_first_capped_characters_are_read() -> None:
    head = "style matters " * (MAX_SIMILARITY_CHARS // 14 + 1)
    assert ngram_cosine(head + "x" * 10_000_000, head + "q" * 5_000_000) == pytest.approx(1.0)


def test_pairs_leave_out_undefined_values_and_the_diagonal() -> None:
    answers = {"a": "abcd", "b": "abce", "c": "x"}
    by_member = asyncio.run(similarities_between_answers(answers, CharNgramSimilarity()))
    assert by_member == {"a": {"b": pytest.approx(0.5)}, "b": {"a": pytest.approx(0.5)}, "c": {}}


@pytest.mark.parametrize(
    ("spec", "name"), [("", "lexical"), ("lexical", "lexical"), ("openai:emb-3", "openai:emb-3")]
)
def test_spec_selects_the_method(spec: str, name: str) -> None:
    method = similarity_from_spec(spec, {})
    assert method is not None and method.name == name


def test_off_and_unknown_specs() -> None:
    assert similarity_from_spec("off", {}) is None
    with pytest.raises(ConfigError, match=r"LLM_COUNCIL_SIMILARITY: unknown similarity 'tfidf'"):
        similarity_from_spec("tfidf", {})
    with pytest.raises(ConfigError, match="'openai:'"):
        similarity_from_spec("openai:", {})


class FakeEmbeddingsServer(LoopbackJsonServer):
    """Plays ``POST /v1/embeddings``: fixed vectors, or a scripted error status."""

    def __init__(self, vectors: list[list[float]], status: int = 200) -> None:
        super().__init__()
        self.vectors = vectors
        self.status = status
        self.requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
        if self.status != 200:
            return Reply(self.status, {"error": {"message": f"rejected key {CANARY_KEY}"}})
        data = [
            {"object": "embedding", "index": i, "embedding": vector}
            for i, vector in enumerate(self.vectors)
        ]
        # reversed: the client must order by "index", not by position in the list
        return Reply(
            200,
            {
                "object": "list",
                "data": data[::-1],
                "model": "emb-fake",
                "usage": {"prompt_tokens": 3, "total_tokens": 3},
            },
        )


@pytest.fixture
def embeddings_server() -> Iterator[FakeEmbeddingsServer]:
    # cos(v0, v1) = 0 -> 0.5; cos(v0, v2) = 1 -> 1.0; cos(v1, v2) = 0 -> 0.5
    with FakeEmbeddingsServer([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0]]).running() as server:
        yield server


def _env(server: LoopbackJsonServer) -> dict[str, str]:
    return {"OPENAI_API_KEY": CANARY_KEY, "OPENAI_BASE_URL": f"{server.url}/v1"}


def test_embeddings_through_the_real_sdk(embeddings_server: FakeEmbeddingsServer) -> None:
    method = EmbeddingsSimilarity("emb-fake", _env(embeddings_server))
    long_answer = "y" * (MAX_EMBEDDING_CHARS + 500)
    matrix = asyncio.run(method.pairwise(["first", "second", long_answer]))
    expected = np.array([[1.0, 0.5, 1.0], [0.5, 1.0, 0.5], [1.0, 0.5, 1.0]])
    np.testing.assert_allclose(matrix, expected)
    (request,) = embeddings_server.requests
    assert request.path == "/v1/embeddings"
    assert request.body["model"] == "emb-fake"
    assert request.body["input"][:2] == ["first", "second"]
    assert len(request.body["input"][2]) == MAX_EMBEDDING_CHARS
    assert request.headers["authorization"] == f"Bearer {CANARY_KEY}"


@pytest.mark.parametrize("status", [401, 500])
def test_embeddings_failure_is_unavailable_without_the_key(status: int) -> None:
    with FakeEmbeddingsServer([], status=status).running() as server:
        method = EmbeddingsSimilarity("emb-fake", _env(server))
        with pytest.raises(SimilarityUnavailable) as caught:
            asyncio.run(method.pairwise(["a b c", "d e f"]))
    assert CANARY_KEY not in str(caught.value)
    assert "embeddings call failed" in str(caught.value)


def test_embeddings_with_the_wrong_number_of_vectors_are_unavailable() -> None:
    with FakeEmbeddingsServer([[1.0, 0.0]]).running() as server:
        method = EmbeddingsSimilarity("emb-fake", _env(server))
        with pytest.raises(SimilarityUnavailable, match="expected 2 vectors"):
            asyncio.run(method.pairwise(["one answer", "another"]))


def test_embeddings_without_a_key_are_unavailable() -> None:
    with pytest.raises(SimilarityUnavailable, match="OPENAI_API_KEY"):
        asyncio.run(EmbeddingsSimilarity("emb", {}).pairwise(["a", "b"]))
