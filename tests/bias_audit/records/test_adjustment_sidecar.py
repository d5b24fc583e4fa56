"""The summed reviewer history beside a JSONL store: kept at append time, trusted only when
it describes the store as it is, rebuilt otherwise (ADR 0049)."""

from __future__ import annotations

import base64
import dataclasses
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.records import adjustment_history, background_rebuild, summary_files
from llm_council.bias_audit.records.adjustment_sidecar import (
    SIDECAR_KIND,
    read_sidecar,
    sidecar_path,
)
from llm_council.bias_audit.records.jsonl_store import append_records, read_records
from llm_council.bias_audit.records.schema import SCHEMA_VERSION, ReviewRecord
from llm_council.bias_audit.session.history_adjustments import (
    full_read_adjustments,
    reviewer_adjustments,
)
from llm_council.debiased_aggregate import ReviewerAdjustment
from llm_council.errors import RecordError

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import (  # noqa: E402
    CouncilSpec,
    GeneratedSession,
    generate_sessions,
    write_store,
)


def _spec(n_members: int) -> CouncilSpec:
    return CouncilSpec(
        n_members=n_members,
        leniency=np.linspace(-1.5, 1.0, n_members),
        verbosity=[0.8] + [0.0] * (n_members - 1),
        slot_effects=[[0.0] * n_members, [1.2] + [0.0] * (n_members - 1)]
        + [[0.0] * n_members] * (n_members - 2),
        missing_score_rate=0.05,
    )


def _append(store: Path, sessions: Sequence[GeneratedSession], config_hash: str = "c1") -> None:
    for session in sessions:
        records = [
            ReviewRecord.model_validate({**r, "schema_version": SCHEMA_VERSION})
            for r in session.records(config_hash=config_hash)
        ]
        append_records(store, records)


def _members(n: int) -> list[str]:
    return [f"judge-{i}" for i in range(n)]


def _assert_same(
    expected: dict[str, ReviewerAdjustment], got: dict[str, ReviewerAdjustment]
) -> None:
    assert got.keys() == expected.keys() and expected
    for name, old in expected.items():
        new = got[name]
        assert new.n_scores == old.n_scores
        assert new.leniency == pytest.approx(old.leniency, abs=1e-6)
        assert new.length_slope == pytest.approx(old.length_slope, abs=1e-6)
        assert new.slot_effects == pytest.approx(old.slot_effects, abs=1e-6)


def _key(store: Path) -> list[int]:
    status = store.stat()
    return [status.st_ino, status.st_size, status.st_mtime_ns]


def _fresh(store: Path) -> bool:
    """The file beside the store describes it as it is."""
    read = read_sidecar(store)
    return read is not None and read[0] == _key(store)


def _kept(store: Path) -> bool:
    """A reader's rebuild, kept in memory for the store as it is (never written by it)."""
    return summary_files.rebuilt(SIDECAR_KIND, store.resolve(), _key(store)) is not None


@pytest.mark.parametrize("n_members", [3, 5, 9])
def test_appends_keep_the_sums_and_the_lookup_matches_the_full_read(
    tmp_path: Path, n_members: int
) -> None:
    store = tmp_path / "records.jsonl"
    _append(store, generate_sessions(_spec(n_members), 40, seed=n_members))
    assert _fresh(store)  # every append merged its session
    members = _members(n_members)
    expected = full_read_adjustments(store, members, council_config_hash="c1")
    _assert_same(expected, reviewer_adjustments(store, members, council_config_hash="c1"))
    assert expected["judge-0"].leniency < -0.5  # real effects, not all shrunk away


