"""Summary files beside a JSONL store cannot lie (issue 37 A.2-A.6, A.11; issue 34 item 2).

Each test names the attack it defeats; each failed on the code before the summaries were
sealed, bounded and written only by the store's writer.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from pathlib import Path

import pytest

from llm_council.bias_audit import run_bias_audit
from llm_council.bias_audit.records import (
    adjustment_sidecar,
    reviewer_profiles,
    summary_files,
    summary_seal,
)
from llm_council.bias_audit.records.adjustment_history import load_council_sums
from llm_council.bias_audit.records.adjustment_sidecar import read_sidecar, sidecar_path
from llm_council.bias_audit.records.jsonl_store import LOCK_TIMEOUT_S, append_records
from llm_council.bias_audit.records.reviewer_profiles import (
    journal_path,
    load_profiles,
    profile_path,
    rebuild_profiles,
)
from llm_council.bias_audit.records.schema import SCHEMA_VERSION, ReviewRecord
from llm_council.bias_audit.records.store_lock import store_lock_file
from llm_council.errors import InputError, RecordError

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import summary_tamper  # noqa: E402

from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402


def _records(index: int, *, seed: int = 0, n_members: int = 4) -> list[ReviewRecord]:
    spec = CouncilSpec(n_members=n_members, noise_sds=[0.5, 0.8, 1.1, 1.5][:n_members])
    session = generate_sessions(spec, 1, seed + index)[0]
    return [
        ReviewRecord.model_validate(
            {**row, "session_id": f"s{seed}-{index}", "schema_version": SCHEMA_VERSION}
        )
        for row in session.records(config_hash="c1")
    ]


def _store(tmp_path: Path, n_sessions: int = 4, name: str = "records.jsonl") -> Path:
    store = tmp_path / name
    for index in range(n_sessions):
        append_records(store, _records(index))
    return store


def _cold() -> None:
    """As a new process: nothing read or rebuilt in memory."""
    reviewer_profiles._CHAIN_READS.clear()
    adjustment_sidecar._READS.clear()
    summary_files.forget_rebuilt()


def _sessions(profiles: reviewer_profiles.Profiles) -> set[int]:
    return {profile.sessions for profile in profiles.values()}


# ---- A.2: no edit of a summary alone changes a verdict -----------------------------------


@pytest.mark.parametrize("n_members", [3, pytest.param(9, marks=pytest.mark.slow)])
def test_no_edit_of_a_summary_alone_changes_a_verdict(tmp_path: Path, n_members: int) -> None:
    # 25 edits of the three files (numbers, counts, store_key, a copied file or line, the
    # seal deleted, truncation, deep nesting, a symlink); before the seal 18 of them moved
    # a verdict at 4 and at 9 members (docs/reliability.md); 9 members takes ~30 s: -m slow
    stores = summary_tamper.build_stores(tmp_path, n_members=n_members, n_sessions=12, seed=37)
    honest, outcomes = summary_tamper.run_edits(stores)
    # the verdict does read the summaries (since ADR 0051 a reviewer whose noise in the
    # session does not match its history gets the default prior instead, so not always all)
    used = re.search(r"(\d+) from history", honest.names[5])
    assert used is not None and 1 <= int(used.group(1)) <= n_members
    moved = [f"{o.edit}: {o.detail}" for o in outcomes if not o.equal]
    assert not moved
    assert len(outcomes) == len(summary_tamper.EDITS) >= 20


def test_a_forged_base_is_rebuilt_and_the_writer_heals_it(tmp_path: Path) -> None:
    store = _store(tmp_path)
    honest = rebuild_profiles(store)
    _cold()
    document = json.loads(profile_path(store).read_text())
    name = next(iter(document["reviewers"]))
    document["reviewers"][name][1] /= 100.0  # a finite, plausible, unsealed lie
    profile_path(store).write_text(json.dumps(document))
    assert load_profiles(store) == honest
    append_records(store, _records(9))  # the writer replaces it with a sealed, true base
    _cold()
    base = json.loads(profile_path(store).read_text())
    assert summary_seal.unsealed("profiles.json", store, base) is not None
    assert _sessions(load_profiles(store)) == {5}


def test_a_sealed_but_implausible_summary_is_not_used(tmp_path: Path) -> None:
    # our own writer never produces these, so the checks guard against a bug (or a
    # stolen key with a careless forger): more sessions than the store holds cells,
    # a sum beyond what scores of at most 1e6 can reach
    store = _store(tmp_path, n_sessions=2)
    honest = rebuild_profiles(store)
    key = [store.stat().st_ino, store.stat().st_size, store.stat().st_mtime_ns]
    for name, values in (
        ("sessions", [10**9, 1.0, 1.0, {}]),
        ("sum", [1, 1e300, 1.0, {}]),
        ("negative df", [1, 1.0, -1.0, {}]),
    ):
        body = {"format": 2, "store_key": key, "reviewers": {"judge-0": values}}
        sealed = summary_seal.seal("profiles.json", store, body)
        assert sealed is not None, name
        profile_path(store).write_text(json.dumps(sealed))
        journal_path(store).unlink(missing_ok=True)
        _cold()
        assert load_profiles(store) == honest, name


def test_the_sum_bound_follows_from_the_score_bound() -> None:
    from llm_council.bias_audit.report.load.raw_records import MAX_ABS_SCORE

    assert summary_files.SCORE_BOUND == MAX_ABS_SCORE
    # the shortest countable line is 62 bytes, so a 1 MiB store holds at most
    # 1048576 // 62 = 16912 cells; each summed term is at most (2e6)^2 = 4e12
    assert len(summary_files.SHORTEST_CELL_LINE) == 62
    assert summary_files.max_cells(1 << 20) == 16912
    assert summary_files.sum_bound(1 << 20) == pytest.approx(4e12 * 16912)


# ---- A.3: deep nesting -----------------------------------------------------------------


def test_a_deeply_nested_journal_line_loses_no_later_session(tmp_path: Path) -> None:
    store = _store(tmp_path, n_sessions=3)
    with journal_path(store).open("ab") as handle:
        handle.write(b"[" * 100_000 + b"\n")
    _cold()
    for index in range(3, 6):  # every later append lands, and its session is counted
        assert append_records(store, _records(index)) == len(_records(index))
    _cold()
    assert _sessions(load_profiles(store)) == {6}
    scores = {f"judge-{r}": {f"judge-{c}": 5.0 + (r + c) % 3 for c in range(4)} for r in range(4)}
    texts = {f"judge-{i}": "w " * 20 for i in range(4)}
    run_bias_audit(texts, scores, history=store)  # no RecursionError


def test_a_deeply_nested_adjustments_file_is_rebuilt(tmp_path: Path) -> None:
    store = _store(tmp_path, n_sessions=3)
    honest = load_council_sums(store)
    sidecar_path(store).write_bytes(b"[" * 100_000)
    _cold()
    assert read_sidecar(store) is None
    rebuilt = load_council_sums(store)
    assert rebuilt.keys() == honest.keys()
    assert (rebuilt["c1"].n_scores == honest["c1"].n_scores).all()


# ---- A.4: writes never follow a symlink; summaries are 0600 -------------------------------


def test_the_journal_is_never_appended_through_a_symlink(tmp_path: Path) -> None:
    store = _store(tmp_path, n_sessions=2)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    journal_path(store).unlink(missing_ok=True)
    journal_path(store).symlink_to(victim)
    append_records(store, _records(5))
    assert victim.read_text() == "precious\n"


def test_the_base_is_never_written_through_a_planted_temporary_symlink(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    # the old predictable temporary name, planted before the first append
    planted = tmp_path / f"records.jsonl.profiles.json.{os.getpid()}.tmp"
    planted.symlink_to(victim)
    append_records(store, _records(0))
    assert victim.read_text() == "precious\n"
    assert profile_path(store).exists() and not profile_path(store).is_symlink()


def test_every_summary_is_created_0600(tmp_path: Path) -> None:
    store = _store(tmp_path, n_sessions=3)
    for path in (profile_path(store), journal_path(store), sidecar_path(store)):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_a_summary_that_is_a_fifo_is_not_read(tmp_path: Path) -> None:
    store = _store(tmp_path, n_sessions=2)
    honest = rebuild_profiles(store)
    sidecar_path(store).unlink()
    os.mkfifo(sidecar_path(store))
    journal_path(store).unlink(missing_ok=True)
    os.mkfifo(journal_path(store))
    _cold()
    assert read_sidecar(store) is None  # returns at once instead of blocking on the FIFO
    assert load_profiles(store) == honest


# ---- A.5: a symlinked store shares the target's lock and summaries -------------------------


def test_a_symlink_and_its_target_share_one_lock_and_one_set_of_summaries(
    tmp_path: Path,
) -> None:
    store = _store(tmp_path, n_sessions=2)
    link = tmp_path / "link.jsonl"
    link.symlink_to(store)
    assert store_lock_file(link) == store_lock_file(store) == str(store) + ".lock"
    append_records(link, _records(7))
    append_records(store, _records(8))
    assert not any(tmp_path.glob("link.jsonl.*"))  # no second lock or summary
    _cold()
    assert _sessions(load_profiles(link)) == _sessions(load_profiles(store)) == {4}


def test_a_writer_through_a_symlink_waits_for_the_targets_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from llm_council.bias_audit.records import jsonl_store

    store = _store(tmp_path, n_sessions=1)
    link = tmp_path / "link.jsonl"
    link.symlink_to(store)
    monkeypatch.setattr(jsonl_store, "LOCK_TIMEOUT_S", 0.2)
    descriptor = os.open(str(store) + ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)  # a writer of the target holds its lock
        with pytest.raises(RecordError, match="could not lock"):
            append_records(link, _records(3))
    finally:
        os.close(descriptor)
    assert LOCK_TIMEOUT_S == 30.0


# ---- A.6: hostile scores never reach the summaries ----------------------------------------


def _hostile(index: int, value: float) -> list[ReviewRecord]:
    """A session whose scores are the generator's times ``value / 10``: they vary, so the
    residuals are as huge as the scores (on main: ``Infinity`` in the journal, and the next
    audit with history ``not_tested``)."""
    return [
        record.model_copy(
            update={
                "score_value": value * record.score_value / 10
                if record.score_value is not None
                else None
            }
        )
        for record in _records(index)
    ]


@pytest.mark.parametrize("value", [1e300, -1e300, 2e6])
def test_a_session_of_huge_scores_is_left_out_of_every_summary(
    tmp_path: Path, value: float
) -> None:
    store = _store(tmp_path, n_sessions=3)
    honest_profiles = rebuild_profiles(store)
    honest_sums = load_council_sums(store)
    append_records(store, _hostile(3, value))
    for path in (profile_path(store), journal_path(store), sidecar_path(store)):
        if path.exists():
            assert b"Infinity" not in path.read_bytes() and b"NaN" not in path.read_bytes()
    _cold()
    assert load_profiles(store) == honest_profiles  # the chain, sealed, still current
    assert (load_council_sums(store)["c1"].n_scores == honest_sums["c1"].n_scores).all()
    _cold()
    assert rebuild_profiles(store) == honest_profiles  # and a rebuild agrees
    # history stays on
    scores = {f"judge-{r}": {f"judge-{c}": 5.0 + (r + c) % 3 for c in range(4)} for r in range(4)}
    texts = {f"judge-{i}": "w " * 20 for i in range(4)}
    audit = run_bias_audit(texts, scores, history=store)
    assert "4 from history" in audit.indicator_only["reviewers"]
    assert audit.overall_bias_risk != "not_tested"


# ---- issue 34 item 2: reading history writes nothing -------------------------------------


def test_reading_history_writes_nothing_beside_the_store(tmp_path: Path) -> None:
    store = _store(tmp_path, n_sessions=3)
    for path in (profile_path(store), journal_path(store), sidecar_path(store)):
        path.unlink(missing_ok=True)
    with store.open("ab") as handle:  # another program appended: every summary is stale
        for record in _records(4):
            handle.write((record.model_dump_json() + "\n").encode())
    before = sorted(path.name for path in tmp_path.iterdir())
    _cold()
    scores = {f"judge-{r}": {f"judge-{c}": 5.0 + (r + c) % 3 for c in range(4)} for r in range(4)}
    texts = {f"judge-{i}": "w " * 20 for i in range(4)}
    run_bias_audit(texts, scores, history=store)
    load_council_sums(store)
    assert sorted(path.name for path in tmp_path.iterdir()) == before
    # the writer's next append writes what the reader rebuilt, with its own session
    append_records(store, _records(5))
    assert profile_path(store).exists() and sidecar_path(store).exists()
    _cold()
    assert _sessions(load_profiles(store)) == {5}


# ---- A.11: history that is not a store; stale temporary files -----------------------------


def test_history_from_notes_or_nowhere_is_a_one_line_error(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("shopping: milk, eggs\nthe council met on tuesday\n")
    scores = {f"judge-{r}": {f"judge-{c}": 5.0 for c in range(3)} for r in range(3)}
    texts = {f"judge-{i}": "w" for i in range(3)}
    with pytest.raises(InputError, match="not a bias-audit record store") as raised:
        run_bias_audit(texts, scores, history=notes)
    assert "\n" not in str(raised.value) and str(notes) in str(raised.value)
    with pytest.raises(InputError, match="does not exist"):
        run_bias_audit(texts, scores, history=tmp_path / "missing.jsonl")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


def test_stale_temporary_files_are_removed_by_the_next_writer(tmp_path: Path) -> None:
    store = _store(tmp_path, n_sessions=1)
    old = time.time() - 120
    stale = [
        tmp_path / ".records.jsonl.adjustments.json.k1ll3d.tmp",
        tmp_path / ".records.jsonl.profiles.json.k1ll3d.tmp",
        tmp_path / "records.jsonl.profiles.json.4242.tmp",  # the old naming
    ]
    for path in stale:
        path.write_bytes(b"")
        os.utime(path, (old, old))
    fresh = tmp_path / ".records.jsonl.adjustments.json.alive.tmp"  # a live writer's
    fresh.write_bytes(b"")
    unrelated = tmp_path / ".other.jsonl.adjustments.json.x.tmp"
    unrelated.write_bytes(b"")
    os.utime(unrelated, (old, old))
    summary_files._LAST_SWEEP.clear()
    append_records(store, _records(1))
    assert not any(path.exists() for path in stale)
    assert fresh.exists() and unrelated.exists()
