"""Per-reviewer bias adjustments for the debiased aggregate, from the store's history.

:func:`reviewer_adjustments` is the one place the audit turns past sessions into the
plain numbers the core's :func:`~llm_council.debiased_aggregate.debiased_aggregate`
takes (ADR 0046). It reads the records with the store's own reader
(:func:`~llm_council.bias_audit.records.jsonl_store.read_records`: complete sessions only,
torn or malformed lines skipped) and fits :func:`~llm_council.stats.reviewer_effects.
fit_reviewer_effects`; the per-reviewer profile summary of issue 24 (items 1-3) can take
the reader's place behind the same signature. Reading costs time linear in the store's
size (see ADR 0046 for the measured cost).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from llm_council.bias_audit.records.jsonl_store import read_records
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.store_urls import is_postgres_url
from llm_council.debiased_aggregate import ReviewerAdjustment
from llm_council.errors import RecordError
from llm_council.stats.reviewer_effects import fit_reviewer_effects


def history_arrays(records: Iterable[ReviewRecord]) -> dict[str, np.ndarray] | None:
    """The scores the fit reads, as arrays: other members' answers only (self-scores and
    check reviews left out), each answer's ``log2`` length centred within its session.
    ``reviewer`` indexes ``names``. None when there is no such score."""
    answer_ids: dict[tuple[str, str], int] = {}
    reviewer_ids: dict[str, int] = {}
    session_of_answer: list[str] = []
    log_length_of_answer: list[float] = []
    answer, reviewer, slot, score = [], [], [], []
    for record in records:
        if (
            record.check_kind is not None
            or record.is_self_review
            or record.score_value is None
            or not math.isfinite(record.score_value)
        ):
            continue
        key = (record.session_id, record.model_id)
        if key not in answer_ids:
            answer_ids[key] = len(answer_ids)
            session_of_answer.append(record.session_id)
            log_length_of_answer.append(math.log2(max(record.response_length_chars, 1)))
        answer.append(answer_ids[key])
        reviewer.append(reviewer_ids.setdefault(record.reviewer_id, len(reviewer_ids)))
        slot.append(record.position)
        score.append(record.score_value)
    if not score:
        return None
    # centre each answer's log length on its session's mean over answers
    _, session_code = np.unique(np.array(session_of_answer), return_inverse=True)
    log_length = np.array(log_length_of_answer)
    session_mean = np.bincount(session_code, weights=log_length) / np.bincount(session_code)
    centred = log_length - session_mean[session_code]
    answer_array = np.array(answer, dtype=np.intp)
    return {
        "answer": answer_array,
        "reviewer": np.array(reviewer, dtype=np.intp),
        "slot": np.array(slot, dtype=np.intp),
        "log2_length": centred[answer_array],
        "score": np.array(score, dtype=float),
        "names": np.array(list(reviewer_ids), dtype=object),
    }


def adjustments_from_records(
    records: Iterable[ReviewRecord], reviewers: Sequence[str] | None = None, *, min_scores: int = 10
) -> dict[str, ReviewerAdjustment]:
    """The adjustments of ``reviewers`` (default: every reviewer in ``records``) fitted on
    ``records``; a reviewer with fewer than ``min_scores`` scores of others' answers is
    left out (the debiased aggregate then takes its scores as they are)."""
    arrays = history_arrays(records)
    if arrays is None:
        return {}
    names = [str(name) for name in arrays["names"]]
    effects = fit_reviewer_effects(
        arrays["answer"],
        arrays["reviewer"],
        arrays["slot"],
        arrays["log2_length"],
        arrays["score"],
        len(names),
        min_scores=min_scores,
    )
    wanted = set(names if reviewers is None else reviewers)
    return {
        name: ReviewerAdjustment(
            leniency=effect.leniency,
            slot_effects=effect.slot_effects,
            length_slope=effect.length_slope,
            n_scores=effect.n_scores,
        )
        for name, effect in zip(names, effects, strict=True)
        if effect is not None and name in wanted
    }


def reviewer_adjustments(
    store: str | Path,
    reviewers: Sequence[str],
    *,
    council_config_hash: str | None = None,
) -> dict[str, ReviewerAdjustment]:
    """The adjustments of ``reviewers`` from the JSONL store at ``store``.

    ``council_config_hash`` keeps only that council's past sessions (same members, scale
    and recusal, so the slots and scores mean the same). A missing store gives ``{}``; a
    PostgreSQL store is not read yet (a :class:`RecordError` saying so).
    """
    if is_postgres_url(str(store)):
        raise RecordError("the debiased aggregate reads JSONL stores only (not PostgreSQL yet)")
    with warnings.catch_warnings():
        # a torn or malformed line is the report's to show, not every session's
        warnings.simplefilter("ignore")
        records: Iterable[ReviewRecord] = list(read_records(Path(store)))
    if council_config_hash is not None:
        records = [r for r in records if r.council_config_hash == council_config_hash]
    return adjustments_from_records(records, reviewers)
