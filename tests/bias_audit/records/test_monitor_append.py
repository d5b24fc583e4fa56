"""The monitor folding the session it was handed in memory (records/monitor_append.py):
the same state as a rebuild from the records, every session once, and the store's own
lines read whenever the tail is not exactly that session's."""

from __future__ import annotations

import json
import multiprocessing
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.monitor_append import (
    AppendedSession,
    appended_session,
    fold_appended,
)
from llm_council.bias_audit.records.monitor_sessions import SessionEstimates
from llm_council.bias_audit.records.monitor_state import (
    current_monitor,
    read_state,
    state_body,
    state_path,
    update_monitor,
)
from llm_council.bias_audit.records.monitor_status import monitor_status
from llm_council.bias_audit.records.monitor_update import monitor_after_session
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402


def _sessions(
    n: int, *, members: int = 4, seed: int = 0, **spec: object
) -> list[list[ReviewRecord]]:
    sds = list(np.linspace(0.5, 1.5, members))
    council = CouncilSpec(n_members=members, noise_sds=sds, **spec)  # type: ignore[arg-type]
    return [
        [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        for session in generate_sessions(council, n, seed)
    ]


def _rebuilt(store: Path) -> dict[str, object]:
    """The state rebuilt from the records alone (the saved state removed first)."""
    state_path(store).unlink(missing_ok=True)
    return state_body(current_monitor(store, save=False))


def _after_append(store: Path, records: list[ReviewRecord]) -> str:
    """What the middleware does: append, then update with the records in memory; the path."""
    append_records(store, records)
    return update_monitor(store, appended=appended_session(records)).path


@pytest.mark.parametrize(("members", "missing"), [(3, 0.0), (4, 0.1), (5, 0.0), (9, 0.1)])
def test_folding_from_memory_equals_a_rebuild(tmp_path: Path, members: int, missing: float) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(25, members=members, seed=members, missing_score_rate=missing)
    paths = [_after_append(store, records) for records in sessions]
    # the first session meets no state (built from the store); every later one is the
    # tail exactly, so none of them parses the store
    assert paths == ["rebuilt"] + ["memory"] * 24
    online = read_state(store)
    assert online is not None and online.n_sessions == 25
    assert state_body(online) == _rebuilt(store)


def test_integer_scores_ties_and_degenerate_judges_fold_the_same(tmp_path: Path) -> None:
    # a judge that gives every answer the same score, one that always gives 10, ties
    store = tmp_path / "s.jsonl"
    sessions = _sessions(12, members=5, seed=31)
    flat = [
        [
            r.model_copy(update={"score_value": 5.0})
            if r.reviewer_id == "judge-1"
            else r.model_copy(update={"score_value": 10.0})
            if r.reviewer_id == "judge-2"
            else r
            for r in records
        ]
        for records in sessions
    ]
    paths = [_after_append(store, records) for records in flat]
    assert paths[1:] == ["memory"] * 11
    online = read_state(store)
    assert online is not None and state_body(online) == _rebuilt(store)


def test_a_session_appended_but_never_folded_is_folded_once_by_the_next(tmp_path: Path) -> None:
    # the process was killed between its append and its monitor update
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, seed=32)
    _after_append(store, sessions[0])
    append_records(store, sessions[1])  # no update: killed here
    assert _after_append(store, sessions[2]) == "read"  # the tail holds two sessions
    state = read_state(store)
    assert state is not None and state.n_sessions == 3
    assert _after_append(store, sessions[3]) == "memory"
    assert read_state(store).n_sessions == 4  # type: ignore[union-attr]
    assert state_body(read_state(store)) == _rebuilt(store)  # type: ignore[arg-type]


def test_another_writer_between_our_append_and_our_update_is_read(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, seed=33)
    _after_append(store, sessions[0])
    append_records(store, sessions[1])  # ours
    append_records(store, sessions[2])  # another process's, before our update
    assert update_monitor(store, appended=appended_session(sessions[1])).path == "read"
    # the other process's update then finds its session folded already
    other = update_monitor(store, appended=appended_session(sessions[2]))
    assert other.path == "unchanged" and other.state.n_sessions == 3
    assert state_body(read_state(store)) == _rebuilt(store)  # type: ignore[arg-type]


def test_a_session_another_process_folded_is_not_counted_again(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=34)
    _after_append(store, sessions[0])
    append_records(store, sessions[1])
    current_monitor(store)  # another process (bias-watch) folded ours first
    again = update_monitor(store, appended=appended_session(sessions[1]))
    assert again.path == "unchanged" and again.state.n_sessions == 2
    append_records(store, sessions[2])  # and then a third session lands after it
    assert update_monitor(store, appended=appended_session(sessions[1])).path == "read"
    assert read_state(store).n_sessions == 3  # type: ignore[union-attr]


