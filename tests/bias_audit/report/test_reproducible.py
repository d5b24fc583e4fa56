"""``--reproducible``: the same store gives the same report to the last bit, every run.

Without it DuckDB adds floating-point sums in parallel and its parallel join stores rows
in an order left to thread timing, so full-precision figures (JSON, CSV) differ run to
run around the 13th significant digit (on 1M records, 44-70 of ~4,000 floats in every
pair of runs; with the option, 0 in four runs). The store here spans several of DuckDB's
122,880-row groups, so both threads take part in every scan.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from golden_compare import golden_differences
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.cli.app import _run, app
from llm_council.simulation.simulated_records import load_simulated_profiles, write_record_store

MEMBERS = ("balanced", "harsh", "verbose", "primacy", "narcissist")


@pytest.fixture(scope="module")
def large_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("reproducible") / "store.jsonl"
    # 12,000 sessions x 25 records = 300,000 records, 3 missing-score holes in 100
    write_record_store(
        store, load_simulated_profiles(list(MEMBERS)), 12_000, seed=11, missing_score_rate=0.03
    )
    return store


def _figures(store: Path, **options: Any) -> dict[str, Any]:
    report = build_report(store, n_resamples=20, **options).to_dict()
    report.pop("generated_at")
    return report


def test_a_reproducible_report_is_the_same_to_the_last_bit(large_store: Path) -> None:
    first = _figures(large_store, reproducible=True)
    assert first["n_records"] == 300_000 - first["n_incomplete_records"]
    assert _figures(large_store, reproducible=True) == first
    # and it is the same report: the default run agrees with it to rounding
    default = _figures(large_store)
    assert golden_differences(first, default, "report", 1e-9) == []


def test_reproducible_loading_sorts_the_records_and_keeps_one_thread(tmp_path: Path) -> None:
    store = tmp_path / "small.jsonl"
    write_record_store(store, load_simulated_profiles(list(MEMBERS[:3])), 40, seed=2)
    lines = store.read_text().splitlines(keepends=True)
    random.Random(5).shuffle(lines)  # the sorted order is not the file's order
    store.write_text("".join(lines))
    loaded = load_store(store, reproducible=True)
    try:
        connection = loaded.connection
        assert connection.execute("SELECT current_setting('threads')").fetchone() == (1,)
        stored = connection.execute("SELECT * FROM records").fetchall()
        assert stored == connection.execute("SELECT * FROM records ORDER BY ALL").fetchall()
        cursor = connection.cursor()  # the sections' cursors share the setting
        assert cursor.execute("SELECT current_setting('threads')").fetchone() == (1,)
    finally:
        loaded.connection.close()


def test_reproducible_with_spark_is_one_line_refusal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    code = _run(
        ["bias-report", "--store", str(parquet), "--engine", "spark", "--reproducible"],
        "llm-council",
        app,
    )
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        "error: --reproducible needs --engine duckdb "
        "(Spark adds per-session sums in its own order)\n"
    )
