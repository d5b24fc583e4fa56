"""The scores the reviewer-effects fit reads, as arrays, from review records.

Shared by the full-read fit (:mod:`~llm_council.bias_audit.session.history_adjustments`)
and the summed history kept beside a JSONL store
(:mod:`~llm_council.bias_audit.records.adjustment_sidecar`), so both see the same rows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np

from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.summary_files import SCORE_BOUND


def history_arrays(records: Iterable[ReviewRecord]) -> dict[str, np.ndarray] | None:
    """The scores the fit reads, as arrays: other members' answers only (self-scores and
    check reviews left out), each answer's ``log2`` length centred within its session.
    ``reviewer`` indexes ``names``. None when there is no such score.

    A session with a score that is not finite or beyond :data:`SCORE_BOUND` in size is
    left out whole (1e300 scores would overflow every sum and swamp every honest session's),
    in the full-read fit and the summed history alike."""
    records = list(records)
    out_of_bounds = {
        record.session_id
        for record in records
        if record.score_value is not None
        and not (math.isfinite(record.score_value) and abs(record.score_value) <= SCORE_BOUND)
    }
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
            or record.session_id in out_of_bounds
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
