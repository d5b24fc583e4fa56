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

from llm_council.anonymize import is_label_map_entry, positions_from_label_map
from llm_council.errors import InputError
from llm_council.prompts import display_index_for
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


def word_count(text: str) -> int:
    """Whitespace-separated words: the length unit of records and of the length test."""
    return len(text.split())


#: ``{member: (characters, words)}`` of each stage-1 answer that has text
AnswerLengths = dict[str, tuple[int, int]]


def answer_lengths(answers: Iterable[MemberAnswer]) -> AnswerLengths:
    """Characters and :func:`word_count` of every answer with text, counted once per
    session for both the score table and the records."""
    return {
        answer.member: (len(answer.text), word_count(answer.text))
        for answer in answers
        if answer.text is not None
    }


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
    answers: Iterable[MemberAnswer],
    reviews: Iterable[Review],
    *,
    lengths: AnswerLengths | None = None,
) -> ScoreTable:
    """Build the table from the council's typed stage-1 answers and stage-2 reviews.

    Bias-check reviews (``check_kind`` set, ADR 0024) and second review orders (ADR 0046)
    are left out: the table is the observational data, one review per reviewer.
    ``lengths``: :func:`answer_lengths` of ``answers`` when the caller has them (counted
    here otherwise).
    """
    answer_list = [answer for answer in answers if answer.ok]
    review_list = [
        review
        for review in reviews
        if review.candidates and review.check_kind is None and review.review_order == 0
    ]
    candidates: list[str] = [answer.member for answer in answer_list]
    for review in review_list:
        for entry in review.candidates:
            if entry.candidate not in candidates:
                candidates.append(entry.candidate)
    reviewers = [review.reviewer for review in review_list]
    column = {name: index for index, name in enumerate(candidates)}
    n_columns = len(candidates)
    # filled as Python lists and converted once: one numpy call per array, not per cell
    length_chars = [math.nan] * n_columns
    length_words = [math.nan] * n_columns
    counted = answer_lengths(answer_list) if lengths is None else lengths
    for answer in answer_list:
        chars, words = counted[answer.member]
        length_chars[column[answer.member]] = chars
        length_words[column[answer.member]] = words
    # flat, row-major: numpy converts a flat list faster than nested ones
    n_cells = len(review_list) * n_columns
    scores = [math.nan] * n_cells
    positions = [UNKNOWN_POSITION] * n_cells
    is_self = [False] * n_cells
    for row, review in enumerate(review_list):
        start = row * n_columns
        for entry in review.candidates:
            cell = start + column[entry.candidate]
            if entry.score is not None and math.isfinite(entry.score):
                scores[cell] = entry.score
            positions[cell] = entry.display_index
            is_self[cell] = entry.is_self_review
    shape = (len(review_list), n_columns)
    return ScoreTable(
        reviewers=tuple(reviewers),
        candidates=tuple(candidates),
        scores=np.array(scores, dtype=np.float64).reshape(shape),
        positions=np.array(positions, dtype=np.intp).reshape(shape),
        is_self=np.array(is_self, dtype=bool).reshape(shape),
        length_chars=np.array(length_chars, dtype=np.float64),
        length_words=np.array(length_words, dtype=np.float64),
    )


