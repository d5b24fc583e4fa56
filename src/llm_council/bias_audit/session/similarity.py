"""How alike two answers are, as a number in [0, 1], computed at audit time (style mimicry).

The audit stores only the number (``similarity_to_own`` on each record); the texts go no
further. Two implementations of the :class:`Similarity` protocol:

- :class:`CharNgramSimilarity` (the default, ``lexical``): cosine of character 3-gram
  count vectors, no model and no network;
- :class:`EmbeddingsSimilarity` (``openai:MODEL``): cosine of the vectors a provider's
  embeddings API returns (OpenAI SDK ``embeddings.create``; any compatible server through
  ``OPENAI_BASE_URL``), mapped to [0, 1] as ``(1 + cos) / 2``.

Chosen by ``LLM_COUNCIL_SIMILARITY`` (``lexical``, ``off`` or ``openai:MODEL``). The two
scales differ: slopes estimated on one are not comparable with slopes on the other, so a
store should be written with one method. Each text is cut to its first
:data:`MAX_SIMILARITY_CHARS` characters before anything is computed, so a 50 MB answer
costs no more than a long one.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from llm_council.errors import ConfigError
from llm_council.text_similarity import (
    MAX_SIMILARITY_CHARS,
    ngram_cosine,
    ngram_cosine_matrix,
)

__all__ = [
    "MAX_SIMILARITY_CHARS",
    "CharNgramSimilarity",
    "EmbeddingsSimilarity",
    "Similarity",
    "SimilarityUnavailable",
    "ngram_cosine",
    "similarities_between_answers",
    "similarity_from_env",
    "similarity_from_spec",
]

SIMILARITY_ENV = "LLM_COUNCIL_SIMILARITY"
DEFAULT_SIMILARITY = "lexical"
#: characters sent per answer to an embeddings API (about 2,000 tokens, under every limit)
MAX_EMBEDDING_CHARS = 8_000
EMBEDDINGS_TIMEOUT_S = 30.0


class SimilarityUnavailable(Exception):
    """The similarity could not be computed (an embeddings call failed); the audit stores nulls."""


class Similarity(Protocol):
    """Pairwise similarity of a session's answers."""

    #: what the metadata names the method (``lexical``, ``openai:text-embedding-3-small``)
    name: str

    async def pairwise(self, texts: Sequence[str]) -> np.ndarray:
        """A symmetric ``len(texts)`` square matrix in [0, 1]; NaN where undefined."""
        ...


class CharNgramSimilarity:
    """The lexical default: :func:`ngram_cosine` for every pair, all pairs from one sort
    (:func:`~llm_council.text_similarity.ngram_cosine_matrix`)."""

    name = "lexical"

    async def pairwise(self, texts: Sequence[str]) -> np.ndarray:
        return ngram_cosine_matrix(texts)


def cosine_matrix_unit_interval(vectors: np.ndarray) -> np.ndarray:
    """``(1 + cos) / 2`` for every pair of rows; NaN for a zero vector."""
    norms = np.linalg.norm(vectors, axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        unit = vectors / norms[:, None]
    cosine = np.clip(unit @ unit.T, -1.0, 1.0)
    return np.asarray((1.0 + cosine) / 2.0)


class EmbeddingsSimilarity:
    """Cosine of embeddings from the OpenAI SDK's ``embeddings.create``, mapped to [0, 1].

    One request per session with every answer (cut to :data:`MAX_EMBEDDING_CHARS`). The
    key is read from ``OPENAI_API_KEY`` and the server from ``OPENAI_BASE_URL`` (when
    set), as the chat provider does. Any failure raises :class:`SimilarityUnavailable`
    with the error's class only, never the key.
    """

    def __init__(self, model: str, environ: Mapping[str, str] | None = None) -> None:
        self.model = model
        self.name = f"openai:{model}"
        env = os.environ if environ is None else environ
        self._api_key = env.get("OPENAI_API_KEY", "").strip()
        self._base_url = env.get("OPENAI_BASE_URL", "").strip() or None

    async def pairwise(self, texts: Sequence[str]) -> np.ndarray:
        if not self._api_key:
            raise SimilarityUnavailable("OPENAI_API_KEY is not set")
        try:
            import openai
        except ImportError:
            raise SimilarityUnavailable("the 'openai' package is not installed") from None
        client: Any = openai.AsyncOpenAI(
            api_key=self._api_key,
            base_url=self._base_url,
            max_retries=0,
            timeout=EMBEDDINGS_TIMEOUT_S,
        )
        try:
            response = await client.embeddings.create(
                model=self.model, input=[text[:MAX_EMBEDDING_CHARS] or " " for text in texts]
            )
            rows = sorted(response.data, key=lambda item: item.index)
            vectors = np.array([row.embedding for row in rows], dtype=float)
        except Exception as error:
            # the class name only: an SDK message can echo request details
            raise SimilarityUnavailable(
                f"embeddings call failed ({type(error).__name__})"
            ) from None
        finally:
            await client.close()
        if vectors.ndim != 2 or vectors.shape[0] != len(texts) or not np.isfinite(vectors).all():
            raise SimilarityUnavailable(
                f"embeddings response has shape {vectors.shape}, expected {len(texts)} vectors"
            )
        return cosine_matrix_unit_interval(vectors)


def similarity_from_spec(spec: str, environ: Mapping[str, str] | None = None) -> Similarity | None:
    """``lexical`` -> :class:`CharNgramSimilarity`, ``openai:MODEL`` -> embeddings,
    ``off`` -> None; anything else is a :class:`ConfigError` quoting the value."""
    text = spec.strip()
    if text == "" or text == "lexical":
        return CharNgramSimilarity()
    if text == "off":
        return None
    provider, _, model = text.partition(":")
    if provider == "openai" and model.strip():
        return EmbeddingsSimilarity(model.strip(), environ)
    raise ConfigError(
        f"{SIMILARITY_ENV}: unknown similarity {spec!r} (use lexical, off or openai:MODEL)"
    )


def similarity_from_env(environ: Mapping[str, str] | None = None) -> Similarity | None:
    """The similarity ``LLM_COUNCIL_SIMILARITY`` selects (default ``lexical``)."""
    env = os.environ if environ is None else environ
    return similarity_from_spec(env.get(SIMILARITY_ENV, DEFAULT_SIMILARITY), env)


#: ``{member: {other member: similarity}}`` for every pair of members that answered
SimilarityByMember = dict[str, dict[str, float]]


async def similarities_between_answers(
    answers: Mapping[str, str], similarity: Similarity
) -> SimilarityByMember:
    """Every answered member's similarity to every other member's answer (undefined pairs,
    such as a two-character answer, are left out). May raise :class:`SimilarityUnavailable`."""
    members = list(answers)
    if len(members) < 2:
        return {}
    matrix = await similarity.pairwise([answers[member] for member in members])
    by_member: SimilarityByMember = {member: {} for member in members}
    for i, first in enumerate(members):
        for j, second in enumerate(members):
            value = float(matrix[i, j])
            if i != j and math.isfinite(value):
                by_member[first][second] = min(1.0, max(0.0, value))
    return by_member
