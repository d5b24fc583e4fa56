"""Whether a store's reviewers all saw one display order: the fetched rows, then the records."""

from __future__ import annotations

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.amplification import _every_session_shares_one_order


def _connection(records: list[tuple[int, str, int]]) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE records (session INTEGER, model VARCHAR, position INTEGER)")
    connection.executemany("INSERT INTO records VALUES (?, ?, ?)", records)
    return connection


def test_two_slots_for_one_fetched_answer_decide_without_the_records() -> None:
    # each answer at slot 0 for one reviewer and slot 1 for another; the records table holds
    # one order only, so a False can only have come from the fetched rows
    connection = _connection([(0, "a", 0), (0, "b", 1)])
    answer, position = np.array([0, 1, 0, 1]), np.array([0, 1, 1, 0])
    assert not _every_session_shares_one_order(connection, answer, position)


def test_agreeing_rows_defer_to_every_record() -> None:
    answer, position = np.array([0, 1, 0, 1]), np.array([0, 1, 0, 1])
    agreeing = [(0, "a", 0), (0, "b", 1), (0, "a", 0), (0, "b", 1)]
    assert _every_session_shares_one_order(_connection(agreeing), answer, position)
    # an unscored record (not among the fetched rows) saw model b at slot 0
    assert not _every_session_shares_one_order(
        _connection([*agreeing, (0, "b", 0)]), answer, position
    )