def _model_name(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{where} must be a model name (text), got {type(value).__name__}")
    return value


def _responses_to_texts(stage1_responses: Any) -> dict[str, str]:
    """Accept ``{model: text}`` or karpathy's ``[{"model": ..., "response": ...}, ...]``."""
    if isinstance(stage1_responses, Mapping):
        items = [
            (_model_name(model, f"stage1_responses key {model!r}"), text)
            for model, text in stage1_responses.items()
        ]
    elif isinstance(stage1_responses, Sequence) and not isinstance(stage1_responses, str | bytes):
        items = []
        for index, entry in enumerate(stage1_responses):
            if not isinstance(entry, Mapping) or "model" not in entry or "response" not in entry:
                raise InputError(
                    f"stage1_responses[{index}] must be a mapping with 'model' and 'response', "
                    f"got {type(entry).__name__}"
                )
            model = _model_name(entry["model"], f"stage1_responses[{index}]['model']")
            if any(model == seen for seen, _ in items):
                raise InputError(f"stage1_responses[{index}]: model {model!r} answered twice")
            items.append((model, entry["response"]))
    else:
        raise InputError(
            "stage1_responses must be {model: text} or a list of {'model', 'response'}, "
            f"got {type(stage1_responses).__name__}"
        )
    texts: dict[str, str] = {}
    for model, text in items:
        if not isinstance(text, str):
            raise InputError(f"stage1_responses[{model!r}] must be text, got {type(text).__name__}")
        texts[model] = text
    return texts


#: larger scores are on no rating scale, and their squares overflow float64 statistics
MAX_ABS_SCORE = 1e9


def checked_score(score: Any, where: str) -> float | None:
    """A score as float; None or NaN/inf is no score (never 0); anything else: InputError."""
    if score is None:
        return None
    if isinstance(score, bool) or not isinstance(score, int | float):
        raise InputError(f"{where} must be a number, got {score!r:.60}")
    if isinstance(score, float) and not math.isfinite(score):
        return None
    if abs(score) > MAX_ABS_SCORE:
        raise InputError(f"{where} must be a number within ±{MAX_ABS_SCORE:g}, got {score!r:.60}")
    return float(score)


def _scores_by_reviewer(stage2_scores: Any) -> dict[str, dict[str, float | None]]:
    """``{reviewer: {candidate: score}}`` checked: names are text, scores numbers or None."""
    if not isinstance(stage2_scores, Mapping):
        raise InputError(
            f"stage2_scores must be {{reviewer: {{candidate: score}}}}, got "
            f"{type(stage2_scores).__name__}"
        )
    checked: dict[str, dict[str, float | None]] = {}
    for reviewer, given in stage2_scores.items():
        name = _model_name(reviewer, f"stage2_scores key {reviewer!r}")
        if not isinstance(given, Mapping):
            raise InputError(
                f"stage2_scores[{name!r}] must be a mapping of candidate -> score, "
                f"got {type(given).__name__}"
            )
        row: dict[str, float | None] = {}
        for candidate, score in given.items():
            where = f"stage2_scores[{name!r}][{candidate!r}]"
            column = _model_name(candidate, f"stage2_scores[{name!r}] key {candidate!r}")
            row[column] = checked_score(score, where)
        checked[name] = row
    return checked


def _is_position(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _candidate_positions(mapping: Mapping[Any, Any], where: str) -> dict[str, int]:
    """``{candidate: display_index}``: integer positions >= 0, each used once."""
    positions: dict[str, int] = {}
    shown_at: dict[int, str] = {}
    for candidate, index in mapping.items():
        name = _model_name(candidate, f"{where} key {candidate!r}")
        if not _is_position(index) or index < 0:
            raise InputError(
                f"{where}[{name!r}] must be an integer display position >= 0, got {index!r:.60}"
            )
        if index in shown_at:
            raise InputError(f"{where}[{name!r}]: position {index} is also {shown_at[index]!r}'s")
        positions[name] = index
        shown_at[index] = name
    return positions


def _one_order(mapping: Mapping[Any, Any], where: str) -> dict[str, int]:
    """One order, as ``{candidate: display_index}`` or as a label map."""
    values = list(mapping.values())
    if values and all(is_label_map_entry(value) for value in values):
        labels = list(mapping)
        if all(isinstance(label, str) and _is_label(label) for label in labels):
            return positions_from_label_map(mapping, where)
    return _candidate_positions(mapping, where)


def _is_label(text: str) -> bool:
    try:
        display_index_for(text)
    except ValueError:
        return False
    return True


def positions_by_reviewer(
    position_mapping: Any, reviewers: Sequence[str]
) -> dict[str, dict[str, int]]:
    """The display order each reviewer saw, from any accepted ``position_mapping`` form.

    Flat forms say every reviewer saw the same order (the reference design, and
    karpathy's council): ``{candidate: display_index}`` or one ``label_to_model`` map.
    Per-reviewer forms give each reviewer's own order: ``{reviewer: {candidate:
    display_index}}`` or ``{reviewer: label_to_model}`` (our metadata). ``None`` or
    empty: no positions. Anything else raises a one-line InputError naming the key;
    a reviewer that scored nothing may be listed and is ignored.
    """
    if position_mapping is None:
        return {}
    if not isinstance(position_mapping, Mapping):
        raise InputError(
            "position_mapping must be {candidate: position} or {reviewer: {candidate: "
            f"position}}, got {type(position_mapping).__name__}"
        )
    entries = list(position_mapping.items())
    if not entries:
        return {}
    nested = [isinstance(value, Mapping) and not is_label_map_entry(value) for _, value in entries]
    if not any(nested):
        shared = _one_order(position_mapping, "position_mapping")
        return {reviewer: shared for reviewer in reviewers}
    if not all(nested):
        odd_key = entries[nested.index(False)][0]
        raise InputError(
            f"position_mapping[{odd_key!r}] is not a per-reviewer mapping while other entries "
            "are: use either {candidate: position} or {reviewer: {candidate: position}}"
        )
    orders: dict[str, dict[str, int]] = {}
    for reviewer, order in entries:
        name = _model_name(reviewer, f"position_mapping key {reviewer!r}")
        orders[name] = _one_order(order, f"position_mapping[{name!r}]")
    return orders


def score_table_from_mappings(
    stage1_responses: Any,
    stage2_scores: Any,
    position_mapping: Any = None,
) -> ScoreTable:
    """Build the table from plain dicts (standalone use); a reviewer named like a
    candidate is taken to be scoring its own answer. Bad shapes raise InputError."""
    texts = _responses_to_texts(stage1_responses)
    scores = _scores_by_reviewer(stage2_scores)
    candidates: list[str] = list(texts)
    known = set(candidates)
    for given in scores.values():
        for name in given:
            if name not in known:
                candidates.append(name)
                known.add(name)
    reviewers = list(scores)
    orders = positions_by_reviewer(position_mapping, reviewers)
    arrays = _empty_table(reviewers, candidates)
    column = {name: index for index, name in enumerate(candidates)}
    for model, text in texts.items():
        arrays["length_chars"][column[model]] = len(text)
        arrays["length_words"][column[model]] = word_count(text)
    for row, (reviewer, given) in enumerate(scores.items()):
        for candidate, score in given.items():
            col = column[candidate]
            arrays["is_self"][row, col] = candidate == reviewer
            if score is not None:
                arrays["scores"][row, col] = score
        for model, index in orders.get(reviewer, {}).items():
            if model in column:
                arrays["positions"][row, column[model]] = index
    return ScoreTable(reviewers=tuple(reviewers), candidates=tuple(candidates), **arrays)
