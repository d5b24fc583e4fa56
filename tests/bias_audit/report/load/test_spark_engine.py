"""``bias-report --engine spark`` gives the numbers DuckDB gives on the same Parquet store.

One SparkSession for the module (a local JVM takes 10-20 s to start) and a small store.
Locally, a machine without pyspark or Java skips with the reason; in CI (``CI=true``) the
Spark tests must run, so a missing runtime fails instead.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import duckdb
import pytest

from bias_audit.report.report_numbers import assert_same_numbers
from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report import build_report, render_json
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.parquet_compaction import compact_store


def _spark_missing() -> str | None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        return "pyspark is not installed (pip install -e '.[spark]')"
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        return "no Java runtime (apt-get install default-jre-headless)"
    return None


@pytest.fixture(scope="module")
def parquet_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    missing = _spark_missing()
    if missing is not None:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"CI must run the Spark tests: {missing}")
        pytest.skip(missing)
    root = tmp_path_factory.mktemp("spark")
    # integer scores, ties, missing cells and reviews; 72 sessions over three days
    spec = CouncilSpec(
        leniency=[1.2, 0.0, 0.0, -0.6, 0.0],
        verbosity=[0.0, 0.7, 0.0, 0.0, 0.0],
        self_bias=[0.0, 0.0, 0.9, 0.0, 0.0],
        missing_score_rate=0.05,
        missing_review_rate=0.1,
    )
    store = root / "store.jsonl"
    write_store(store, generate_sessions(spec, 72, seed=21))
    compact_store(store, root / "pq")
    return root / "pq"


def test_spark_report_equals_duckdb_report_to_1e_9(parquet_store: Path) -> None:
    by_duckdb = json.loads(render_json(build_report(parquet_store, engine="duckdb")))
    by_spark = json.loads(render_json(build_report(parquet_store, engine="spark")))
    assert by_spark["n_sessions"] == 72
    assert assert_same_numbers(by_duckdb, by_spark) > 200


def test_spark_applies_since_like_duckdb(parquet_store: Path) -> None:
    since = "2026-01-06T12:00:00Z"  # sessions 36..71
    by_duckdb = json.loads(render_json(build_report(parquet_store, since=since)))
    by_spark = json.loads(render_json(build_report(parquet_store, since=since, engine="spark")))
    assert by_spark["n_sessions"] == 36
    assert assert_same_numbers(by_duckdb, by_spark) > 100


def test_spark_counts_what_it_skipped(parquet_store: Path, tmp_path: Path) -> None:
    # compaction keeps only complete sessions of known versions: write the others directly
    root = tmp_path / "pq"
    shutil.copytree(parquet_store, root)
    source = root / "date=2026-01-05" / "part-0.parquet"
    skipped = root / "date=2026-01-05" / "part-1.parquet"
    duckdb.sql(
        f"""COPY (SELECT * REPLACE ('cut' AS session_id, 2 AS schema_version,
                                   25 AS session_n_records)
                  FROM (FROM read_parquet('{source}') LIMIT 3)
                  UNION ALL
                  SELECT * REPLACE ('future' AS session_id, 9 AS schema_version)
                  FROM (FROM read_parquet('{source}') LIMIT 2))
            TO '{skipped}' (FORMAT parquet)"""
    )
    by_duckdb = load_store(root)
    by_spark = load_store(root, engine="spark")
    assert by_spark.n_incomplete_sessions == by_duckdb.n_incomplete_sessions == 1
    assert by_spark.n_unknown_version == by_duckdb.n_unknown_version == 2
    assert by_spark.n_records == by_duckdb.n_records == load_store(parquet_store).n_records
    assert by_spark.warnings == by_duckdb.warnings
    assert len(by_spark.warnings) == 2


def test_spark_says_it_left_the_check_records_out(parquet_store: Path, tmp_path: Path) -> None:
    """Review finding: Spark dropped the causal-checks section without a word, which reads
    as "no checks were run". Its other numbers still equal DuckDB's."""
    from bias_audit.report.analyses.test_causal_checks import CheckWorld, generate_check_lines
    from bias_audit.report.analyses.test_causal_checks import write_store as write_lines

    store = write_lines(tmp_path / "checks.jsonl", generate_check_lines(CheckWorld(), 3))
    compact_store(store, tmp_path / "pq")
    by_duckdb = build_report(tmp_path / "pq", engine="duckdb")
    by_spark = build_report(tmp_path / "pq", engine="spark")
    assert by_duckdb.causal_checks is not None and by_spark.causal_checks is None
    assert any("bias-check record(s) not analysed" in w for w in by_spark.warnings)
    assert not any("bias-check" in w for w in by_duckdb.warnings)
    assert by_spark.n_records == by_duckdb.n_records


def test_spark_in_session_blocks_equals_spark_at_once(
    parquet_store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large Spark-loaded store is summarized in blocks too (ADR 0092): the same numbers."""
    from llm_council.bias_audit.report.analyses import session_chunks

    at_once = json.loads(render_json(build_report(parquet_store, engine="spark")))
    monkeypatch.setattr(session_chunks, "CHUNKED_ABOVE_RECORDS", 0)
    monkeypatch.setattr(session_chunks, "CHUNK_RECORDS", 200)
    in_blocks = json.loads(render_json(build_report(parquet_store, engine="spark")))
    assert assert_same_numbers(in_blocks, at_once) > 50
