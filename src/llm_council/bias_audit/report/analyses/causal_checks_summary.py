"""The causal-checks section from merged per-session summaries (ADR 0024, ADR 0085).

A summary holds, per (reviewer, check kind, session), one row of the sums that session's
pairs contribute (:data:`SUM_COLUMNS`), the reviewers with a live check review, and the
count of check reviews. Every statistic of the section is a session-clustered estimate
finished from these rows (:mod:`llm_council.stats.inference.clustered_sums`), the ICC's
interval a bootstrap over the rows' sessions seeded by the report's seed. Rows
concatenate and are kept sorted by (reviewer, kind, session id), so a merged summary
equals the summary of the union row for row, and a report after appends equals the cold
report bit for bit. A row is 7 doubles and 4 integers (88 bytes) per check review.

Check reviews count only in the sessions the report analyses (those in ``session_names``:
a session with an observational record); a check review has nothing to be paired with
elsewhere.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.causal_checks import (
    ICC_BOOTSTRAP_RESAMPLES,
    MIN_CHECK_SESSIONS,
    CausalChecks,
    CheckEstimate,
    RepeatStability,
    ReviewerCausalChecks,
    t_interval,
)
from llm_council.bias_audit.report.analyses.incremental_section import SummaryNotMergeable
from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader
from llm_council.stats.inference.clustered_sums import (
    cluster_bootstrap_icc,
    clustered_mean_from_sums,
    icc_from_moments,
    within_slope_from_sums,
)

#: the live check kinds, sorted (a row's kind is its index here)
KINDS = ("identity", "padding", "repeat", "reshuffle")
#: what each column of a row's sums holds, by kind (unused columns are 0)
SUM_COLUMNS = {
    "reshuffle": ("sxx", "sxy"),  # slot change x, score change y, demeaned in the session
    "repeat": ("abs_change", "identical", "pair_mean", "within", "pair_squares", "low", "high"),
    "padding": ("difference", "log_word_ratio"),  # treated change minus the others' mean
    "identity": ("difference", "log_word_ratio"),
}
N_SUMS = 7
ROW_FIELDS = ("reviewer", "kind", "session", "n_pairs")

#: every live check record of the analysed sessions (a second review order, ADR 0046, is
#: stored as a check review but is not one)
_CHECKS_SQL = """
    SELECT c.reviewer_id AS reviewer, c.session_id, c.check_kind AS kind
    FROM check_records c JOIN session_names n ON n.session_id = c.session_id
    WHERE c.check_kind <> 'second_order'
"""
_PAIRS_SQL = """
    SELECT c.reviewer_id AS reviewer, c.check_kind AS kind, c.session_id,
           r.position AS original_position, c.position AS check_position,
           r.score AS original_score, c.score_value AS check_score,
           coalesce(c.check_treated, false) AS treated,
           r.words AS original_words, c.response_length_words AS check_words
    FROM check_records c
    JOIN records r ON r.session_id = c.session_id AND r.reviewer = c.reviewer_id
                  AND r.model = c.model_id
    WHERE r.score IS NOT NULL AND c.score_value IS NOT NULL AND c.check_kind <> 'second_order'
    ORDER BY reviewer, kind, c.session_id, r.position
"""


@dataclass(frozen=True)
class CausalChecksSummary:
    """The section's sums of some sessions (module docstring)."""

    reviewers: tuple[str, ...]  # sorted: every reviewer with a live check review
    session_ids: tuple[str, ...]  # sorted: the sessions with a row
    n_check_reviews: int  # distinct (session, reviewer) with a live check record
    rows: dict[str, np.ndarray]  # ROW_FIELDS (int64), sorted by them, unique
    sums: np.ndarray  # (rows, N_SUMS)

    @staticmethod
    def empty() -> CausalChecksSummary:
        rows = {name: np.zeros(0, dtype=np.int64) for name in ROW_FIELDS}
        return CausalChecksSummary((), (), 0, rows, np.zeros((0, N_SUMS)))


def _has_check_records(connection: duckdb.DuckDBPyConnection) -> bool:
    """Does the current schema hold ``check_records`` (a table or a view)? A schema of
    chosen sessions gets one only when the store has check reviews: an unqualified name
    would otherwise fall back to the main schema's, every session's."""
    row = connection.execute(
        """SELECT count(*) FROM information_schema.tables
           WHERE table_name = 'check_records' AND table_catalog = current_database()
                 AND table_schema = current_schema()"""
    ).fetchone()
    return bool(row and row[0])


def _group_starts(keys: list[np.ndarray]) -> np.ndarray:
    """Start index of each run of equal keys (the rows sorted by them)."""
    n = keys[0].size
    change = np.zeros(n, dtype=bool)
    if n:
        change[0] = True
    for key in keys:
        change[1:] |= key[1:] != key[:-1]
    return np.flatnonzero(change)


