"""The per-session summary behind the leaderboard (ADR 0074): comparisons and resampled tables.

A summary of some sessions holds the sessions' paired comparisons (for the
length-controlled fit, which needs each comparison's ln(words) difference), the summed
win table, the Poisson bootstrap's replicate tables
(:func:`~llm_council.stats.ranking.bradley_terry_poisson.poisson_resampled_tables`: each
session weighted by a count that depends only on the seed, its id and the replicate) and
each model's sum and count of scores. Tables and sums add, comparisons concatenate in
session-id order, so two summaries of disjoint sessions merge exactly and a merged
summary equals the summary of the union, array for array.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader
from llm_council.stats.inference.poisson_weights import unit_keys
from llm_council.stats.ranking.bradley_terry_poisson import poisson_resampled_tables

#: the per-comparison arrays, by name
COMPARISON_FIELDS = ("session", "item_a", "item_b", "a_won", "log_ratio")


@dataclass(frozen=True)
class LeaderboardSummary:
    """The leaderboard's inputs of some sessions (module docstring)."""

    models: tuple[str, ...]  # sorted; item codes index it
    session_ids: tuple[str, ...]  # sorted; the sessions with a comparison
    n_resamples: int
    seed: int
    comparisons: dict[str, np.ndarray]  # COMPARISON_FIELDS, each (C,), sorted by session
    total_wins: np.ndarray  # (K, K): [i, j] counts i's wins over j
    resampled_wins: np.ndarray  # (B, K, K)
    score_sum: np.ndarray  # (K,) over the others' scores of each model's answers
    score_count: np.ndarray  # (K,)


def _ranked_pairs(connection: duckdb.DuckDBPyConnection) -> dict[str, np.ndarray]:
    """Every pair of answers one reviewer ranked differently in a session (self-reviews out).

    ``item_a < item_b`` are model indices, ``a_won`` is 1 when ``item_a`` was ranked better,
    ``log_ratio`` is ln(words) of ``item_a`` minus that of ``item_b``. The rankings come
    sorted by (session, reviewer, model); the pairs of rows ``gap`` apart within a review
    are formed for gap = 1, 2, ... until no review is that long (a review of ``k`` answers
    gives its ``k(k-1)/2`` pairs), which costs a few passes over the rankings instead of a
    self-join. The pairs are returned in the order of their rows (session first), the
    same order for a session whatever other sessions are in the table.
    """
    ranked = connection.execute(
        """SELECT session, reviewer_index, model_index, rank,
                  ln(greatest(words, 1)) AS log_words
           FROM scored WHERE NOT is_self AND rank IS NOT NULL
           ORDER BY session, reviewer_index, model_index"""
    ).fetchnumpy()
    session = np.asarray(ranked["session"])
    reviewer = np.asarray(ranked["reviewer_index"])
    review = session.astype(np.int64) * (int(np.max(reviewer, initial=0)) + 1) + reviewer
    del reviewer
    model = np.asarray(ranked["model_index"])
    rank = np.asarray(ranked["rank"])
    log_words = np.asarray(ranked["log_words"], dtype=float)
    del ranked
    firsts, seconds = [], []
    for gap in range(1, review.size):
        same_review = review[gap:] == review[:-gap]
        if not same_review.any():
            break
        # two records of one model in a review are not a comparison (nor are tied ranks)
        first = np.flatnonzero(
            same_review & (model[:-gap] < model[gap:]) & (rank[:-gap] != rank[gap:])
        )
        firsts.append(first)
        seconds.append(first + gap)
    first = np.concatenate(firsts) if firsts else np.zeros(0, dtype=np.int64)
    second = np.concatenate(seconds) if seconds else np.zeros(0, dtype=np.int64)
    del firsts, seconds, review
    # by first row, then gap (= second row): a stable sort of the gaps' sorted runs
    order = np.argsort(first, kind="stable")
    first, second = first[order], second[order]
    return {
        "session": session[first],
        "item_a": model[first],
        "item_b": model[second],
        "a_won": (rank[first] < rank[second]).astype(np.int8),  # 0/1: one byte a comparison
        "log_ratio": log_words[first] - log_words[second],
    }


