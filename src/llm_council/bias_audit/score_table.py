"""The audit's input: one reviewer x candidate table, built from a session or from dicts.

Both entry points (the middleware's :class:`SessionCompleted` event and the standalone
``run_bias_audit`` for users with their own council) are turned into a
:class:`ScoreTable` first, so the statistics see one shape whatever the source.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from llm_council.errors import InputError
from llm_council.results import MemberAnswer, Review

UNKNOWN_POSITION = -1


@dataclass(frozen=True)
class ScoreTable:
    """Scores, display positions and self-review flags of one session.

    ``scores[r, c]`` is reviewer r's score of candidate c's answer (NaN when none was
    given), ``positions[r, c]`` the display_index r saw it at (``-1`` when unknown or
    not shown), ``is_self[r, c]`` marks a reviewer scoring its own answer.
    """

    reviewers: tuple[str, ...]
    candidates: tuple[str, ...]
    scores: NDArray[np.float64]
    positions: NDArray[np.intp]
    is_self: NDArray[np.bool_]
    length_chars: NDArray[np.float64]
    length_words: NDArray[np.float64]

    @property
    def has_positions(self) -> bool:
        scored = ~np.isnan(self.scores) & ~self.is_self
        return bool(np.any(self.positions[scored] != UNKNOWN_POSITION))


def word_count(text: str) -> int:
    """Whitespace-separated words: the length unit of records and of the length test."""
    return len(text.split())


def _empty_table(reviewers: Sequence[str], candidates: Sequence[str]) -> dict[str, Any]:
    shape = (len(reviewers), len(candidates))
    return {
        "scores": np.full(shape, np.nan),
        "positions": np.full(shape, UNKNOWN_POSITION, dtype=np.intp),
        "is_self": np.zeros(shape, dtype=bool),
        "length_chars": np.full(len(candidates), np.nan),
        "length_words": np.full(len(candidates), np.nan),
    }


def score_table_from_session(
    answers: Iterable[MemberAnswer], reviews: Iterable[Review]
) -> ScoreTable:
    """Build the table from the council's typed stage-1 answers and stage-2 reviews."""
    answer_list = [answer for answer in answers if answer.ok]
    review_list = [review for review in reviews if review.candidates]
    candidates: list[str] = [answer.member for answer in answer_list]
    for review in review_list:
        for entry in review.candidates:
            if entry.candidate not in candidates:
                candidates.append(entry.candidate)
    reviewers = [review.reviewer for review in review_list]
    arrays = _empty_table(reviewers, candidates)
    column = {name: index for index, name in enumerate(candidates)}
    for answer in answer_list:
        text = answer.text or ""
        arrays["length_chars"][column[answer.member]] = len(text)
        arrays["length_words"][column[answer.member]] = word_count(text)
    for row, review in enumerate(review_list):
        for entry in review.candidates:
            col = column[entry.candidate]
            if entry.score is not None and math.isfinite(entry.score):
                arrays["scores"][row, col] = entry.score
            arrays["positions"][row, col] = entry.display_index
            arrays["is_self"][row, col] = entry.is_self_review
    return ScoreTable(reviewers=tuple(reviewers), candidates=tuple(candidates), **arrays)


def _responses_to_texts(stage1_responses: Any) -> dict[str, str]:
    """Accept ``{model: text}`` or karpathy's ``[{"model": ..., "response": ...}, ...]``."""
    if isinstance(stage1_responses, Mapping):
        items = list(stage1_responses.items())
    elif isinstance(stage1_responses, Sequence) and not isinstance(stage1_responses, str):
        items = []
        for index, entry in enumerate(stage1_responses):
            if not isinstance(entry, Mapping) or "model" not in entry or "response" not in entry:
                raise InputError(
                    f"stage1_responses[{index}] must be a mapping with 'model' and 'response', "
                    f"got {type(entry).__name__}"
                )
            items.append((entry["model"], entry["response"]))
    else:
        raise InputError(
            "stage1_responses must be {model: text} or a list of {'model', 'response'}, "
            f"got {type(stage1_responses).__name__}"
        )
    texts: dict[str, str] = {}
    for model, text in items:
        if not isinstance(text, str):
            raise InputError(f"stage1_responses[{model!r}] must be text, got {type(text).__name__}")
        texts[str(model)] = text
    return texts


def _positions_for_reviewer(reviewer: str, mapping: Mapping[str, Any]) -> dict[str, int]:
    """``{model: display_index}`` from either that form or a label_to_model form."""
    if all(isinstance(value, int) and not isinstance(value, bool) for value in mapping.values()):
        return {str(model): int(index) for model, index in mapping.items()}
    from llm_council.anonymize import derive_position_mapping  # the lead's helper

    try:
        derived = derive_position_mapping(dict(mapping))
    except (ValueError, TypeError, KeyError) as error:
        raise InputError(f"position_mapping[{reviewer!r}]: {error}") from error
    return {str(model): int(index) for model, index in derived.items()}


def score_table_from_mappings(
    stage1_responses: Any,
    stage2_scores: Mapping[str, Mapping[str, float | None]],
    position_mapping: Mapping[str, Mapping[str, Any]] | None = None,
) -> ScoreTable:
    """Build the table from plain dicts (standalone use); a reviewer named like a
    candidate is taken to be scoring its own answer."""
    texts = _responses_to_texts(stage1_responses)
    if not isinstance(stage2_scores, Mapping):
        raise InputError(
            f"stage2_scores must be {{reviewer: {{candidate: score}}}}, got "
            f"{type(stage2_scores).__name__}"
        )
    candidates: list[str] = list(texts)
    for reviewer, given in stage2_scores.items():
        if not isinstance(given, Mapping):
            raise InputError(f"stage2_scores[{reviewer!r}] must be a mapping of candidate -> score")
        candidates.extend(str(name) for name in given if str(name) not in candidates)
    reviewers = [str(name) for name in stage2_scores]
    arrays = _empty_table(reviewers, candidates)
    column = {name: index for index, name in enumerate(candidates)}
    for model, text in texts.items():
        arrays["length_chars"][column[model]] = len(text)
        arrays["length_words"][column[model]] = word_count(text)
    for row, (reviewer, given) in enumerate(stage2_scores.items()):
        for candidate, score in given.items():
            col = column[str(candidate)]
            arrays["is_self"][row, col] = str(candidate) == str(reviewer)
            if score is None:
                continue
            if isinstance(score, bool) or not isinstance(score, int | float):
                raise InputError(
                    f"stage2_scores[{reviewer!r}][{candidate!r}] must be a number, got {score!r}"
                )
            if math.isfinite(score):
                arrays["scores"][row, col] = float(score)
    for reviewer, mapping in (position_mapping or {}).items():
        if str(reviewer) not in reviewers:
            continue
        row = reviewers.index(str(reviewer))
        for model, index in _positions_for_reviewer(str(reviewer), mapping).items():
            if model in column:
                arrays["positions"][row, column[model]] = index
    return ScoreTable(reviewers=tuple(reviewers), candidates=tuple(candidates), **arrays)