def test_the_same_session_written_twice_counts_as_a_rebuild_counts_it(tmp_path: Path) -> None:
    # another writer appends a copy of our lines right after them: the tail is two copies
    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=35)
    _after_append(store, sessions[0])
    append_records(store, sessions[1])
    append_records(store, sessions[1])
    assert update_monitor(store, appended=appended_session(sessions[1])).path == "read"
    assert state_body(read_state(store)) == _rebuilt(store)  # type: ignore[arg-type]


def test_a_torn_line_before_our_lines_is_read(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=36)
    _after_append(store, sessions[0])
    with store.open("ab") as handle:
        handle.write(b'{"schema_version": 9, "sess')  # a writer killed mid-line
    assert _after_append(store, sessions[1]) == "read"
    assert _after_append(store, sessions[2]) == "memory"
    state = read_state(store)
    assert state is not None and state.n_sessions == 3 and state.malformed_lines == 1
    assert state_body(state) == _rebuilt(store)


@pytest.mark.parametrize("damage", ["edited", "truncated", "emptied", "symlink", "deleted"])
def test_a_damaged_state_is_rebuilt_not_folded_into(tmp_path: Path, damage: str) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, seed=37)
    for records in sessions[:3]:
        _after_append(store, records)
    path = state_path(store)
    raw = path.read_bytes()
    assert b'"n_sessions":3,' in raw
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    path.unlink()
    if damage == "edited":
        path.write_bytes(raw.replace(b'"n_sessions":3', b'"n_sessions":30'))
    elif damage == "truncated":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "emptied":
        path.write_bytes(b"")
    elif damage == "symlink":
        path.symlink_to(victim)
    assert read_state(store) is None
    assert _after_append(store, sessions[3]) == "rebuilt"
    assert victim.read_text() == "keep me" and not path.is_symlink()
    state = read_state(store)
    assert state is not None and state.n_sessions == 4
    assert state_body(state) == _rebuilt(store)


def test_a_state_of_a_replaced_store_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=38)
    _after_append(store, sessions[0])
    _after_append(store, sessions[1])
    replacement = tmp_path / "new.jsonl"
    append_records(replacement, sessions[0])  # the same first session, another file
    replacement.replace(store)
    assert _after_append(store, sessions[2]) == "rebuilt"
    assert read_state(store).n_sessions == 2  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "session_id", ['q"uote\\back', "line\nbreak\u2028", "caf\u00e9-\U0001f600", "x" * 2000]
)
def test_a_hostile_session_id_is_found_as_the_writer_wrote_it(
    tmp_path: Path, session_id: str
) -> None:
    # the id's JSON (quotes, backslashes, newlines, non-ASCII) is encoded as the store's
    # writer encodes it, so the check finds the session's lines and nothing else
    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=45)
    _after_append(store, sessions[0])
    hostile = [r.model_copy(update={"session_id": session_id}) for r in sessions[1]]
    assert _after_append(store, hostile) == "memory"
    assert _after_append(store, sessions[2]) == "memory"
    # one line a record: the newline in the id was escaped, never written raw
    assert store.read_bytes().count(b"\n") == sum(len(records) for records in sessions)
    assert state_body(read_state(store)) == _rebuilt(store)  # type: ignore[arg-type]


def test_records_of_two_sessions_are_not_one_appended_session() -> None:
    first, second = _sessions(2, seed=39)
    assert appended_session([]) is None
    assert appended_session([*first, *second]) is None
    assert appended_session(first) is not None


def _with_estimates(appended: AppendedSession, value: float) -> AppendedSession:
    estimates = appended.estimates
    assert estimates is not None
    values = estimates.estimates.copy()
    values[0, 0] = value
    hostile = SessionEstimates(estimates.reviewers, values, estimates.unit_variances)
    return AppendedSession(appended.n_records, appended.id_pair, appended.digest, hostile)


@pytest.mark.parametrize("value", [float("inf"), float("-inf")])
def test_non_finite_estimates_in_memory_never_reach_the_sums(tmp_path: Path, value: float) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(2, seed=40)
    _after_append(store, sessions[0])
    append_records(store, sessions[1])
    hostile = _with_estimates(appended_session(sessions[1]), value)  # type: ignore[arg-type]
    state = read_state(store)
    assert state is not None
    with store.open("rb") as handle:
        assert fold_appended(state, handle, store.stat().st_size, hostile) is None
    update = update_monitor(store, appended=hostile)
    assert update.path == "read" and np.isfinite(update.state.sums.x2_over_k_sum).all()
    json.dumps(monitor_status(update.state), allow_nan=False)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e300])
