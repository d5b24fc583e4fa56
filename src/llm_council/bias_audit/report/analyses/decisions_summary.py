"""The per-session summary behind decisions affected (ADR 0074): what the winners need.

A summary of some sessions holds, per candidate answer (a session's model), its session,
model, centred log2 length and the sums and counts of the others' ranks and scores; per
vote with a score, its answer, reviewer, display slot and score (the adjusted mean needs
each vote's own reviewer and slot); per session its id and first timestamp; and the
additive sums of the reviewer-effects fit
(:class:`~llm_council.stats.reviewers.reviewer_effect_sums.ReviewerEffectSums`). Every
part is a sum or a list of rows over whole sessions, so two summaries of disjoint
sessions merge exactly: names are united (kept sorted, so codes are name order), rows
are concatenated, sums are added.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader
from llm_council.bias_audit.report.load.tables import nullable_floats
from llm_council.stats.reviewers.reviewer_effect_sums import (
    LENGTH,
    ReviewerEffectSums,
    reviewer_effect_sums,
)
from llm_council.stats.reviewers.reviewer_effects import MAX_SLOTS

#: one row per observational record: the others' rank of the answer in its review (the
#: council's re-ranking without the reviewer's own answer, ties in display order) and the
#: answer's log2 length centred on its session's answers
ROWS_SQL = """
    WITH answers AS (
        SELECT session, model, log2(greatest(any_value(chars), 1)) AS log2_chars
        FROM records GROUP BY session, model),
    centred AS (
        SELECT session, model,
               log2_chars - avg(log2_chars) OVER (PARTITION BY session) AS x
        FROM answers),
    ranked AS (
        SELECT session, reviewer, model, position, score, is_self,
               CASE WHEN NOT is_self AND rank IS NOT NULL THEN row_number() OVER (
                   PARTITION BY session, reviewer, (NOT is_self AND rank IS NOT NULL)
                   ORDER BY rank, position) END AS other_rank
        FROM records),
    session_codes AS (
        SELECT session, (row_number() OVER (ORDER BY session) - 1)::INTEGER AS session_code
        FROM (SELECT DISTINCT session FROM records))
    SELECT s.session_code, rc.reviewer_index AS reviewer_code, mc.model_index AS model_code,
           k.position, k.score, k.is_self, k.other_rank, c.x
    FROM ranked k JOIN centred c USING (session, model)
    JOIN reviewers rc USING (reviewer) JOIN models mc USING (model)
    JOIN session_codes s USING (session)
"""

#: per session in the order of its code above: its id and first timestamp (seconds since
#: the epoch; NULL when untimed)
_SESSIONS_SQL = """
    SELECT any_value(session_id), epoch(min(time)) FROM records GROUP BY session
    ORDER BY session
"""

#: the per-answer arrays, the per-vote arrays and the per-session array, by name
ANSWER_FIELDS = ("session", "model", "x", "rank_sum", "rank_count", "score_sum", "score_count")
VOTE_FIELDS = ("answer", "reviewer", "position", "score")
#: the integer fields' dtype: 32 bits halve the per-vote rows (a 10M-record store has
#: about 8M votes); a merge that would pass 2**31 answers is refused
_SMALL_INTEGERS = (
    "session",
    "model",
    "rank_count",
    "score_count",
    "answer",
    "reviewer",
    "position",
)
_LIMIT = np.iinfo(np.int32).max


def _compact(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The arrays with their integer fields as int32 (the checks above keep them in range)."""
    return {
        name: values.astype(np.int32) if name in _SMALL_INTEGERS else values
        for name, values in arrays.items()
    }


@dataclass(frozen=True)
class DecisionsSummary:
    """The winners' inputs of some sessions (module docstring)."""

    reviewers: tuple[str, ...]  # sorted; vote reviewer codes index it
    models: tuple[str, ...]  # sorted; answer model codes index it (name order)
    session_ids: tuple[str, ...]  # answer session codes index it
    session_seconds: np.ndarray  # (S,) first timestamp, NaN when untimed
    answers: dict[str, np.ndarray]  # ANSWER_FIELDS, each (A,)
    votes: dict[str, np.ndarray]  # VOTE_FIELDS, each (V,): the votes with a finite score
    effect_sums: ReviewerEffectSums
    n_finite_scores: int  # finite scores of any record (self-scores too)


def _names(connection: duckdb.DuckDBPyConnection, table: str) -> tuple[str, ...]:
    """The names of ``create_analysis_tables``'s ``reviewers`` or ``models`` table in code
    order (sorted)."""
    column = table[:-1]
    query = f"SELECT {column} FROM {table} ORDER BY {column}_index"
    return tuple(str(name) for (name,) in connection.execute(query).fetchall())