def summarize_leaderboard(
    connection: duckdb.DuckDBPyConnection, *, n_resamples: int, seed: int
) -> LeaderboardSummary:
    """The summary of every session in ``connection``'s ``scored`` table."""
    pairs = _ranked_pairs(connection)
    models = tuple(
        str(name)
        for (name,) in connection.execute("SELECT model FROM models ORDER BY model").fetchall()
    )
    k = len(models)
    raw_session = np.asarray(pairs["session"], dtype=np.int64)
    local_codes, session = np.unique(raw_session, return_inverse=True)
    ids = dict(connection.execute("SELECT DISTINCT session, session_id FROM records").fetchall())
    named = [str(ids[int(code)]) for code in local_codes.tolist()]
    session_ids = tuple(sorted(named))
    # codes in session-id order (the load numbers sessions so already; a table numbered
    # otherwise is re-sorted, each session's comparisons kept in their order)
    rank = np.empty(len(named), dtype=np.int64)
    rank[np.argsort(np.array(named, dtype=str), kind="stable")] = np.arange(len(named))
    session = rank[session]
    if np.any(np.diff(session) < 0):
        order = np.argsort(session, kind="stable")
        session = session[order]
        pairs = {name: values[order] for name, values in pairs.items()}
    winner = np.where(pairs["a_won"] == 1, pairs["item_a"], pairs["item_b"]).astype(np.int64)
    loser = np.where(pairs["a_won"] == 1, pairs["item_b"], pairs["item_a"]).astype(np.int64)
    n_sessions = len(session_ids)
    session_wins = np.bincount(
        (session * k + winner) * k + loser,
        weights=np.ones(session.size),
        minlength=n_sessions * k * k,
    ).reshape(n_sessions, k, k)
    del winner, loser
    scores = dict(
        (str(model), (float(total), int(count)))
        for model, total, count in connection.execute(
            "SELECT model, sum(score), count(score) FROM scored WHERE NOT is_self GROUP BY model"
        ).fetchall()
    )
    return LeaderboardSummary(
        models=models,
        session_ids=session_ids,
        n_resamples=n_resamples,
        seed=seed,
        comparisons={
            "session": session.astype(np.int32),
            "item_a": np.asarray(pairs["item_a"], dtype=np.int32),
            "item_b": np.asarray(pairs["item_b"], dtype=np.int32),
            "a_won": pairs["a_won"],
            "log_ratio": pairs["log_ratio"],
        },
        total_wins=session_wins.sum(axis=0),
        resampled_wins=poisson_resampled_tables(
            session_wins, unit_keys(session_ids, seed), n_resamples
        ),
        score_sum=np.array([scores.get(m, (0.0, 0))[0] for m in models]),
        score_count=np.array([scores.get(m, (0.0, 0))[1] for m in models], dtype=np.int64),
    )


def merge_leaderboard(saved: LeaderboardSummary, new: LeaderboardSummary) -> LeaderboardSummary:
    """The summary of both sets of sessions; ``ValueError`` when they share a session or
    were resampled differently."""
    if (saved.n_resamples, saved.seed) != (new.n_resamples, new.seed):
        raise ValueError(
            "leaderboard summary: resamples/seed "
            f"{saved.n_resamples}/{saved.seed} and {new.n_resamples}/{new.seed} differ"
        )
    shared = set(saved.session_ids) & set(new.session_ids)
    if shared:
        raise ValueError(f"leaderboard summary: session {min(shared)!r} is in both summaries")
    models = tuple(sorted(set(saved.models) | set(new.models)))
    session_ids = tuple(sorted(saved.session_ids + new.session_ids))
    k = len(models)
    all_ids = np.array(session_ids, dtype=str)
    total = np.zeros((k, k))
    resampled = np.zeros((saved.n_resamples, k, k))
    score_sum, score_count = np.zeros(k), np.zeros(k, dtype=np.int64)
    parts: dict[str, list[np.ndarray]] = {name: [] for name in COMPARISON_FIELDS}
    for part in (saved, new):
        code = np.searchsorted(np.array(models, dtype=str), np.array(part.models, dtype=str))
        session_code = np.searchsorted(all_ids, np.array(part.session_ids, dtype=str))
        total[np.ix_(code, code)] += part.total_wins
        resampled[:, code[:, None], code[None, :]] += part.resampled_wins
        score_sum[code] += part.score_sum
        score_count[code] += part.score_count
        parts["session"].append(session_code[part.comparisons["session"]].astype(np.int32))
        parts["item_a"].append(code[part.comparisons["item_a"]].astype(np.int32))
        parts["item_b"].append(code[part.comparisons["item_b"]].astype(np.int32))
        parts["a_won"].append(part.comparisons["a_won"])
        parts["log_ratio"].append(part.comparisons["log_ratio"])
    joined = {name: np.concatenate(values) for name, values in parts.items()}
    if np.any(np.diff(joined["session"]) < 0):
        # two runs sorted by session: a stable sort merges them, each session's block
        # whole (not needed when the new sessions' ids all sort after the saved ones)
        order = np.argsort(joined["session"], kind="stable")
        joined = {name: values[order] for name, values in joined.items()}
    return LeaderboardSummary(
        models=models,
        session_ids=session_ids,
        n_resamples=saved.n_resamples,
        seed=saved.seed,
        comparisons=joined,
        total_wins=total,
        resampled_wins=resampled,
        score_sum=score_sum,
        score_count=score_count,
    )