def test_non_finite_or_huge_scores_in_memory_fold_as_the_stored_lines(
    tmp_path: Path, value: float
) -> None:
    # a record built without validation (model_construct) can hold infinity or NaN; the
    # store writes them as null, and a score outside its scale is no score either way
    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=41)
    _after_append(store, sessions[0])
    hostile = [
        ReviewRecord.model_construct(**{**r.__dict__, "score_value": value})
        if r.reviewer_id == "judge-1"
        else r
        for r in sessions[1]
    ]
    assert _after_append(store, hostile) == "memory"
    assert _after_append(store, sessions[2]) == "memory"
    state = read_state(store)
    assert state is not None and np.isfinite(state.sums.x2_over_k_sum).all()
    assert state.sums.n[state.reviewers.index("judge-1"), 0] == 2  # no estimate from it
    assert state_body(state) == _rebuilt(store)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_read_only_store_is_never_written(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    store = folder / "s.jsonl"
    sessions = _sessions(2, seed=42)
    for records in sessions:
        append_records(store, records)
    Path(str(store) + ".lock").unlink()
    folder.chmod(0o555)
    try:
        update = update_monitor(store, appended=appended_session(sessions[1]))
        assert update.state.n_sessions == 2 and not state_path(store).exists()
    finally:
        folder.chmod(0o755)


def test_a_store_whose_lock_cannot_be_created_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the read-only case for a test run as root: creating the lock fails (as in a
    # read-only directory), and the update from memory still answers, writing nothing
    store = tmp_path / "s.jsonl"
    sessions = _sessions(2, seed=42)
    _after_append(store, sessions[0])
    append_records(store, sessions[1])
    before = state_path(store).read_bytes()
    real_open = os.open

    def no_lock(path: object, flags: int, *args: object) -> int:
        if str(path).endswith(".lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    with monkeypatch.context() as patched:
        patched.setattr(os, "open", no_lock)
        update = update_monitor(store, appended=appended_session(sessions[1]))
    assert update.path == "memory" and update.state.n_sessions == 2
    assert state_path(store).read_bytes() == before


def test_the_middleware_answer_from_memory_equals_the_answer_from_the_store(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(6, seed=43, leniency=[-2.0, 0, 0, 0])
    answers = []
    for records in sessions:
        append_records(store, records)
        answers.append(monitor_after_session(str(store), records))
    state_path(store).unlink()
    assert answers[-1] == monitor_after_session(str(store))  # rebuilt, no records handed


def test_the_middleware_hands_the_monitor_its_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the whole path: a council with the audit on appends its records and the monitor
    # folds them from memory (the first session builds the state from the store)
    import asyncio

    from structlog.testing import capture_logs

    from llm_council import run_full_council
    from llm_council.config import CouncilConfig, CouncilMember

    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(tmp_path / "s.jsonl"))
    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(4)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )
    answers = []
    with capture_logs() as logs:
        for seed in (1, 2, 3):
            result = asyncio.run(run_full_council("q?", config=config, seed=seed))
            answers.append(result.metadata["bias_audit"]["monitor"])
    paths = [entry["path"] for entry in logs if entry["event"] == "bias_monitor_updated"]
    assert paths == ["rebuilt", "memory", "memory"]
    assert [answer["sessions"] for answer in answers] == [1, 2, 3]
    assert state_body(read_state(tmp_path / "s.jsonl")) == _rebuilt(tmp_path / "s.jsonl")  # type: ignore[arg-type]


def _council_process(store: str, mine: list[list[dict[str, object]]]) -> None:
    """One council process: append each session, then update with it in memory."""
    for raw in mine:
        records = [ReviewRecord.model_validate(record) for record in raw]
        append_records(Path(store), records)
        monitor_after_session(store, records)


def test_concurrent_council_processes_agree_with_a_rebuild(tmp_path: Path) -> None:
    # three processes append and update in memory at once: an update may meet another's
    # lines in the tail (read) or find its session folded already (unchanged)
    store = tmp_path / "s.jsonl"
    sessions = [[r.model_dump(mode="json") for r in s] for s in _sessions(24, seed=44)]
    context = multiprocessing.get_context("fork")
    workers = [
        context.Process(target=_council_process, args=(str(store), sessions[i::3]))
        for i in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
        assert worker.exitcode == 0
    online = current_monitor(store)
    assert online.n_sessions == 24
    assert state_body(online) == _rebuilt(store)


def test_a_state_of_the_previous_format_is_rebuilt(tmp_path: Path) -> None:
    # a version-2 body (sealed with the real key) is not read as version 3: rebuilt
    from llm_council.bias_audit.records.summary_seal import sealed_json

    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=46)
    for records in sessions[:2]:
        _after_append(store, records)
    state = read_state(store)
    assert state is not None
    old = {**state_body(state), "version": 2}
    payload = sealed_json("monitor", os.path.realpath(store), old, resolved=True)
    assert payload is not None
    state_path(store).unlink()
    state_path(store).write_bytes(payload + b"\n" + state.digest_log)
    assert read_state(store) is None
    assert _after_append(store, sessions[2]) == "rebuilt"
    assert read_state(store).n_sessions == 3  # type: ignore[union-attr]