def summarize_decisions(connection: duckdb.DuckDBPyConnection) -> DecisionsSummary:
    """The summary of every session in ``connection``'s ``records`` table."""
    fetched = connection.execute(ROWS_SQL).fetchnumpy()
    score = nullable_floats(fetched["score"])
    reviewers, models = _names(connection, "reviewers"), _names(connection, "models")
    reviewer = np.asarray(fetched["reviewer_code"], dtype=np.int64)
    model = np.asarray(fetched["model_code"], dtype=np.int64)
    session = np.asarray(fetched["session_code"], dtype=np.int64)
    session_rows = connection.execute(_SESSIONS_SQL).fetchall()
    session_ids = tuple(str(row[0]) for row in session_rows)
    seconds = np.array([np.nan if row[1] is None else float(row[1]) for row in session_rows])
    position = np.asarray(fetched["position"], dtype=np.int64)
    is_self = np.asarray(fetched["is_self"], dtype=bool)
    x = nullable_floats(fetched["x"])
    other_rank = nullable_floats(fetched["other_rank"])
    del fetched
    n_models = max(len(models), 1)
    pairs, answer = np.unique(session * n_models + model, return_inverse=True)
    n_answers = pairs.size
    answer_x = np.full(n_answers, np.nan)
    answer_x[answer] = x  # one value per answer: the centred length of its (session, model)
    votes = ~is_self
    ranked = votes & np.isfinite(other_rank)
    scored = votes & np.isfinite(score)
    answers = {
        "session": pairs // n_models,
        "model": pairs % n_models,
        "x": answer_x,
        # float even when empty (bincount of nothing is integer)
        "rank_sum": np.bincount(
            answer[ranked], weights=other_rank[ranked], minlength=n_answers
        ).astype(float),
        "rank_count": np.bincount(answer[ranked], minlength=n_answers).astype(np.int64),
        "score_sum": np.bincount(answer[scored], weights=score[scored], minlength=n_answers).astype(
            float
        ),
        "score_count": np.bincount(answer[scored], minlength=n_answers).astype(np.int64),
    }
    sums = reviewer_effect_sums(
        answer[scored], reviewer[scored], position[scored], x[scored], score[scored], reviewers
    )
    return DecisionsSummary(
        reviewers=reviewers,
        models=models,
        session_ids=session_ids,
        session_seconds=seconds,
        answers=_compact(answers),
        votes=_compact(
            {
                "answer": answer[scored],
                "reviewer": reviewer[scored],
                "position": position[scored],
                "score": score[scored],
            }
        ),
        effect_sums=sums,
        n_finite_scores=int(np.isfinite(score).sum()),
    )


