"""One background rebuild per key: a second request while one runs starts nothing, and a
failure reaches the caller's error handler, never the session."""

from __future__ import annotations

import threading

from llm_council.bias_audit.records.background_rebuild import (
    rebuild_once_in_background,
    running,
)


def test_one_rebuild_per_key_and_errors_go_to_the_handler() -> None:
    release = threading.Event()
    finished = threading.Event()
    calls: list[str] = []
    errors: list[Exception] = []

    def slow_failing_rebuild() -> None:
        calls.append("rebuild")
        release.wait(10)
        raise OSError("disk full")

    def on_error(error: Exception) -> None:
        errors.append(error)
        finished.set()

    assert rebuild_once_in_background("k", slow_failing_rebuild, on_error, thread_name="t")
    assert not rebuild_once_in_background("k", slow_failing_rebuild, on_error, thread_name="t")
    assert "k" in running()
    release.set()
    assert finished.wait(10)
    for _ in range(500):  # the key is released right after the handler returns
        if "k" not in running():
            break
        threading.Event().wait(0.01)
    assert "k" not in running()
    assert calls == ["rebuild"]
    assert [str(error) for error in errors] == ["disk full"]
    # released: the next request starts a new rebuild
    done = threading.Event()
    assert rebuild_once_in_background("k", done.set, on_error, thread_name="t")
    assert done.wait(10)
