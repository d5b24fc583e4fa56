"""The JSONL store promises a whole session or none of it (issue 10, items 3-5).

- SIGKILL: a writer appending 10-member (100 records) or 20-member (400 records) sessions
  is killed again and again at random moments, with a second writer appending at the
  same time. A large ``write`` can stop part-way when the process is killed (the kernel
  checks for fatal signals between pages), so partial sessions do reach the disk; the
  reader must drop every one of them and report it, and keep every complete session.
- A full disk: the write fails part-way. Stood in for by ``RLIMIT_FSIZE`` in a forked
  child: like ENOSPC it makes ``write(2)`` accept a prefix of the session and then fail
  (EFBIG instead of ENOSPC), which is the situation the rollback handles, errno aside;
  a real full filesystem needs a tmpfs or loop device, which need privileges CI lacks.
- A store path that is a FIFO, a directory or a device is refused with a one-line
  :class:`RecordError` before anything is written, and before the session's model calls.
"""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import random
import resource
import signal
import sys
import time
import warnings
from collections import Counter
from multiprocessing.connection import Connection
from pathlib import Path

import pytest

from llm_council.bias_audit.records.jsonl_store import (
    IncompleteSessionWarning,
    PartialWriteError,
    RecordReader,
    append_records,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.errors import RecordError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from concurrent_writers import session_records  # noqa: E402

FORK = multiprocessing.get_context("fork")


def _write_forever(path: str, writer: int, members: int) -> None:
    session = 0
    while True:
        append_records(Path(path), session_records(writer, session, members))
        session += 1


def _read(path: Path) -> tuple[list[ReviewRecord], RecordReader, list[warnings.WarningMessage]]:
    reader = RecordReader(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = list(reader)
    return records, reader, caught


def _sessions_on_disk(path: Path) -> Counter[str]:
    """Whole JSON lines per session id, counted with json alone (independent of the reader).

    A torn fragment that the next append ended with a newline is not JSON: not counted.
    """
    counts: Counter[str] = Counter()
    for raw in path.read_bytes().split(b"\n")[:-1]:
        try:
            counts[json.loads(raw)["session_id"]] += 1
        except ValueError:
            continue
    return counts


def _kill_repeatedly(path: Path, members: int, kills: int, seed: int) -> int:
    """Kill ``kills`` writers, one after another, at random moments while writer 1 appends."""
    rng = random.Random(seed)
    steady = FORK.Process(target=_write_forever, args=(str(path), 1, members), daemon=True)
    steady.start()
    session_bytes = len(session_records(0, 0, members)[0].model_dump_json()) * members * members
    try:
        for kill in range(kills):
            # a new writer id per victim: session ids stay unique, as in real councils
            victim = FORK.Process(target=_write_forever, args=(str(path), 100 + kill, members))
            victim.start()
            start = path.stat().st_size if path.exists() else 0
            target = start + rng.randint(1, 3 * session_bytes)
            deadline = time.monotonic() + 60  # a hang-catcher: both writers append at once
            while time.monotonic() < deadline:
                if path.exists() and path.stat().st_size >= target:
                    break
                time.sleep(0.0002)
            assert victim.pid is not None
            os.kill(victim.pid, signal.SIGKILL)
            victim.join()
            assert victim.exitcode == -signal.SIGKILL
    finally:
        assert steady.pid is not None
        os.kill(steady.pid, signal.SIGKILL)
        steady.join()
    on_disk = _sessions_on_disk(path)
    return sum(1 for count in on_disk.values() if count != members * members)


def _check_repeated_sigkill(path: Path, members: int, kills: int) -> None:
    partial_on_disk = _kill_repeatedly(path, members, kills=kills, seed=members)
    # the writers left behind whatever they left; now the reader's promise
    records, reader, caught = _read(path)
    per_session = Counter(record.session_id for record in records)
    assert per_session and set(per_session.values()) == {members * members}
    assert all(record.session_n_records == members * members for record in records)
    on_disk = _sessions_on_disk(path)
    partial = {session for session, count in on_disk.items() if count != members * members}
    assert len(partial) == partial_on_disk
    assert set(reader.incomplete_sessions) == partial
    assert set(per_session) == set(on_disk) - partial
    if partial:
        dropped = sum(on_disk[session] for session in partial)
        [warning] = [w for w in caught if w.category is IncompleteSessionWarning]
        assert f"{len(partial)} incomplete sessions ({dropped} records) dropped" in str(
            warning.message
        )
    # a later append is intact, whatever the kill left at the end of the file
    append_records(path, session_records(7, 0, members))
    after, _, _ = _read(path)
    assert after[len(records) :] == session_records(7, 0, members)


@pytest.mark.parametrize("members", [10, 20])
def test_repeated_sigkill_never_leaves_a_partial_session_in_a_read(
    tmp_path: Path, members: int
) -> None:
    _check_repeated_sigkill(tmp_path / "records.jsonl", members, kills=6)


@pytest.mark.slow
@pytest.mark.parametrize("members", [10, 20])
def test_fifty_sigkills_never_leave_a_partial_session_in_a_read(
    tmp_path: Path, members: int
) -> None:
    _check_repeated_sigkill(tmp_path / "records.jsonl", members, kills=50)


def test_a_session_cut_at_a_page_boundary_is_dropped_and_reported(tmp_path: Path) -> None:
    # what a SIGKILL inside a large write leaves: the first 4096 bytes of a 100-record session
    path = tmp_path / "records.jsonl"
    before = session_records(1, 0, 10)
    append_records(path, before)
    payload = b"".join(
        (record.model_dump_json() + "\n").encode() for record in session_records(1, 1, 10)
    )
    with path.open("ab") as handle:
        handle.write(payload[:4096])
    append_records(path, session_records(1, 2, 10))
    records, reader, caught = _read(path)
    assert [r.session_id for r in records] == ["w1-s0"] * 100 + ["w1-s2"] * 100
    complete_lines = payload[:4096].count(b"\n")
    assert reader.incomplete_sessions == {"w1-s1": (complete_lines, 100)}
    messages = [str(w.message) for w in caught if w.category is IncompleteSessionWarning]
    assert messages == [
        f"{path}: 1 incomplete sessions ({complete_lines} records) dropped: their line count "
        "differs from session_n_records (a write was cut short)"
    ]


# ---- a full disk ------------------------------------------------------------------------


def _append_with_file_size_limit(path: str, limit: int, members: int, reply: Connection) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG instead of a fatal signal
    try:
        append_records(Path(path), session_records(5, 1, members))
    except PartialWriteError as error:
        reply.send(("partial", str(error), error.records_left))
    except RecordError as error:
        reply.send(("error", str(error), 0))
    else:
        reply.send(("written", "", 0))


def test_a_write_that_fails_part_way_is_rolled_back(tmp_path: Path) -> None:
    path = tmp_path / "records.jsonl"
    append_records(path, session_records(5, 0, 5))
    before = path.read_bytes()
    # room for about 16 of the next 25 records, as in the full-disk report
    record_bytes = len(before) // 25
    receiving, sending = FORK.Pipe(duplex=False)
    child = FORK.Process(
        target=_append_with_file_size_limit,
        args=(str(path), len(before) + 16 * record_bytes + 40, 5, sending),
    )
    child.start()
    assert receiving.poll(60), f"the child sent nothing (exit code {child.exitcode})"
    outcome, message, left = receiving.recv()
    child.join()
    assert outcome == "error", message
    assert message == (
        f"{path}: cannot append records: {os.strerror(errno.EFBIG)} "
        "(rolled back: the store is unchanged)"
    )
    assert path.read_bytes() == before  # no record and no torn line left behind
    records, reader, caught = _read(path)
    assert len(records) == 25 and reader.skipped == [] and caught == []


def test_a_failed_rollback_reports_exactly_what_was_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "records.jsonl"
    append_records(path, session_records(5, 0, 5))
    size_before = path.stat().st_size
    session = session_records(5, 1, 5)
    record_bytes = len(session[0].model_dump_json()) + 1
    real_write = os.write
    calls = {"n": 0}

    def short_write_then_full(descriptor: int, data: bytes | memoryview) -> int:
        calls["n"] += 1
        if calls["n"] == 1:  # the disk takes 16 records and a piece of the 17th
            return real_write(descriptor, bytes(data[: 16 * record_bytes + 30]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def broken_truncate(descriptor: int, length: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "write", short_write_then_full)
    monkeypatch.setattr(os, "ftruncate", broken_truncate)
    with pytest.raises(PartialWriteError) as raised:
        append_records(path, session)
    monkeypatch.undo()
    assert raised.value.records_left == 16
    assert str(raised.value) == (
        f"{path}: cannot append records: No space left on device; rollback failed "
        "(Input/output error): 16 of 25 records and a torn line left in the store "
        "(readers drop this incomplete session)"
    )
    assert path.stat().st_size == size_before + 16 * record_bytes + 30
    records, reader, _ = _read(path)  # and the reader does drop them
    assert len(records) == 25 and reader.incomplete_sessions == {"w5-s1": (16, 25)}


def test_the_middleware_reports_a_rolled_back_session_as_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from llm_council.bias_audit.middleware import BiasAuditMiddleware

    path = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(path))
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    append_records(path, session_records(5, 0, 5))
    before = path.read_bytes()
    receiving, sending = FORK.Pipe(duplex=False)

    def run_council_with_a_full_disk() -> None:
        import asyncio

        from llm_council import run_full_council
        from llm_council.config import CouncilConfig, CouncilMember

        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 4000, resource.RLIM_INFINITY))
        config = CouncilConfig(
            members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(5)),
            chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
        )
        result = asyncio.run(run_full_council("q?", config=config, seed=3))
        sending.send(result.metadata["bias_audit"])

    child = FORK.Process(target=run_council_with_a_full_disk)
    child.start()
    assert receiving.poll(120), f"the child sent nothing (exit code {child.exitcode})"
    audit = receiving.recv()
    child.join()
    assert BiasAuditMiddleware is not None
    assert audit["records_written"] == 0
    assert "File too large (rolled back: the store is unchanged)" in audit["record_store_error"]
    assert "records_left_incomplete" not in audit
    assert path.read_bytes() == before


