"""The report keeps the folded summaries for its file only while they fit the file: a store
whose summaries would pass the largest file read back saves none (it once wrote a 1.2 GB
file at 10M records on every run and refused it on every read) and frees them at once."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import structlog

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from golden_compare import golden_differences
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses import incremental_runner
from llm_council.bias_audit.report.analyses.summary_keeper import SummaryKeeper, payload_bytes
from llm_council.bias_audit.report.load.session_summaries import summaries_path


class _Rows:
    """Toy section whose summary is ``n`` doubles (8n bytes in the file)."""

    version = 1

    def __init__(self, name: str) -> None:
        self.name = name

    def to_payload(self, summary: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {}, {"rows": np.zeros(summary)}

    def from_payload(self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> int:
        return int(arrays["rows"].size)


def test_payload_bytes_counts_what_the_file_stores() -> None:
    # integers travel as 8 bytes whatever their dtype; strings as a code each plus the
    # distinct strings' UTF-8 bytes; the JSON metadata as its text
    arrays = {
        "codes": np.arange(10, dtype=np.int32),
        "ids": np.array(["ab", "ab", "cde"]),
        "x": np.zeros(3),
    }
    assert payload_bytes({"k": 1}, arrays) == len(b'{"k": 1}') + 80 + (24 + 5) + 24


def test_summaries_that_fit_are_kept() -> None:
    keeper = SummaryKeeper(1000, saving=True)
    keeper.keep(_Rows("a"), 50)  # 400 bytes of doubles + 2 of JSON ("{}")
    keeper.keep(_Rows("b"), 60)  # 482: 884 in all, within 1000
    kept = [keeper.kept(name) for name in "ab"]
    assert [arrays["rows"].size for _meta, arrays in kept] == [50, 60]  # type: ignore[misc]
    assert not keeper.too_large
    keeper.keep(_Rows("c"), None)  # a section with nothing to save costs nothing
    assert keeper.total == 884 and keeper.kept("c") is None


def test_past_the_limit_everything_is_dropped_for_good() -> None:
    keeper = SummaryKeeper(1000, saving=True)
    keeper.keep(_Rows("a"), 100)  # 800 bytes
    with structlog.testing.capture_logs() as logs:
        keeper.keep(_Rows("b"), 50)  # 1,200 > 1,000: everything goes
        keeper.keep(_Rows("c"), 1)  # and nothing more is kept
    assert keeper.too_large
    assert [keeper.kept(name) for name in "abc"] == [None, None, None]
    assert [entry["event"] for entry in logs] == ["report_sessions_not_saved"]
    assert logs[0]["reason"] == "the summaries pass 0 MiB, the largest summary file read back"


def test_a_report_without_a_file_keeps_nothing() -> None:
    keeper = SummaryKeeper(10**9, saving=False)
    keeper.keep(_Rows("a"), 10)
    assert keeper.kept("a") is None and keeper.total == 0


def _canonical(store: Path, **options: object) -> str:
    report = build_report(store, n_resamples=20, seed=3, reproducible=True, **options).to_dict()
    report.pop("generated_at")
    report.pop("store")
    return json.dumps(report, sort_keys=True, allow_nan=True)


def test_a_store_whose_summaries_are_too_large_saves_no_file_and_reports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "store.jsonl"
    write_store(store, generate_sessions(CouncilSpec(n_members=4), 30, 5))
    # the limit of a 10M-record store, brought down to this store's size
    monkeypatch.setattr(incremental_runner, "MAX_FILE_BYTES", 4096)
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as logs:
        text = _canonical(store)
    assert not summaries_path(store).exists()
    assert [e["event"] for e in logs].count("report_sessions_not_saved") == 1
    # equal to the report without a file; the sessions held back (the store's last 64 KiB)
    # are summarized apart and merged, so the joint model's sums round differently (ADR 0077)
    cold = _canonical(store, session_summaries=False)
    assert golden_differences(json.loads(cold), json.loads(text), "report", 1e-8) == []
    monkeypatch.undo()
    _canonical(store)  # the real limit: the file is written
    assert summaries_path(store).exists()
