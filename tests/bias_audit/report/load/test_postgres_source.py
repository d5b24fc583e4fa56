"""``bias-report --store postgresql://...`` goes through the PostgreSQL store's Arrow reader.

The store module (``llm_council.bias_audit.records.postgres_store``) is written on another branch;
until it lands, these tests register a stand-in with the agreed interface,
``arrow_batch_reader(url, *, since=None) -> pyarrow.RecordBatchReader``, in ``sys.modules``. The
stand-in serves real records from a JSONL fixture; nothing of ours is patched.
"""

from __future__ import annotations

import json
import sys
import types
from datetime import datetime
from pathlib import Path

import pyarrow as pa
import pytest

from bias_audit.report.conftest import record_line
from bias_audit.report.report_numbers import assert_same_numbers
from llm_council.bias_audit.report import build_report, render_json
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.bias_audit.report.load.record_sources import default_store_location
from llm_council.errors import RecordError

URL = "postgresql://auditor:s3cr3t-pw@db.internal:5432/council"


def _install_stand_in(
    monkeypatch: pytest.MonkeyPatch, rows: list[dict[str, object]], calls: list[tuple]
) -> None:
    module = types.ModuleType("llm_council.bias_audit.records.postgres_store")

    def arrow_batch_reader(url: str, *, since: datetime | None = None) -> pa.RecordBatchReader:
        calls.append((url, since))
        table = pa.Table.from_pylist(rows)
        # small batches: the report must scan a stream, not one table
        return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=2))

    module.arrow_batch_reader = arrow_batch_reader  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llm_council.bias_audit.records.postgres_store", module)


def test_postgres_rows_give_the_same_report_as_the_jsonl_file(
    monkeypatch: pytest.MonkeyPatch, biased_store: Path
) -> None:
    rows = [json.loads(line) for line in biased_store.read_text().splitlines()]
    calls: list[tuple] = []
    _install_stand_in(monkeypatch, rows, calls)
    from_postgres = json.loads(render_json(build_report(URL, since="2000-01-01")))
    from_file = json.loads(render_json(build_report(biased_store, since="2000-01-01")))
    assert assert_same_numbers(from_file, from_postgres) > 100
    assert calls[0][0] == URL and calls[0][1] == datetime.fromisoformat("2000-01-01T00:00:00+00:00")
    assert from_postgres["store"] == "postgresql://auditor:***@db.internal:5432/council"


def test_postgres_rows_missing_a_required_field_are_unreadable_not_fatal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    good = json.loads(record_line())
    bad = {**json.loads(record_line(reviewer_id="r2")), "position": None}
    _install_stand_in(monkeypatch, [good, bad], [])
    store = load_store(URL)
    assert (store.n_records, store.n_unreadable) == (1, 1)
    assert all("s3cr3t-pw" not in warning for warning in store.warnings)


def test_a_driver_error_never_shows_the_password(monkeypatch: pytest.MonkeyPatch) -> None:
    module = types.ModuleType("llm_council.bias_audit.records.postgres_store")

    def arrow_batch_reader(url: str, *, since: datetime | None = None) -> pa.RecordBatchReader:
        raise OSError(f"connection to {url} refused; password s3cr3t-pw rejected")

    module.arrow_batch_reader = arrow_batch_reader  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "llm_council.bias_audit.records.postgres_store", module)
    with pytest.raises(RecordError) as raised:
        load_store(URL)
    assert "s3cr3t-pw" not in str(raised.value)
    assert "postgresql://auditor:***@db.internal:5432/council" in str(raised.value)


def test_compaction_reads_a_postgres_store_too(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    rows = [json.loads(record_line(session_id=f"s{i}", reviewer_id="a")) for i in range(3)]
    calls: list[tuple] = []
    _install_stand_in(monkeypatch, rows, calls)
    result = compact_store(URL, tmp_path / "pq")
    assert (result.n_sessions_written, result.days_written) == (3, ("2026-01-10",))
    assert calls == [(URL, None)]


def test_a_postgres_url_in_the_environment_is_not_folded_into_a_path() -> None:
    assert default_store_location({"LLM_COUNCIL_BIAS_STORE": URL}) == URL
    assert default_store_location({"LLM_COUNCIL_BIAS_STORE": "/x/s.jsonl"}) == "/x/s.jsonl"