def _demeaned(values: np.ndarray, group: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``values`` minus their group's mean (the pair-level code's arithmetic)."""
    return values - (np.bincount(group, weights=values, minlength=counts.size) / counts)[group]


def _kind_sums(kind: str, pairs: dict[str, np.ndarray], group: np.ndarray, starts: np.ndarray):
    """(sums (groups, N_SUMS), usable groups) of one kind's pairs, grouped by session."""
    g = starts.size
    counts = np.bincount(group, minlength=g).astype(float)
    original, check = pairs["original_score"], pairs["check_score"]
    change = check - original
    sums = np.zeros((g, N_SUMS))
    usable = np.ones(g, dtype=bool)
    if kind == "reshuffle":
        x = _demeaned(pairs["check_position"] - pairs["original_position"], group, counts)
        y = _demeaned(change, group, counts)
        sums[:, 0] = np.bincount(group, weights=x * x, minlength=g)
        sums[:, 1] = np.bincount(group, weights=x * y, minlength=g)
    elif kind == "repeat":
        absolute = np.abs(check - original)
        means = np.column_stack([original, check]).mean(axis=1)
        sums[:, 0] = np.bincount(group, weights=absolute, minlength=g)
        sums[:, 1] = np.bincount(group, weights=(absolute == 0).astype(float), minlength=g)
        sums[:, 2] = np.bincount(group, weights=means, minlength=g) / counts
        sums[:, 3] = np.bincount(group, weights=(means - sums[group, 2]) ** 2, minlength=g)
        spread = (original - means) ** 2 + (check - means) ** 2
        sums[:, 4] = np.bincount(group, weights=spread, minlength=g)
        sums[:, 5] = np.minimum.reduceat(means, starts)
        sums[:, 6] = np.maximum.reduceat(means, starts)
    else:  # padding, identity: the changed answer against the others of its review
        treated = pairs["treated"]
        n_treated = np.bincount(group, weights=treated.astype(float), minlength=g)
        n_control = counts - n_treated
        usable = (n_treated > 0) & (n_control > 0)
        control = np.bincount(group, weights=np.where(treated, 0.0, change), minlength=g)
        first = np.flatnonzero(treated)
        first = first[np.unique(group[first], return_index=True)[1]]
        treated_change = np.zeros(g)
        ratio = np.zeros(g)
        treated_change[group[first]] = change[first]
        words = np.maximum(pairs["check_words"][first], 1) / np.maximum(
            pairs["original_words"][first], 1
        )
        ratio[group[first]] = np.log(words)
        with np.errstate(invalid="ignore", divide="ignore"):
            sums[:, 0] = treated_change - control / n_control
        sums[:, 1] = ratio
        sums[~usable] = 0.0
    return sums, usable


def _pairs(connection: duckdb.DuckDBPyConnection) -> dict[str, np.ndarray]:
    """Every check pair of the analysed sessions (``records`` holds only them), as arrays
    in :data:`_PAIRS_SQL` order."""
    fetched = connection.execute(_PAIRS_SQL).fetchnumpy()
    pairs = {name: np.asarray(values) for name, values in fetched.items()}
    for name in ("original_position", "check_position", "original_score", "check_score"):
        pairs[name] = np.asarray(pairs[name], dtype=float)
    for name in ("original_words", "check_words"):
        pairs[name] = np.asarray(pairs[name], dtype=np.int64)
    pairs["treated"] = np.asarray(pairs["treated"], dtype=bool)
    return pairs


def summarize_causal_checks(connection: duckdb.DuckDBPyConnection) -> CausalChecksSummary:
    """The summary of the sessions in ``connection``'s current schema."""
    if not _has_check_records(connection):
        return CausalChecksSummary.empty()
    checks = connection.execute(_CHECKS_SQL).fetchall()
    reviewers = tuple(sorted({str(row[0]) for row in checks}))
    n_check_reviews = len({(str(row[1]), str(row[0])) for row in checks})
    pairs = _pairs(connection)
    kind = np.asarray([KINDS.index(str(k)) if k in KINDS else -1 for k in pairs["kind"]])
    known = kind >= 0  # a check kind this release does not know is not analysed
    pairs = {name: values[known] for name, values in pairs.items()}
    kind = kind[known]
    session_ids = tuple(sorted({str(s) for s in pairs["session_id"]}))
    session = np.searchsorted(np.asarray(session_ids, dtype=str), pairs["session_id"].astype(str))
    reviewer = np.searchsorted(np.asarray(reviewers, dtype=str), pairs["reviewer"].astype(str))
    parts: list[tuple[dict[str, np.ndarray], np.ndarray]] = []
    for code, name in enumerate(KINDS):
        mine = np.flatnonzero(kind == code)
        if not mine.size:
            continue
        chosen = {key: values[mine] for key, values in pairs.items()}
        starts = _group_starts([reviewer[mine], session[mine]])
        group = np.cumsum(np.isin(np.arange(mine.size), starts)) - 1
        sums, usable = _kind_sums(name, chosen, group, starts)
        counts = np.bincount(group, minlength=starts.size)
        row = {
            "reviewer": reviewer[mine][starts],
            "kind": np.full(starts.size, code, dtype=np.int64),
            "session": session[mine][starts],
            "n_pairs": counts.astype(np.int64),
        }
        parts.append(({key: values[usable] for key, values in row.items()}, sums[usable]))
    return _sorted_summary(reviewers, session_ids, n_check_reviews, parts)


