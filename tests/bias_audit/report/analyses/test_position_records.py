"""The position section's shared array step (ADR 0088): the rows' order is a function of
the rows alone (so the full and the incremental run fit the same arrays), and the
per-slot means equal the SQL they replaced."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from llm_council.bias_audit.report.analyses.position_records import slot_mean_rows, slot_records


def _rows(seed: int, duplicates: bool) -> tuple[np.ndarray, ...]:
    """Reviews of 40 sessions (ids with gaps), 4 models, 5 reviewers, 4 slots; with
    ``duplicates`` some reviewer scores one answer twice (equal sort keys)."""
    rng = np.random.default_rng(seed)
    session, model, reviewer = np.meshgrid(
        np.arange(0, 120, 3), np.arange(4), np.arange(5), indexing="ij"
    )
    session, model, reviewer = session.ravel(), model.ravel(), reviewer.ravel()
    if duplicates:
        again = rng.choice(session.size, 30, replace=False)
        session, model, reviewer = (np.r_[a, a[again]] for a in (session, model, reviewer))
    n = session.size
    slot = rng.integers(0, 4, n)
    is_self = model == reviewer
    score = rng.integers(1, 11, n).astype(float)  # integer scores: many ties
    return session, reviewer, model, slot, is_self, score


@pytest.mark.parametrize("duplicates", [False, True])
def test_the_row_order_does_not_depend_on_the_input_order(duplicates: bool) -> None:
    columns = _rows(3, duplicates)
    want = slot_records(4, *columns)
    assert np.all(np.diff(want.session) >= 0) and want.session.max() == 39  # dense
    for seed in range(5):
        shuffled = np.random.default_rng(seed).permutation(columns[0].size)
        got = slot_records(4, *(column[shuffled] for column in columns))
        for field in ("session", "reviewer", "model", "slot", "is_self", "score"):
            assert np.array_equal(getattr(got, field), getattr(want, field)), field


def test_the_per_slot_means_equal_the_sql_they_replaced() -> None:
    """Reference: the query position.py ran before ADR 0088 (DuckDB's avg and
    stddev_samp of the per-(session, slot) means)."""
    session, reviewer, model, slot, is_self, score = _rows(5, duplicates=True)
    keep = ~((session == 9) & (slot != 0))  # a session at one slot only
    keep &= ~((slot == 3) & (session > 0))  # slot 3 in one session: no SD
    records = slot_records(4, *(a[keep] for a in (session, reviewer, model, slot, is_self, score)))
    connection = duckdb.connect()
    connection.execute("CREATE TABLE scored (session BIGINT, position BIGINT, score DOUBLE)")
    connection.executemany(
        "INSERT INTO scored VALUES (?, ?, ?)",
        list(
            zip(
                records.session.tolist(), records.slot.tolist(), records.score.tolist(), strict=True
            )
        ),
    )
    want = connection.execute(
        """WITH slot_means AS (
               SELECT session, position, avg(score) AS mean_score FROM scored
               GROUP BY session, position)
           SELECT position, count(*), avg(mean_score), stddev_samp(mean_score)
           FROM slot_means GROUP BY position ORDER BY position"""
    ).fetchall()
    got = slot_mean_rows(records)
    assert [(k, n) for k, n, _, _ in got] == [(int(k), int(n)) for k, n, _, _ in want]
    assert got[3][1] == 1 and got[3][3] is None and want[3][3] is None
    for (_, _, mean, sd), (_, _, want_mean, want_sd) in zip(got, want, strict=True):
        assert mean == pytest.approx(want_mean, rel=1e-13)
        if want_sd is not None:
            assert sd == pytest.approx(want_sd, rel=1e-12)


def test_a_repeat_is_found_across_the_blocks_it_is_checked_in() -> None:
    from llm_council.bias_audit.report.analyses.position_records import _repeats

    key = np.array([9, 3, 7, 1, 5, 3])  # 3 twice: sorted 1 3 3 5 7 9, the pair at 1-2
    order = np.argsort(key, kind="stable")
    assert all(_repeats(key, order, block) for block in (1, 2, 3, 100))
    distinct = np.array([9, 3, 7, 1, 5])
    assert not any(_repeats(distinct, np.argsort(distinct), b) for b in (1, 2, 100))
    assert not _repeats(np.array([4]), np.array([0]), 1)


@pytest.mark.parametrize("duplicates", [False, True])
def test_the_handed_over_columns_give_the_same_records(duplicates: bool) -> None:
    from llm_council.bias_audit.report.analyses.position_records import take_slot_columns

    arrays = _rows(5, duplicates)
    columns = [array.copy() for array in arrays]
    taken = take_slot_columns(4, columns)
    assert columns == []  # handed over: emptied, so its arrays can be freed
    want = slot_records(4, *arrays)
    for name in ("session", "reviewer", "model", "slot", "is_self", "score"):
        np.testing.assert_array_equal(getattr(taken, name), getattr(want, name))
