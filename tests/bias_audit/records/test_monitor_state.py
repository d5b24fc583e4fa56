"""The monitor's state beside a JSONL store (records/monitor_state.py): online equals
rebuilt, no session twice, forged or foreign files rebuilt, 0600, nothing half-written."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from llm_council.bias_audit.records.jsonl_store import append_records, with_session_counts
from llm_council.bias_audit.records.monitor_state import (
    current_monitor,
    read_state,
    state_body,
    state_path,
    temporary_path,
    write_state,
)
from llm_council.bias_audit.records.monitor_status import monitor_status
from llm_council.bias_audit.records.monitor_update import (
    ALPHA_VARIABLE,
    monitor_after_session,
    monitor_settings,
)
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record
from llm_council.bias_audit.records.summary_seal import seal
from llm_council.errors import ConfigError
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402


def _sessions(n: int, *, seed: int = 0, **spec: object) -> list[list[ReviewRecord]]:
    council = CouncilSpec(n_members=4, noise_sds=[0.5, 0.8, 1.1, 1.5], **spec)  # type: ignore[arg-type]
    return [
        [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        for session in generate_sessions(council, n, seed)
    ]


def _same(a: object, b: object) -> None:
    assert state_body(a) == state_body(b)  # type: ignore[arg-type]


def test_online_folding_equals_a_rebuild_from_the_records(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    for records in _sessions(40, seed=1, leniency=[-2.0, 0, 0, 0], missing_score_rate=0.1):
        append_records(store, records)
        current_monitor(store)  # what the middleware does after each append
    online = read_state(store)
    assert online is not None and online.n_sessions == 40
    state_path(store).unlink()
    rebuilt = current_monitor(store)
    _same(online, rebuilt)
    answer = monitor_status(rebuilt)
    assert answer["confirmed"] == ["judge-0"]
    assert answer["reviewers"]["judge-0"]["biases"]["leniency"]["direction"] == "harsh"


def test_a_session_counts_once(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=2)
    for records in sessions:
        append_records(store, records)
    first = current_monitor(store)
    again = current_monitor(store)
    _same(first, again)
    append_records(store, sessions[1])  # the same session id appended a second time
    after = current_monitor(store)
    assert after.n_sessions == 3 and after.offset == store.stat().st_size
    assert (after.sums.n == first.sums.n).all()


def test_the_file_is_private_sealed_and_holds_no_session_id(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    for records in _sessions(2, seed=3):
        append_records(store, records)
    current_monitor(store)
    path = state_path(store)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    raw = path.read_bytes()
    sealed = raw.partition(b"\n")[0]
    assert b"indep-000000" not in raw and json.loads(sealed)["seal"].startswith("hmac-sha256:")
    assert not list(tmp_path.glob("*.monitor.json.*"))  # no temporary file left


def test_a_forged_state_is_rebuilt(tmp_path: Path) -> None:
    import base64

    store = tmp_path / "s.jsonl"
    for records in _sessions(5, seed=4):
        append_records(store, records)
    honest = current_monitor(store)
    sealed, _, digests = state_path(store).read_bytes().partition(b"\n")
    document = json.loads(sealed)
    row = document["reviewers"].index("judge-1")
    confirmed = honest.sums.confirmed_at.copy()
    confirmed[row, 0] = 2  # an edit (judge-1's leniency confirmed), the old seal
    document["cells"]["confirmed_at"] = base64.b64encode(confirmed.astype("<i8").tobytes()).decode()
    state_path(store).unlink()
    state_path(store).write_bytes(json.dumps(document).encode() + b"\n" + digests)
    assert read_state(store) is None
    _same(current_monitor(store), honest)
    # a resealed body for another store does not verify here either
    body = state_body(honest)
    other = json.dumps(seal("monitor", tmp_path / "other.jsonl", body)).encode()
    state_path(store).unlink()
    state_path(store).write_bytes(other + b"\n" + digests)
    assert read_state(store) is None


def test_a_sealed_body_with_impossible_counts_is_refused(tmp_path: Path) -> None:
    import os as _os

    from llm_council.bias_audit.records.summary_seal import sealed_json

    store = tmp_path / "s.jsonl"
    for records in _sessions(3, seed=28):
        append_records(store, records)
    honest = current_monitor(store)
    digests = honest.digest_log
    cells = state_body(honest)["cells"]

    def packed(values: object, dtype: str) -> str:
        import base64

        return base64.b64encode(np.asarray(values, dtype=dtype).tobytes()).decode("ascii")

    sums = honest.sums
    bad_sums = sums.x2_over_k_sum.copy()
    bad_sums[0, 0] = np.nan
    bad_peaks = sums.peak_log_e.copy()
    bad_peaks[1, 1] = np.inf
    for change, tail in (
        ({}, digests + digests[:8]),  # a digest more than the seal's SHA-256 covers
        ({}, digests[:-8]),  # one fewer
        ({"malformed_lines": honest.lines_read + 1}, digests),
        ({"first_malformed_line": -1}, digests),
        ({"lines_read": -5}, digests),
        ({"reviewers": ["judge-0", "judge-0", "judge-2", "judge-3"]}, digests),
        ({"cells": {**cells, "n": packed(sums.n[:-1], "<i8")}}, digests),  # a row short
        ({"cells": {**cells, "n": cells["n"][:-1]}}, digests),  # not base64
        ({"cells": {**cells, "x2_over_k_sum": packed(bad_sums, "<f8")}}, digests),  # NaN
        ({"cells": {**cells, "peak_log_e": packed(bad_peaks, "<f8")}}, digests),  # +inf
        ({"cells": {**cells, "confirmed_at": packed(sums.n + 1, "<i8")}}, digests),
    ):
        body = {**state_body(honest), **change}
        payload = sealed_json("monitor", _os.path.realpath(store), body, resolved=True)
        assert payload is not None
        state_path(store).unlink()
        state_path(store).write_bytes(payload + b"\n" + tail)  # sealed with the real key:
        assert read_state(store) is None  # only the consistency checks can refuse it
    # the control: the same write of the honest body verifies
    payload = sealed_json("monitor", _os.path.realpath(store), state_body(honest), resolved=True)
    state_path(store).unlink()
    state_path(store).write_bytes(payload + b"\n" + digests)  # type: ignore[operator]
    assert read_state(store) is not None
    _same(current_monitor(store), honest)


def test_a_symlinked_state_file_is_not_followed(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    for records in _sessions(3, seed=5):
        append_records(store, records)
    elsewhere = tmp_path / "victim.txt"
    elsewhere.write_text("keep me")
    state_path(store).symlink_to(elsewhere)
    current_monitor(store)
    assert elsewhere.read_text() == "keep me"
    assert not state_path(store).is_symlink() and read_state(store) is not None


def test_the_temporary_file_has_one_name_and_a_symlink_there_is_not_followed(
    tmp_path: Path,
) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, seed=25)
    append_records(store, sessions[0])
    current_monitor(store)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    temporary_path(store).symlink_to(victim)  # planted where a replacing write goes
    append_records(store, sessions[1])
    assert current_monitor(store).n_sessions == 2  # written in place: no temporary file
    assert victim.read_text() == "keep me"
    state_path(store).chmod(0o644)  # not the file this writer leaves: replaced, not written
    append_records(store, sessions[2])
    assert current_monitor(store).n_sessions == 3
    assert victim.read_text() == "keep me" and not temporary_path(store).exists()
    assert stat.S_IMODE(state_path(store).stat().st_mode) == 0o600
    # a killed writer's leftover is replaced by the next replacing write, not accumulated
    temporary_path(store).write_bytes(b"half a state")
    state_path(store).unlink()
    append_records(store, sessions[3])
    assert current_monitor(store).n_sessions == 4
    assert not temporary_path(store).exists() and read_state(store) is not None


def test_a_symlinked_store_takes_the_stores_own_lock(tmp_path: Path) -> None:
    store = tmp_path / "real" / "s.jsonl"
    store.parent.mkdir()
    for records in _sessions(2, seed=26):
        append_records(store, records)
    link = tmp_path / "link.jsonl"
    link.symlink_to(store)
    assert current_monitor(link).n_sessions == 2
    # the appenders' lock is named after the resolved store; a lock beside the link
    # would not exclude them
    assert (store.parent / "s.jsonl.lock").exists()
    assert not (tmp_path / "link.jsonl.lock").exists()


def test_the_digests_are_written_in_fold_order(tmp_path: Path) -> None:
    from llm_council.bias_audit.records.monitor_fold import session_digest

    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, seed=27)
    for records in sessions:
        append_records(store, records)
        current_monitor(store)
    _, _, written = state_path(store).read_bytes().partition(b"\n")  # raw, after the JSON
    assert written == b"".join(session_digest(records[0].session_id) for records in sessions)


def test_a_rewritten_store_of_the_same_length_is_rebuilt(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    for records in _sessions(4, seed=6):
        append_records(store, records)
    current_monitor(store)
    text = store.read_text().replace('"score_value":5.0', '"score_value":9.0')
    assert len(text) == store.stat().st_size
    store.write_text(text)
    online = current_monitor(store)
    state_path(store).unlink()
    _same(online, current_monitor(store))


def test_a_truncated_store_and_a_torn_tail(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, seed=7)
    for records in sessions[:3]:
        append_records(store, records)
    current_monitor(store)
    # a crash cut the next session short: 7 of its 16 lines and a torn eighth
    lines = [r.model_dump_json() + "\n" for r in with_session_counts(sessions[3])]
    with store.open("a") as handle:
        handle.write("".join(lines[:7]) + lines[7][:100])
    state = current_monitor(store)
    assert state.n_sessions == 3 and state.offset < store.stat().st_size
    append_records(store, sessions[3])  # written again, whole, after the torn bytes
    online = current_monitor(store)
    assert online.n_sessions == 4 and online.offset == store.stat().st_size
    state_path(store).unlink()
    _same(current_monitor(store), online)
    # cut short with no torn line: the copy and the rewrite read as one session of 23
    # lines where 16 were declared, so neither counts, online or rebuilt
    with store.open("a") as handle:
        handle.write("".join(lines[:7]).replace("indep-000003", "indep-000099"))
    assert current_monitor(store).n_sessions == 4
    append_records(
        store, [r.model_copy(update={"session_id": "indep-000099"}) for r in sessions[3]]
    )
    online = current_monitor(store)
    assert online.n_sessions == 4
    state_path(store).unlink()
    _same(current_monitor(store), online)
    # truncate to the first session: the offset is past the end, so it is rebuilt
    lines = store.read_bytes().split(b"\n")
    store.write_bytes(b"\n".join(lines[:16]) + b"\n")
    assert current_monitor(store).n_sessions == 1


def test_other_settings_are_computed_but_not_saved(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    for records in _sessions(6, seed=8):
        append_records(store, records)
    current_monitor(store)
    before = state_path(store).read_bytes()
    wide = current_monitor(store, MonitorSettings(delta0=3.0), save=False)
    assert wide.settings.delta0 == 3.0 and state_path(store).read_bytes() == before


def test_a_missing_store_gives_an_empty_monitor_and_writes_nothing(tmp_path: Path) -> None:
    store = tmp_path / "none.jsonl"
    state = current_monitor(store)
    assert state.n_sessions == 0 and not state_path(store).exists()


def test_without_a_key_nothing_is_written_and_the_answer_is_still_computed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_council.bias_audit.records import summary_seal

    monkeypatch.setenv(summary_seal.SUMMARY_KEY_FILE_VARIABLE, str(tmp_path / "f" / "k"))
    (tmp_path / "f").write_text("a file where the key's directory should be")
    summary_seal._file_key.cache_clear()
    store = tmp_path / "s.jsonl"
    for records in _sessions(3, seed=9):
        append_records(store, records)
    state = current_monitor(store)
    assert state.n_sessions == 3 and not state_path(store).exists()
    assert write_state(store, state) is False
    summary_seal._file_key.cache_clear()


def test_a_state_whose_sums_are_not_finite_is_never_written(tmp_path: Path) -> None:
    # the packed columns are base64, which the seal's finiteness check cannot see into: a
    # state with an infinite sum would be written, then refused on every read (rebuilt on
    # every look); write_state refuses it and leaves the previous file as it was
    from dataclasses import replace

    store = tmp_path / "s.jsonl"
    for records in _sessions(3, seed=9):
        append_records(store, records)
    state = current_monitor(store)
    before = state_path(store).read_bytes()
    for field in ("precision", "peak_log_e"):
        values = getattr(state.sums, field).copy()
        values.flat[0] = np.inf if field == "precision" else np.nan
        broken = replace(state, sums=replace(state.sums, **{field: values}))
        assert write_state(store, broken) is False, field
        assert state_path(store).read_bytes() == before
    assert write_state(store, state) is True


def test_degenerate_judges(tmp_path: Path) -> None:
    # judge-3 gives every answer the same score; judge-2 "always A": 10 to the answer it
    # sees first and 4 to the rest. Nothing crashes; always-A is a first-slot preference.
    store = tmp_path / "s.jsonl"
    for records in _sessions(60, seed=10):
        rewritten = []
        for record in records:
            if record.reviewer_id == "judge-3":
                record = record.model_copy(update={"score_value": 6.0})
            if record.reviewer_id == "judge-2":
                score = 10.0 if record.position == 0 else 4.0
                record = record.model_copy(update={"score_value": score})
            rewritten.append(record)
        append_records(store, rewritten)
    answer = monitor_status(current_monitor(store))
    judge2 = answer["reviewers"]["judge-2"]
    assert "slot_preference" in judge2["confirmed"]
    assert (
        judge2["biases"]["slot_preference"]["direction"]
        == "scores the answer it is shown first higher"
    )
    json.dumps(answer, allow_nan=False)


def test_hostile_reviewer_names_round_trip(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    odd = {f"judge-{i}": name for i, name in enumerate(["\x1b[31mred", "é\u202e", 'a"b', "x"])}
    for records in _sessions(3, seed=11):
        append_records(
            store,
            [
                r.model_copy(
                    update={"reviewer_id": odd[r.reviewer_id], "model_id": odd[r.model_id]}
                )
                for r in records
            ],
        )
    current_monitor(store)
    state = read_state(store)
    assert state is not None and set(state.reviewers) == set(odd.values())


def test_the_answer_after_a_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "s.jsonl"
    for records in _sessions(2, seed=12):
        append_records(store, records)
    answer = monitor_after_session(str(store))
    assert answer["status"] == "ok" and answer["sessions"] == 2
    assert set(answer["reviewers"]) == {f"judge-{i}" for i in range(4)}
    assert all(entry["status"] == "watching" for entry in answer["reviewers"].values())
    monkeypatch.setenv(ALPHA_VARIABLE, "lots")
    bad = monitor_after_session(str(store))
    assert bad == {"status": "unavailable", "reason": f"{ALPHA_VARIABLE}='lots' is not a number"}
    monkeypatch.delenv(ALPHA_VARIABLE)
    pg = monitor_after_session("postgresql://u:secret@127.0.0.1:9/db")  # nothing listens
    assert pg["status"] == "unavailable" and "secret" not in pg["reason"]
    assert "cannot read the record store" in pg["reason"]


@pytest.mark.parametrize(("value", "message"), [("inf", "finite"), ("1.5", "alpha")])
def test_bad_settings_from_the_environment(value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        monitor_settings({ALPHA_VARIABLE: value})


def test_a_failed_write_leaves_no_partial_file_and_the_next_call_recovers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tmp_path / "s.jsonl"
    for records in _sessions(2, seed=13):
        append_records(store, records)
    current_monitor(store)
    state_path(store).unlink()  # the next write makes a new file: the rename path

    def refuse(*args: object) -> None:
        raise OSError(28, "No space left on device")

    append_records(store, _sessions(3, seed=14)[2])
    with monkeypatch.context() as patched:
        patched.setattr(os, "rename", refuse)
        answered = current_monitor(store)  # the file is a cache: the answer still comes
    assert answered.n_sessions == 3
    # no temporary file and no half-written state: the next call rebuilds from the records
    assert not list(tmp_path.glob("*.monitor.json.*")) and read_state(store) is None
    _same(current_monitor(store), answered)
    assert read_state(store) is not None


def test_a_write_in_place_cut_short_is_refused_and_rebuilt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The in-place write (ADR 0053, fourth amendment) stopped half-way by a full disk leaves bytes of two
    states: neither this process's cache nor a fresh read trusts them."""
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, seed=13)
    for records in sessions[:2]:
        append_records(store, records)
    current_monitor(store)
    before = state_path(store).read_bytes()
    real_pwrite = os.pwrite

    def half_then_full(descriptor: int, data: bytes, offset: int) -> int:
        if offset == 0:
            return real_pwrite(descriptor, bytes(data[: len(data) // 2]), 0)
        raise OSError(28, "No space left on device")

    append_records(store, sessions[2])
    with monkeypatch.context() as patched:
        patched.setattr(os, "pwrite", half_then_full)
        answered = current_monitor(store)
    assert answered.n_sessions == 3
    torn = state_path(store).read_bytes()
    assert torn != before and len(torn) >= len(before)  # half new, half old bytes
    assert read_state(store) is None  # the seal refuses the mixture
    _same(current_monitor(store), answered)  # rebuilt from the records
    assert read_state(store) is not None


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_a_store_in_a_read_only_directory_is_read_without_saving(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    store = folder / "s.jsonl"
    for records in _sessions(3, seed=16):
        append_records(store, records)
    Path(str(store) + ".lock").unlink()
    folder.chmod(0o555)
    try:
        assert current_monitor(store).n_sessions == 3
        assert not state_path(store).exists()
    finally:
        folder.chmod(0o755)


def test_a_lock_that_cannot_be_created_reads_without_saving(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the same as a read-only directory, for a test run as root: creating the lock fails
    store = tmp_path / "s.jsonl"
    for records in _sessions(3, seed=16):
        append_records(store, records)
    real_open = os.open

    def no_lock(path: object, flags: int, *args: object) -> int:
        if str(path).endswith(".lock"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)  # type: ignore[arg-type]

    with monkeypatch.context() as patched:
        patched.setattr(os, "open", no_lock)
        assert current_monitor(store).n_sessions == 3
    assert not state_path(store).exists()


def test_large_rebuilds_move_to_the_background(tmp_path: Path) -> None:
    from llm_council.bias_audit.records import monitor_update
    from llm_council.bias_audit.records.background_rebuild import running

    store = tmp_path / "s.jsonl"
    for records in _sessions(3, seed=15):
        append_records(store, records)
    original = monitor_update.REBUILD_IN_SESSION_MAX_BYTES
    monitor_update.REBUILD_IN_SESSION_MAX_BYTES = 100
    try:
        answer = monitor_after_session(str(store))
    finally:
        monitor_update.REBUILD_IN_SESSION_MAX_BYTES = original
    assert answer["status"] == "unavailable" and "background" in answer["reason"]
    for _ in range(2400):  # <= 120 s, a hang-catcher: the thread takes well under a second
        if not running():
            break
        import time

        time.sleep(0.05)
    assert read_state(store) is not None and np.all(read_state(store).sums.n >= 0)  # type: ignore[union-attr]


# the append's other sidecars (profiles, adjustment sums) overflow on 1e300 and warn:
# theirs to guard, reported to the lead; the monitor itself must stay finite
@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")
def test_a_score_outside_its_scale_is_not_a_score(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    sessions = _sessions(4, seed=17)
    hostile = [
        r.model_copy(update={"score_value": 1e300}) if r.reviewer_id == "judge-1" else r
        for r in sessions[3]
    ]
    for records in [*sessions[:3], hostile]:
        append_records(store, records)
    state = current_monitor(store)
    assert state.n_sessions == 4 and read_state(store) is not None  # sealed: all finite
    row = state.reviewers.index("judge-1")
    assert state.sums.n[row, 0] == 3  # its fourth session gave no estimate
    assert np.isfinite(state.sums.x2_over_k_sum).all()
    json.dumps(monitor_status(state), allow_nan=False)


def test_concurrent_writers_and_monitors_agree_with_a_rebuild(tmp_path: Path) -> None:
    # three writers, each appending its sessions and updating the monitor after each (as
    # three council processes do); flock excludes threads too (one open file each)
    import threading

    store = tmp_path / "s.jsonl"
    sessions = _sessions(30, seed=18)

    def writer(mine: list[list[ReviewRecord]]) -> None:
        for records in mine:
            append_records(store, records)
            current_monitor(store)

    threads = [threading.Thread(target=writer, args=(sessions[i::3],)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    online = current_monitor(store)
    assert online.n_sessions == 30
    state_path(store).unlink()
    _same(current_monitor(store), online)


def test_a_hard_link_or_a_fifo_at_the_state_path_is_replaced_not_written_through(
    tmp_path: Path,
) -> None:
    """The in-place write (ADR 0053, fourth amendment) writes only the file a replacing write leaves: a
    second name for it (a hard link planted beside) keeps its bytes, and a FIFO does not
    block the writer."""
    store = tmp_path / "s.jsonl"
    sessions = _sessions(3, seed=31)
    append_records(store, sessions[0])
    current_monitor(store)
    other_name = tmp_path / "elsewhere"
    os.link(state_path(store), other_name)
    kept = other_name.read_bytes()
    append_records(store, sessions[1])
    assert current_monitor(store).n_sessions == 2
    assert other_name.read_bytes() == kept  # replaced, not written through the link
    assert os.stat(state_path(store)).st_nlink == 1
    state_path(store).unlink()
    os.mkfifo(state_path(store), 0o600)
    append_records(store, sessions[2])
    assert current_monitor(store).n_sessions == 3  # no reader on the FIFO: not blocked
    assert stat.S_ISREG(os.lstat(state_path(store)).st_mode)
    assert read_state(store) is not None
