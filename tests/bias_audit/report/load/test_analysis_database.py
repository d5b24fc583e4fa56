"""Compressed tables and sequential sections change no number of the report (issue 12).

A default store compresses its tables and runs its sections one at a time only past
millions of records; here both thresholds are lowered so the golden stores take those
paths, and the reports must still equal the saved ones to 1e-9.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bias_audit.report.report_golden_cases import (
    CASES,
    GOLDEN_DIR,
    report_case,
    without_added_defaults,
)
from golden_compare import golden_differences
from llm_council.bias_audit.report import build
from llm_council.bias_audit.report.analyses import section_runner
from llm_council.bias_audit.report.load import analysis_database
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables

TOLERANCE = 1e-9


@pytest.mark.parametrize(("name", "write"), CASES[:3], ids=[name for name, _ in CASES[:3]])
def test_compressed_sequential_report_equals_the_saved_report(
    name: str, write: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(analysis_database, "COMPRESS_ABOVE_BYTES", 0)
    monkeypatch.setattr(build, "PARALLEL_MAX_RECORDS", 0)
    saved = json.loads((GOLDEN_DIR / f"{name}.json").read_text(encoding="utf-8"))
    rebuilt = without_added_defaults(json.loads(json.dumps(report_case(name, write, tmp_path))))
    problems = golden_differences(saved, rebuilt, name, TOLERANCE)
    assert not problems, "\n".join(problems[:20])


def test_tables_past_the_threshold_are_stored_compressed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, write = CASES[0]
    path = tmp_path / f"{name}.jsonl"
    write(path)
    monkeypatch.setattr(analysis_database, "COMPRESS_ABOVE_BYTES", 0)
    store = load_store(path)
    create_analysis_tables(store.connection)
    methods = {
        method
        for (method,) in store.connection.execute(
            "SELECT DISTINCT compression FROM pragma_storage_info('scored')"
        ).fetchall()
    }
    store.connection.close()
    assert methods - {"Uncompressed"}, methods


def test_small_tables_stay_uncompressed(tmp_path: Path) -> None:
    name, write = CASES[0]
    path = tmp_path / f"{name}.jsonl"
    write(path)
    store = load_store(path)
    create_analysis_tables(store.connection)
    assert not analysis_database.compress_large_tables(store.connection)
    store.connection.close()


def test_a_failing_section_raises_in_either_mode() -> None:
    import duckdb

    def failing(_connection: duckdb.DuckDBPyConnection) -> None:
        raise ValueError("boom")

    connection = duckdb.connect()
    analysis_database.open_analysis_database(connection)
    for parallel in (False, True):
        with section_runner.SectionRunner(connection, parallel=parallel) as runner:
            future = runner.submit(failing)
            with pytest.raises(ValueError, match="boom"):
                future.result()
    connection.close()


def test_sequential_sections_run_when_their_result_is_asked_for() -> None:
    """One at a time, in the order the report waits for them (its progress steps say so)."""
    import duckdb

    ran: list[str] = []

    def section(_connection: duckdb.DuckDBPyConnection, name: str) -> str:
        ran.append(name)
        return name

    connection = duckdb.connect()
    with section_runner.SectionRunner(connection, parallel=False) as runner:
        first = runner.submit(section, "first")
        second = runner.submit(section, "second")
        assert ran == []
        assert second.result() == "second"
        assert first.result() == "first"
        assert second.result() == "second"  # run once
    assert ran == ["second", "first"]
    connection.close()


def test_parallel_sections_hold_blas_to_one_thread_and_restore_it() -> None:
    """Two workers already fill both cores: BLAS gets one thread each, then its old count."""
    import duckdb
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads(_connection: duckdb.DuckDBPyConnection | None = None) -> list[int]:
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    if not blas_threads():
        pytest.skip("numpy is linked to no BLAS that threadpoolctl can see")
    connection = duckdb.connect()
    analysis_database.open_analysis_database(connection)
    with threadpool_limits(limits=2, user_api="blas"):  # a known count to come back to
        with section_runner.SectionRunner(connection, parallel=True) as runner:
            assert runner.submit(blas_threads).result() == [1] * len(blas_threads())
        assert set(blas_threads()) == {2}
        with section_runner.SectionRunner(connection, parallel=False) as runner:
            assert set(runner.submit(blas_threads).result()) == {2}  # large stores: untouched
    connection.close()
