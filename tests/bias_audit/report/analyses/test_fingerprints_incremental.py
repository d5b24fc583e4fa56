"""The fingerprint history from merged per-(reviewer, session) rows (ADR 0086): parts whose
sessions interleave in time (a later append holds earlier sessions, splitting segments
already seen) finish to the whole store's section bit for bit, in any merge order; a
report over three appends equals the cold one; malformed payloads are refused by field."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import (
    connection_of,
    json_lines,
    merged_in_three_orders,
    report_after_a_malformed_section,
    sections_summarized_again,
    write_parts,
)
from bias_audit.report.analyses.test_incremental_runner import assert_same_report
from generators.fingerprinted_council import fingerprint, write_fingerprinted_store
from generators.independent_council import CouncilSpec
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses.fingerprints import fingerprint_history
from llm_council.bias_audit.report.analyses.fingerprints_summary import (
    FINGERPRINTS,
    FingerprintSummary,
)
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.bias_audit.report.load.session_summaries import SavedSection

SECTION = FINGERPRINTS


def _sessions(path: Path) -> list[list[dict[str, Any]]]:
    """The store's records grouped by session, in the file's order."""
    sessions: dict[str, list[dict[str, Any]]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        sessions.setdefault(record["session_id"], []).append(record)
    return list(sessions.values())


def _shuffled_times(sessions: list[list[dict[str, Any]]], seed: int) -> list[list[dict[str, Any]]]:
    """Each session's time drawn from another's (time order is not id order), two sessions
    at one time (a tie, broken by session id) and two without a readable time (last)."""
    times = [session[0]["timestamp"] for session in sessions]
    times = [times[i] for i in np.random.default_rng(seed).permutation(len(times))]
    times[1] = times[0]
    times[2] = times[3] = "not a time"
    return [[r | {"timestamp": t} for r in s] for s, t in zip(sessions, times, strict=True)]


def _store(tmp_path: Path, name: str) -> list[list[dict[str, Any]]]:
    path = tmp_path / f"{name}.jsonl"
    hot = fingerprint("gpt-4o-2024-08-06", temperature=1.0)
    if name == "3-members-shift":
        spec = CouncilSpec(n_members=3, missing_score_rate=0.1, missing_review_rate=0.1)
        write_fingerprinted_store(path, spec, 45, seed=3, change_at=20, shift=1.0)
    elif name == "9-members":
        spec = CouncilSpec(n_members=9, missing_score_rate=0.05, shared_order=True)
        write_fingerprinted_store(path, spec, 24, seed=9, change_at=12, changed_reviewer=4)
    elif name == "reverted-and-unrecorded":
        spec = CouncilSpec(n_members=4)
        write_fingerprinted_store(
            path, spec, 36, seed=4, change_at=10, after=hot, unfingerprinted=range(30, 33)
        )
    sessions = _sessions(path)
    if name == "reverted-and-unrecorded":
        for session in sessions[20:]:
            for record in session:
                if "reviewer_fingerprint" in record:
                    record["reviewer_fingerprint"] = fingerprint("gpt-4o-2024-08-06")
        for record in sessions[5]:  # one fingerprint that fails validation
            record["reviewer_fingerprint"] = {"provider": 7}
        for record in sessions[6]:  # a constant judge
            record["score_value"] = 5.0
    return sessions


STORES = ("3-members-shift", "9-members", "reverted-and-unrecorded")


def _parts(tmp_path: Path, name: str, shuffle: bool) -> tuple[list[FingerprintSummary], Any, Path]:
    sessions = _store(tmp_path, name)
    if shuffle:
        sessions = _shuffled_times(sessions, seed=len(sessions))
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], tmp_path)
    summaries = [SECTION.summarize(connection_of(path)) for path in paths[:-1]]
    return summaries, fingerprint_history(connection_of(paths[-1])), paths[-1]


@pytest.mark.parametrize("shuffle", [False, True], ids=["time-order", "shuffled-times"])
@pytest.mark.parametrize("name", STORES)
def test_merged_parts_finish_to_the_whole_store_bit_for_bit(
    name: str, shuffle: bool, tmp_path: Path
) -> None:
    (a, b, c), whole, _ = _parts(tmp_path, name, shuffle)
    assert whole is not None and whole.reviewers  # a history with a change to compare
    want = repr(whole)  # repr: exact floats, and NaN equals NaN
    for merged in merged_in_three_orders(SECTION, a, b, c):
        assert repr(SECTION.finish(merged)) == want
    meta, arrays = SECTION.to_payload(SECTION.merge(SECTION.merge(a, b), c))
    json.dumps(meta)
    assert repr(SECTION.finish(SECTION.from_payload(meta, arrays))) == want


def test_the_invalid_fingerprint_is_counted_once_across_parts(tmp_path: Path) -> None:
    (a, b, c), whole, _ = _parts(tmp_path, "reverted-and-unrecorded", False)
    merged = SECTION.finish(SECTION.merge(SECTION.merge(a, b), c))
    assert whole is not None and whole.n_invalid_fingerprints == 1
    assert merged is not None and merged.n_invalid_fingerprints == 1
    # session 5's invalid fingerprint and sessions 30-32 read as unrecorded segments for
    # every reviewer; judge-0 alone has the hot set-up (sessions 10-19)
    assert len(merged.reviewers) == 4
    for history in merged.reviewers:
        assert sum(s.fingerprint is None for s in history.segments) == 2
        hot = [s for s in history.segments if s.fingerprint and s.fingerprint["temperature"]]
        assert len(hot) == (history.reviewer == "judge-0")


def test_a_store_without_fingerprints_has_no_section(tmp_path: Path) -> None:
    sessions = _store(tmp_path, "9-members")
    for session in sessions:
        for record in session:
            record.pop("reviewer_fingerprint", None)
    paths = write_parts(sessions, [range(0, 12), range(12, 24)], tmp_path)
    a, b = (SECTION.summarize(connection_of(path)) for path in paths[:-1])
    assert SECTION.finish(SECTION.merge(a, b)) is None
    assert fingerprint_history(connection_of(paths[-1])) is None


def _malformed(arrays: dict[str, np.ndarray], field: str) -> dict[str, np.ndarray]:
    broken = dict(arrays)
    if field == "total":
        broken[field] = np.where(np.arange(arrays[field].size) == 0, np.nan, arrays[field])
    elif field == "reviewer":
        broken[field] = arrays[field] + 100
    elif field == "fingerprint":
        broken[field] = arrays[field].astype(float)
    else:
        broken[field] = arrays[field][:-1]
    return broken


@pytest.mark.parametrize("field", ["total", "reviewer", "fingerprint", "session_id", "time_us"])
def test_a_malformed_payload_is_refused_naming_the_field(field: str, tmp_path: Path) -> None:
    (a, _, _), _, _ = _parts(tmp_path, "3-members-shift", False)
    meta, arrays = SECTION.to_payload(a)
    with pytest.raises(ValueError, match=repr(field)):
        SECTION.from_payload(meta, _malformed(arrays, field))
    missing = {k: v for k, v in arrays.items() if k != field}
    with pytest.raises(ValueError, match=repr(field)):
        SECTION.from_payload(meta, missing)
    with pytest.raises(ValueError, match="'stored'"):
        SECTION.from_payload({"stored": "yes"}, arrays)


def _report(store: Path, **options: object) -> str:
    report = build_report(store, n_resamples=20, seed=3, reproducible=True, **options).to_dict()
    report.pop("generated_at")
    report.pop("store")
    assert report["fingerprints"]["reviewers"]
    return json.dumps(report, sort_keys=True, allow_nan=True)


def test_three_out_of_order_appends_equal_the_cold_report(tmp_path: Path) -> None:
    """Each append holds sessions earlier in time than the last one's (interleaved thirds),
    on JSONL; the same store compacted into Parquet after each append."""
    sessions = _shuffled_times(_store(tmp_path, "3-members-shift"), seed=5)
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"")
    parquet = tmp_path / "pq"
    for part in (range(0, 45, 3), range(1, 45, 3), range(2, 45, 3)):
        with store.open("a", encoding="utf-8") as handle:
            handle.writelines(json.dumps(r) + "\n" for i in part for r in sessions[i])
        assert_same_report(_report(store), _report(store, session_summaries=False))
        batch = tmp_path / f"batch-{part.start}.jsonl"
        batch.write_text(
            "".join(json.dumps(r) + "\n" for i in part for r in sessions[i]), encoding="utf-8"
        )
        compact_store(batch, parquet)
        assert_same_report(_report(parquet), _report(parquet, session_summaries=False))


@pytest.mark.parametrize(
    ("section", "field"), [("fingerprints", "n"), ("reliability", "block0_sums")]
)
def test_a_malformed_saved_section_is_recomputed(section: str, field: str, tmp_path: Path) -> None:
    """A sealed file whose payload of one of these sections is cut short: that section is
    summarized again over every session, and the report is the cold one."""
    sessions = _store(tmp_path, "3-members-shift")
    store = tmp_path / "store.jsonl"

    def malform(payload: SavedSection) -> SavedSection:
        return replace(payload, arrays={**payload.arrays, field: payload.arrays[field][:-1]})

    incremental, logs = report_after_a_malformed_section(
        store, json_lines(sessions), section, malform, lambda: _report(store)
    )
    recomputed = sections_summarized_again(logs)
    assert [entry["section"] for entry in recomputed] == [section]
    assert repr(field) in recomputed[0]["reason"]
    assert_same_report(incremental, _report(store, session_summaries=False))