def _sorted_summary(
    reviewers: tuple[str, ...],
    session_ids: tuple[str, ...],
    n_check_reviews: int,
    parts: list[tuple[dict[str, np.ndarray], np.ndarray]],
) -> CausalChecksSummary:
    """The rows of ``parts`` joined and sorted by (reviewer, kind, session); the session
    list trimmed to those with a row. :class:`SummaryNotMergeable` on a repeated key."""
    if not parts:
        empty = CausalChecksSummary.empty()
        return CausalChecksSummary(reviewers, (), n_check_reviews, empty.rows, empty.sums)
    rows = {name: np.concatenate([part[0][name] for part in parts]) for name in ROW_FIELDS}
    sums = np.concatenate([part[1] for part in parts])
    order = np.lexsort((rows["session"], rows["kind"], rows["reviewer"]))
    rows = {name: values[order].astype(np.int64) for name, values in rows.items()}
    sums = sums[order]
    if _group_starts([rows["reviewer"], rows["kind"], rows["session"]]).size != order.size:
        raise SummaryNotMergeable("causal checks: a session is in both summaries")
    used = np.unique(rows["session"])
    rows["session"] = np.searchsorted(used, rows["session"])
    kept = tuple(session_ids[index] for index in used.tolist())
    return CausalChecksSummary(reviewers, kept, n_check_reviews, rows, sums)


def merge_causal_checks(
    saved: CausalChecksSummary, new: CausalChecksSummary
) -> CausalChecksSummary:
    """The summary of two disjoint sets of sessions (rows recoded to the joined names)."""
    reviewers = tuple(sorted({*saved.reviewers, *new.reviewers}))
    session_ids = tuple(sorted({*saved.session_ids, *new.session_ids}))
    names, sessions = np.asarray(reviewers, dtype=str), np.asarray(session_ids, dtype=str)
    parts = []
    for part in (saved, new):
        if not part.sums.shape[0]:
            continue
        rows = dict(part.rows)
        rows["reviewer"] = np.searchsorted(names, np.asarray(part.reviewers, dtype=str))[
            rows["reviewer"]
        ]
        rows["session"] = np.searchsorted(sessions, np.asarray(part.session_ids, dtype=str))[
            rows["session"]
        ]
        parts.append((rows, part.sums))
    total = saved.n_check_reviews + new.n_check_reviews
    return _sorted_summary(reviewers, session_ids, total, parts)


def _slot(sums: np.ndarray, n_pairs: np.ndarray) -> CheckEstimate:
    beta, se = within_slope_from_sums(sums[:, 0], sums[:, 1])
    g = sums.shape[0]
    return t_interval(beta, se, g - 1, g, int(n_pairs.sum()))


def _mean(sums: np.ndarray, n_pairs: np.ndarray) -> CheckEstimate:
    mean, se = clustered_mean_from_sums(sums, n_pairs)
    g = sums.shape[0]
    return t_interval(mean, se, g - 1, g, int(n_pairs.sum()))


def _repeat(sums: np.ndarray, n_pairs: np.ndarray, seed: int) -> RepeatStability:
    moments = (n_pairs, sums[:, 2], sums[:, 3], sums[:, 4])
    constant = bool(np.min(sums[:, 5]) == np.max(sums[:, 6]))
    icc = icc_from_moments(*moments, constant=constant)
    low, high = cluster_bootstrap_icc(
        *moments, sums[:, 5], sums[:, 6], n_resamples=ICC_BOOTSTRAP_RESAMPLES, seed=seed
    )
    n = int(n_pairs.sum())
    estimate = CheckEstimate(icc, low, high, float("nan"), sums.shape[0], n)
    return RepeatStability(_mean(sums[:, 0], n_pairs), _mean(sums[:, 1], n_pairs), estimate)


