"""The store's direct ``flock`` excludes filelock's ``FileLock`` on the same file, both ways,
times out as it does, and falls back to it where ``flock`` is unavailable."""

from __future__ import annotations

import contextlib
import errno
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from llm_council.bias_audit.records import jsonl_store as store
from llm_council.bias_audit.records import store_lock
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.store_lock import store_write_lock
from llm_council.errors import RecordError


@contextlib.contextmanager
def _held_in_thread(lock_file: str) -> Iterator[None]:
    """A FileLock held by another thread for the duration of the block."""
    acquired, release = threading.Event(), threading.Event()

    def hold() -> None:
        with FileLock(lock_file):
            acquired.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    assert acquired.wait(10)
    try:
        yield
    finally:
        release.set()
        thread.join(10)


def _no_fallback() -> contextlib.AbstractContextManager[object]:
    raise AssertionError("flock is available here: the fallback must not be used")


def test_a_held_filelock_makes_the_direct_lock_wait_and_time_out(tmp_path: Path) -> None:
    lock_file = str(tmp_path / "store.jsonl.lock")
    with (
        _held_in_thread(lock_file),
        pytest.raises(Timeout),
        store_write_lock(lock_file, 0.2, _no_fallback),
    ):
        pytest.fail("acquired a lock another holder has")
    with store_write_lock(lock_file, 0.2, _no_fallback):  # free again once released
        pass


def test_the_direct_lock_excludes_a_filelock(tmp_path: Path) -> None:
    lock_file = str(tmp_path / "store.jsonl.lock")
    with store_write_lock(lock_file, 1.0, _no_fallback), pytest.raises(Timeout):
        FileLock(lock_file).acquire(timeout=0.1)
    lock = FileLock(lock_file)
    lock.acquire(timeout=0.1)
    lock.release()


def test_a_blocked_append_is_a_record_error_after_the_timeout(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "store.jsonl"
    monkeypatch.setattr(store, "LOCK_TIMEOUT_S", 0.2)
    record = ReviewRecord(
        session_id="s",
        timestamp="2026-11-25T00:00:00.000+00:00",
        reviewer_id="a",
        model_id="b",
        position=0,
        n_candidates=1,
        response_length_chars=1,
        response_length_words=1,
        score_value=5.0,
        is_self_review=False,
        council_config_hash="h",
    )
    with _held_in_thread(str(path) + ".lock"), pytest.raises(RecordError, match="could not lock"):
        store.append_records(path, [record])
    assert not path.exists() or path.read_bytes() == b""
    assert store.append_records(path, [record]) == 1


def test_without_flock_the_filelock_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_flock(descriptor: int, operation: int) -> None:
        raise OSError(errno.ENOSYS, "flock not implemented")

    monkeypatch.setattr(store_lock.fcntl, "flock", no_flock)
    entered: list[bool] = []

    @contextlib.contextmanager
    def fallback() -> Iterator[None]:
        entered.append(True)
        yield

    with store_write_lock(str(tmp_path / "store.jsonl.lock"), 1.0, fallback):
        assert entered == [True]