def test_council_config_hash_still_filters(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    _append(store, generate_sessions(_spec(4), 25, seed=1), config_hash="c1")
    harsh_last = CouncilSpec(n_members=4, leniency=[0.0, 0.0, 0.0, -2.0])
    second = [
        dataclasses.replace(s, session_id=f"second-{s.session_id}")  # ids are unique
        for s in generate_sessions(harsh_last, 25, seed=2)
    ]
    _append(store, second, config_hash="c2")
    members = _members(4)
    for council in ("c1", "c2", None):
        expected = full_read_adjustments(store, members, council_config_hash=council)
        _assert_same(expected, reviewer_adjustments(store, members, council_config_hash=council))
    c1 = reviewer_adjustments(store, members, council_config_hash="c1")
    c2 = reviewer_adjustments(store, members, council_config_hash="c2")
    assert c1["judge-0"].leniency < -0.5 and c2["judge-3"].leniency < -0.5
    assert reviewer_adjustments(store, members, council_config_hash="other") == {}


def test_a_store_written_behind_the_sidecars_back_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    sessions = generate_sessions(_spec(4), 30, seed=4)
    _append(store, sessions[:15], config_hash="independent-generator")
    # another program appends without the sidecar (the generator writes plain lines)
    other = tmp_path / "other.jsonl"
    write_store(other, sessions[15:])
    with store.open("ab") as handle:
        handle.write(other.read_bytes())
    assert not _fresh(store)
    members = _members(4)
    _assert_same(full_read_adjustments(store, members), reviewer_adjustments(store, members))
    assert _kept(store) and not _fresh(store)  # the reader kept its rebuild, wrote nothing
    _append(store, sessions[:1], config_hash="again")
    assert _fresh(store)  # the writer wrote it, with the new session


def test_a_truncated_store_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    _append(store, generate_sessions(_spec(4), 30, seed=5))
    members = _members(4)
    before = reviewer_adjustments(store, members)
    lines = store.read_bytes().splitlines(keepends=True)
    store.write_bytes(b"".join(lines[: len(lines) // 2]))  # compacted to its first half
    after = reviewer_adjustments(store, members)
    _assert_same(full_read_adjustments(store, members), after)
    assert after["judge-0"].n_scores < before["judge-0"].n_scores


def test_a_replaced_store_of_the_same_size_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    _append(store, generate_sessions(_spec(3), 20, seed=6))
    members = _members(3)
    reviewer_adjustments(store, members)
    # same bytes, new inode and mtime: the sums cannot know it holds the same records
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(store.read_bytes())
    copy.replace(store)
    assert not _fresh(store)
    _assert_same(full_read_adjustments(store, members), reviewer_adjustments(store, members))
    assert _kept(store)


def _damage(path: Path, how: str) -> None:
    if how == "garbage":
        path.write_text("{not json", encoding="utf-8")
        return
    payload = json.loads(path.read_text(encoding="utf-8"))
    council = next(iter(payload["councils"].values()))
    if how == "nan":
        values = np.frombuffer(base64.b64decode(council["cross"]), dtype="<f8").copy()
        values[3] = np.nan
        council["cross"] = base64.b64encode(values.tobytes()).decode("ascii")
    elif how == "short":
        council["gram_length"] = base64.b64encode(b"\0" * 8).decode("ascii")
    elif how == "negative":
        council["n_scores"][0] = -5
    path.write_text(json.dumps(payload), encoding="utf-8")


@pytest.mark.parametrize("how", ["garbage", "nan", "short", "negative"])
def test_a_damaged_sidecar_is_rebuilt_never_trusted(tmp_path: Path, how: str) -> None:
    store = tmp_path / "records.jsonl"
    _append(store, generate_sessions(_spec(4), 25, seed=7))
    members = _members(4)
    expected = full_read_adjustments(store, members)
    _damage(sidecar_path(store), how)
    assert read_sidecar(store) is None
    _assert_same(expected, reviewer_adjustments(store, members))
    assert _kept(store)


def test_a_failed_sidecar_write_leaves_the_append_intact(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    sidecar_path(store).mkdir()  # the sidecar cannot be replaced: every write fails
    sessions = generate_sessions(_spec(3), 20, seed=8)
    _append(store, sessions)
    records = list(read_records(store))
    assert len(records) == sum(len(s.records()) for s in sessions)
    members = _members(3)
    # no sums on disk: the lookup sums the records itself, every time
    _assert_same(full_read_adjustments(store, members), reviewer_adjustments(store, members))


def test_a_stale_sidecar_is_not_merged_into_by_the_next_append(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    sessions = generate_sessions(_spec(3), 24, seed=9)
    _append(store, sessions[:10], config_hash="independent-generator")
    other = tmp_path / "other.jsonl"
    write_store(other, sessions[10:14])
    with store.open("ab") as handle:
        handle.write(other.read_bytes())
    _append(store, sessions[14:], config_hash="independent-generator")
    assert not _fresh(store)  # left stale: merging would have missed the four sessions
    members = _members(3)
    _assert_same(full_read_adjustments(store, members), reviewer_adjustments(store, members))


def test_a_large_stale_store_is_rebuilt_in_the_background(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "records.jsonl"
    write_store(store, generate_sessions(_spec(3), 20, seed=10))
    monkeypatch.setattr(adjustment_history, "BACKGROUND_REBUILD_BYTES", 1024)
    with pytest.raises(RecordError, match="rebuilt in the background.*aggregates raw"):
        reviewer_adjustments(store, _members(3))
    deadline = time.monotonic() + 30
    while not _kept(store) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _kept(store)
    members = _members(3)
    _assert_same(full_read_adjustments(store, members), reviewer_adjustments(store, members))


def test_a_missing_store_has_no_history(tmp_path: Path) -> None:
    assert reviewer_adjustments(tmp_path / "missing.jsonl", ["judge-0"]) == {}
    assert not sidecar_path(tmp_path / "missing.jsonl").exists()


def test_the_council_reports_a_background_rebuild_and_aggregates_raw(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import asyncio
    import os

    from conftest import simulated_config
    from llm_council.config import with_limit_overrides
    from llm_council.council import run_full_council

    store = tmp_path / "records.jsonl"
    write_store(store, generate_sessions(_spec(3), 20, seed=11))  # no sidecar: stale
    monkeypatch.setattr(adjustment_history, "BACKGROUND_REBUILD_BYTES", 1024)
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.setenv("LLM_COUNCIL_AGGREGATION", "debiased")
    config = with_limit_overrides(
        simulated_config(*[(n, "balanced", {}) for n in ("a", "b", "c")]), os.environ
    )
    result = asyncio.run(run_full_council("q", config=config, seed=3))
    assert result.metadata["aggregation_used"] == "raw"
    errors = result.metadata["middleware_errors"]
    assert [e["hook"] for e in errors] == ["reviewer_adjustments"]
    assert "rebuilt in the background" in errors[0]["error"]
    deadline = time.monotonic() + 30
    while background_rebuild.running() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not background_rebuild.running()


def test_sessions_appended_during_a_rebuild_are_caught_up_under_the_lock(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    sessions = generate_sessions(_spec(4), 30, seed=12)
    _append(store, sessions[:20])
    summed = store.stat()  # the state a rebuild read up to
    councils = adjustment_history.rebuild_sums(store)
    # appends while a rebuild runs see neither a file nor a finished rebuild to merge into
    sidecar_path(store).unlink()
    summary_files.forget_rebuilt()
    _append(store, sessions[20:])
    assert not _fresh(store)
    caught_up = adjustment_history._caught_up(store, summed, councils)
    assert caught_up is not None and _kept(store)
    assert caught_up["c1"].n_scores.sum() > councils["c1"].n_scores.sum()
    members = _members(4)
    _assert_same(full_read_adjustments(store, members), reviewer_adjustments(store, members))
