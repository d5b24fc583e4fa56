"""Score/rank mismatch pair counts (parse_outcomes._pair_rows: per reviewer, the sums over
sessions of its discordant y and comparable n pairs) against hand counts."""

from __future__ import annotations

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.parse_outcomes import _pair_rows
from llm_council.stats.ranking.rank_consistency import ClusterSums


def _pair_counts(connection: duckdb.DuckDBPyConnection) -> dict[str, ClusterSums]:
    """Per reviewer: the sums of its sessions' (discordant, comparable) pairs."""
    return {
        str(name): ClusterSums(*(int(value) for value in sums))
        for name, *sums in _pair_rows(connection)
    }


def _of(per_session: list[tuple[int, int]]) -> ClusterSums:
    """The sums of (discordant, comparable) pairs per session, by numpy."""
    y, n = np.array(per_session).T
    return ClusterSums.of(y, n)


def _connection(rows: list[tuple[int, int, float, int | None]]) -> duckdb.DuckDBPyConnection:
    """A ``scored`` table of (session, reviewer_index, score, rank) and two named reviewers."""
    connection = duckdb.connect()
    connection.execute(
        "CREATE TABLE scored (session BIGINT, reviewer_index INTEGER, score DOUBLE, rank INTEGER)"
    )
    connection.executemany("INSERT INTO scored VALUES (?, ?, ?, ?)", rows)
    connection.execute(
        "CREATE TABLE reviewers AS SELECT * FROM (VALUES (0, 'r0'), (1, 'r1')) "
        "AS t(reviewer_index, reviewer)"
    )
    connection.execute(
        "CREATE TABLE session_names AS SELECT DISTINCT session, 's' || session AS session_id "
        "FROM scored"
    )
    return connection


def test_pairs_are_counted_within_each_review_by_hand() -> None:
    # r0 in session 1, rows in any order: (rank, score) = (2, 1), (1, 3), (3, 2)
    #   ranks 1<2: scores 3>1, agrees;  1<3: 3>2, agrees;  2<3: 1<2, discordant
    #   -> 3 comparable, 1 discordant
    # r0 in session 2: (1, 5), (1, 4), (2, 5), (3, 4)
    #   tied ranks (1, 1) and tied scores (5 = 5; 4 = 4) are not comparable;
    #   rank 1 (score 5) < 3 (score 4): agrees; rank 1 (4) < 2 (5): discordant;
    #   rank 2 (5) < 3 (4): agrees -> 3 comparable, 1 discordant
    # r0 in session 3: a single row -> no pair (left out); an unranked row is never paired
    # r1 in session 1: shares session 1 with r0 but pairs only with its own rows:
    #   (1, 2), (2, 4) -> 1 comparable, 1 discordant
    rows = [
        (1, 0, 1.0, 2), (1, 0, 3.0, 1), (1, 0, 2.0, 3),
        (2, 0, 5.0, 1), (2, 0, 4.0, 1), (2, 0, 5.0, 2), (2, 0, 4.0, 3),
        (3, 0, 2.0, 1), (3, 0, 9.0, None),
        (1, 1, 2.0, 1), (1, 1, 4.0, 2),
    ]  # fmt: skip
    counts = _pair_counts(_connection(rows))
    assert counts["r0"] == _of([(1, 3), (1, 3)]) == ClusterSums(2, 2, 6, 2, 6, 18)
    assert counts["r1"] == _of([(1, 1)]) == ClusterSums(1, 1, 1, 1, 1, 1)


def test_a_better_ranked_lower_score_is_discordant_in_either_row_order() -> None:
    for rows in ([(1, 0, 1.0, 1), (1, 0, 2.0, 2)], [(1, 0, 2.0, 2), (1, 0, 1.0, 1)]):
        assert _pair_counts(_connection(rows))["r0"] == ClusterSums(1, 1, 1, 1, 1, 1)