# ---- store paths that are not regular files ----------------------------------------------


@pytest.mark.parametrize(
    ("kind", "make"),
    [
        ("a FIFO", lambda p: os.mkfifo(p)),
        ("a directory", lambda p: p.mkdir()),
    ],
)
def test_a_store_that_is_not_a_regular_file_is_refused_before_writing(
    tmp_path: Path, kind: str, make: object
) -> None:
    path = tmp_path / "records.jsonl"
    make(path)  # type: ignore[operator]
    expected = f"{path}: the record store must be a regular file, but it is {kind}"
    with pytest.raises(RecordError) as raised:
        append_records(path, session_records(0, 0, 20))
    assert str(raised.value) == expected
    with pytest.raises(RecordError) as raised:  # the reader does not hang on it either
        list(RecordReader(path))
    assert str(raised.value) == expected


def test_a_device_as_the_store_is_refused() -> None:
    with pytest.raises(RecordError, match=r"^/dev/null: .* but it is a character device$"):
        append_records(Path("/dev/null"), session_records(0, 0, 2))


def test_a_fifo_store_stops_the_session_before_any_model_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scripted_provider: object
) -> None:
    import asyncio

    from llm_council import run_full_council
    from llm_council.config import CouncilConfig, CouncilMember

    fifo = tmp_path / "records.jsonl"
    os.mkfifo(fifo)
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(fifo))
    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    config = CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="fake:m") for i in range(20)),
        chairman=CouncilMember(name="chair", spec="fake:chair"),
    )
    with pytest.raises(RecordError, match="must be a regular file, but it is a FIFO"):
        asyncio.run(run_full_council("q?", config=config))
    assert scripted_provider.calls == []  # type: ignore[attr-defined]