def _reviewer(summary: CausalChecksSummary, code: int, seed: int) -> ReviewerCausalChecks:
    """One reviewer's checks from the summary's rows."""
    mine = summary.rows["reviewer"] == code

    def of(kind: str) -> tuple[np.ndarray, np.ndarray]:
        chosen = mine & (summary.rows["kind"] == KINDS.index(kind))
        return summary.sums[chosen], summary.rows["n_pairs"][chosen].astype(float)

    enough = MIN_CHECK_SESSIONS
    reshuffle, repeat = of("reshuffle"), of("repeat")
    padding, identity = of("padding"), of("identity")
    ones = np.ones(padding[0].shape[0])
    return ReviewerCausalChecks(
        reviewer=summary.reviewers[code],
        reshuffle_sessions=reshuffle[0].shape[0],
        slot_effect=_slot(*reshuffle) if reshuffle[0].shape[0] >= enough else None,
        repeat_sessions=repeat[0].shape[0],
        repeat=_repeat(*repeat, seed) if repeat[0].shape[0] >= enough else None,
        padding_sessions=padding[0].shape[0],
        padding_effect=_mean(padding[0][:, 0], ones) if ones.size >= enough else None,
        padding_log_word_ratio=float(np.mean(padding[0][:, 1])) if ones.size else math.nan,
        identity_sessions=identity[0].shape[0],
        identity_effect=(
            _mean(identity[0][:, 0], np.ones(identity[0].shape[0]))
            if identity[0].shape[0] >= enough
            else None
        ),
    )


def finish_causal_checks(summary: CausalChecksSummary, seed: int) -> CausalChecks | None:
    """The section from the summary of every session; None without a live check review."""
    if not summary.reviewers:
        return None
    return CausalChecks(
        reviewers=[_reviewer(summary, code, seed) for code in range(len(summary.reviewers))],
        n_check_reviews=summary.n_check_reviews,
    )


def causal_checks_payload(
    summary: CausalChecksSummary,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """JSON-safe metadata and named arrays (no pickling)."""
    meta = {
        "reviewers": list(summary.reviewers),
        "session_ids": list(summary.session_ids),
        "n_check_reviews": summary.n_check_reviews,
    }
    arrays = {f"row_{name}": summary.rows[name] for name in ROW_FIELDS}
    return meta, arrays | {"sums": summary.sums}


def causal_checks_from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> CausalChecksSummary:
    """The summary back from :func:`causal_checks_payload`; ``ValueError`` names a bad field."""
    read = PayloadReader("causal_checks", meta, arrays)
    reviewers, session_ids = read.names("reviewers"), read.names("session_ids")
    for field, names in (("reviewers", reviewers), ("session_ids", session_ids)):
        if list(names) != sorted(names):
            raise read.fail(field, "is not sorted")
    n = read.array("row_session", "i", (None,)).size
    rows = {
        "reviewer": read.codes("row_reviewer", n, len(reviewers)),
        "kind": read.codes("row_kind", n, len(KINDS)),
        "session": read.codes("row_session", n, len(session_ids)),
        "n_pairs": read.counts("row_n_pairs", (n,)),
    }
    if n and rows["n_pairs"].min() < 1:
        raise read.fail("row_n_pairs", "holds a row without a pair")
    keys = [rows["reviewer"], rows["kind"], rows["session"]]
    if n and not np.array_equal(np.lexsort(keys[::-1]), np.arange(n)):
        raise read.fail("row_session", "is not sorted by reviewer, kind and session")
    if _group_starts(keys).size != n:
        raise read.fail("row_session", "repeats a (reviewer, kind, session) row")
    sums = read.finite("sums", (n, N_SUMS))
    if n and np.unique(rows["session"]).size != len(session_ids):
        raise read.fail("session_ids", "names a session without a row")
    return CausalChecksSummary(reviewers, session_ids, read.integer("n_check_reviews"), rows, sums)


class CausalChecksSection:
    """The causal checks (ADR 0024) as an incremental section (ADR 0085); ``seed`` seeds the
    ICC's session bootstrap (the report's seed)."""

    name = "causal_checks"
    version = 1

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> CausalChecksSummary:
        return summarize_causal_checks(connection)

    def merge(self, saved: CausalChecksSummary, new: CausalChecksSummary) -> CausalChecksSummary:
        return merge_causal_checks(saved, new)

    def finish(self, summary: CausalChecksSummary) -> CausalChecks | None:
        return finish_causal_checks(summary, self.seed)

    def to_payload(self, summary: CausalChecksSummary) -> tuple[dict[str, Any], dict[str, Any]]:
        return causal_checks_payload(summary)

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> CausalChecksSummary:
        return causal_checks_from_payload(meta, arrays)