def leaderboard_payload(
    summary: LeaderboardSummary,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """JSON-safe metadata and named arrays (no pickling)."""
    meta = {
        "models": list(summary.models),
        "session_ids": list(summary.session_ids),
        "n_resamples": summary.n_resamples,
        "seed": summary.seed,
    }
    arrays = {f"comparison_{name}": summary.comparisons[name] for name in COMPARISON_FIELDS}
    arrays |= {
        # counts as doubles whatever the summary holds (a cold summary's tables are integer
        # sums, a merged one's doubles): the reader takes one kind (exact below 2^53)
        "total_wins": np.asarray(summary.total_wins, dtype=float),
        "resampled_wins": np.asarray(summary.resampled_wins, dtype=float),
        "score_sum": np.asarray(summary.score_sum, dtype=float),
        "score_count": summary.score_count,
    }
    return meta, arrays


def leaderboard_from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
) -> LeaderboardSummary:
    """The summary back from :func:`leaderboard_payload`; ``ValueError`` names a bad field."""
    read = PayloadReader("leaderboard", meta, arrays)
    models, session_ids = read.names("models"), read.names("session_ids")
    for field, names in (("models", models), ("session_ids", session_ids)):
        if list(names) != sorted(names):
            raise read.fail(field, "is not sorted")
    n_resamples, seed = read.integer("n_resamples"), read.integer("seed")
    k = len(models)
    n = read.array("comparison_session", "i", (None,)).size
    comparisons: dict[str, np.ndarray] = {
        "session": read.codes("comparison_session", n, len(session_ids)).astype(np.int32),
        "item_a": read.codes("comparison_item_a", n, k).astype(np.int32),
        "item_b": read.codes("comparison_item_b", n, k).astype(np.int32),
        "a_won": read.codes("comparison_a_won", n, 2).astype(np.int8),
        # NaN where a length is missing (the controlled fit then reports NaN), never inf
        "log_ratio": read.finite("comparison_log_ratio", (n,), nan_ok=True),
    }
    if n and np.any(np.diff(comparisons["session"]) < 0):
        raise read.fail("comparison_session", "is not sorted")
    tables = {
        "total_wins": read.finite("total_wins", (k, k)),
        "resampled_wins": read.finite("resampled_wins", (n_resamples, k, k)),
    }
    for field, table in tables.items():
        if table.size and (table.min() < 0 or np.any(table != np.round(table))):
            raise read.fail(field, "holds a count that is negative or not whole")
    return LeaderboardSummary(
        models=models,
        session_ids=session_ids,
        n_resamples=n_resamples,
        seed=seed,
        comparisons=comparisons,
        total_wins=tables["total_wins"],
        resampled_wins=tables["resampled_wins"],
        score_sum=read.finite("score_sum", (k,)),
        score_count=read.counts("score_count", (k,)),
    )