def _united(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(sorted(set(first) | set(second)))


def _recode(names: tuple[str, ...], into: tuple[str, ...]) -> np.ndarray:
    """Each of ``names``' position in the sorted ``into``."""
    return np.searchsorted(np.array(into, dtype=str), np.array(names, dtype=str)).astype(np.int64)


def merge_decisions(saved: DecisionsSummary, new: DecisionsSummary) -> DecisionsSummary:
    """The summary of both sets of sessions; raises ``ValueError`` when they share one."""
    shared = set(saved.session_ids) & set(new.session_ids)
    if shared:
        raise ValueError(f"decisions summary: session {min(shared)!r} is in both summaries")
    reviewers = _united(saved.reviewers, new.reviewers)
    models = _united(saved.models, new.models)
    answers: dict[str, list[np.ndarray]] = {name: [] for name in ANSWER_FIELDS}
    votes: dict[str, list[np.ndarray]] = {name: [] for name in VOTE_FIELDS}
    session_offset = answer_offset = 0
    n_answers = saved.answers["session"].size + new.answers["session"].size
    if max(n_answers, len(saved.session_ids) + len(new.session_ids)) > _LIMIT:
        raise ValueError("decisions summary: more than 2**31 answers or sessions")
    for part in (saved, new):
        model_code = _recode(part.models, models) if part.models else np.zeros(0, np.int64)
        reviewer_code = (
            _recode(part.reviewers, reviewers) if part.reviewers else np.zeros(0, np.int64)
        )
        for name in ANSWER_FIELDS:
            answers[name].append(part.answers[name])
        answers["session"][-1] = part.answers["session"] + session_offset
        answers["model"][-1] = model_code[part.answers["model"]]
        for name in VOTE_FIELDS:
            votes[name].append(part.votes[name])
        votes["answer"][-1] = part.votes["answer"] + answer_offset
        votes["reviewer"][-1] = reviewer_code[part.votes["reviewer"]]
        session_offset += len(part.session_ids)
        answer_offset += part.answers["session"].size
    return DecisionsSummary(
        reviewers=reviewers,
        models=models,
        session_ids=saved.session_ids + new.session_ids,
        session_seconds=np.concatenate([saved.session_seconds, new.session_seconds]),
        answers=_compact({name: np.concatenate(parts) for name, parts in answers.items()}),
        votes=_compact({name: np.concatenate(parts) for name, parts in votes.items()}),
        effect_sums=saved.effect_sums.merged(new.effect_sums),
        n_finite_scores=saved.n_finite_scores + new.n_finite_scores,
    )


def decisions_payload(summary: DecisionsSummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """JSON-safe metadata and named arrays (no pickling)."""
    sums = summary.effect_sums
    meta = {
        "reviewers": list(summary.reviewers),
        "models": list(summary.models),
        "session_ids": list(summary.session_ids),
        "n_finite_scores": summary.n_finite_scores,
        "sums_reviewers": list(sums.reviewers),
        "sums_columns": [list(column) for column in sums.columns],
        "sums_n_answers": sums.n_answers,
        "sums_n_slots": sums.n_slots,
    }
    arrays = {"session_seconds": summary.session_seconds}
    arrays |= {f"answer_{name}": summary.answers[name] for name in ANSWER_FIELDS}
    arrays |= {f"vote_{name}": summary.votes[name] for name in VOTE_FIELDS}
    arrays |= {
        "sums_n_scores": sums.n_scores,
        "sums_cross": sums.cross,
        "sums_gram_diagonal": sums.gram_diagonal,
        "sums_gram_length": sums.gram_length,
    }
    return meta, arrays


def decisions_from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> DecisionsSummary:
    """The summary back from :func:`decisions_payload`; ``ValueError`` names a bad field."""
    read = PayloadReader("decisions", meta, arrays)
    reviewers, models = read.names("reviewers"), read.names("models")
    session_ids = read.names("session_ids")
    for field, names in (("reviewers", reviewers), ("models", models)):
        if list(names) != sorted(names):
            raise read.fail(field, "is not sorted")
    seconds = read.finite("session_seconds", (len(session_ids),), nan_ok=True)
    n_answers = read.array("answer_session", "i", (None,)).size
    answers = {
        "session": read.codes("answer_session", n_answers, len(session_ids)),
        "model": read.codes("answer_model", n_answers, len(models)),
        "x": read.finite("answer_x", (n_answers,), nan_ok=True),
        "rank_sum": read.finite("answer_rank_sum", (n_answers,)),
        "rank_count": read.counts("answer_rank_count", (n_answers,)),
        "score_sum": read.finite("answer_score_sum", (n_answers,)),
        "score_count": read.counts("answer_score_count", (n_answers,)),
    }
    n_votes = read.array("vote_answer", "i", (None,)).size
    votes = {
        "answer": read.codes("vote_answer", n_votes, n_answers),
        "reviewer": read.codes("vote_reviewer", n_votes, len(reviewers)),
        "position": read.array("vote_position", "i", (n_votes,)),
        "score": read.finite("vote_score", (n_votes,)),
    }
    return DecisionsSummary(
        reviewers=reviewers,
        models=models,
        session_ids=session_ids,
        session_seconds=seconds,
        answers=_compact(_within_int32(read, "answer", answers)),
        votes=_compact(_within_int32(read, "vote", votes)),
        effect_sums=_sums_from_payload(read),
        n_finite_scores=read.integer("n_finite_scores"),
    )


def _within_int32(
    read: PayloadReader, prefix: str, arrays: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """``arrays``, once every integer field is known to fit 32 bits."""
    for name in _SMALL_INTEGERS:
        values = arrays.get(name)
        if values is not None and values.size and np.abs(values).max() > _LIMIT:
            raise read.fail(f"{prefix}_{name}", "holds a number outside 32 bits")
    return arrays


def _sums_from_payload(read: PayloadReader) -> ReviewerEffectSums:
    names = read.names("sums_reviewers")
    columns_value = read.meta.get("sums_columns")
    if not isinstance(columns_value, list) or not all(
        isinstance(column, list)
        and len(column) == 2
        and all(isinstance(v, int) and not isinstance(v, bool) for v in column)
        and 0 <= column[0] < len(names)
        and (column[1] == LENGTH or 0 <= column[1] < MAX_SLOTS)
        for column in columns_value
    ):
        raise read.fail("sums_columns", "is not a list of [reviewer, slot] pairs")
    columns = tuple((int(r), int(s)) for r, s in columns_value)
    if len(set(columns)) != len(columns):
        raise read.fail("sums_columns", "repeats a column")
    size = len(columns) + 1
    return ReviewerEffectSums(
        reviewers=names,
        columns=columns,
        n_scores=read.counts("sums_n_scores", (len(names),)),
        n_answers=read.integer("sums_n_answers"),
        n_slots=read.integer("sums_n_slots"),
        cross=read.finite("sums_cross", (len(names), size, size)),
        gram_diagonal=read.finite("sums_gram_diagonal", (len(columns),)),
        gram_length=read.finite("sums_gram_length", (len(columns),)),
    )
