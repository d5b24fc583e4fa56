"""The local model server's life cycle (ADR 0041), with Python's ``http.server`` standing in
for llama.cpp's, so it runs without the ``local`` extra: the readiness wait, a server that
dies or never answers, stopping, and the child ending when its parent is killed."""

from __future__ import annotations

import errno
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from llm_council.errors import ConfigError, MissingDependencyError, ProviderError
from llm_council.providers import local_server
from llm_council.providers.local_server import READY_TIMEOUT_ENV, LocalModel, LocalServer

#: how long a stand-in server may take to answer: only a hang-catcher (it takes well under a
#: second idle; a cold Python start on a loaded machine can take several)
READY_S = 120


class StandInServer(LocalServer):
    """``python -m http.server`` over a directory: ready once it serves ``/v1/models``."""

    server_module = "http.server"

    def __init__(
        self, directory: Path, extra: list[str] | None = None, port: int | None = None
    ) -> None:
        super().__init__(directory / "model.gguf", n_ctx=512, port=port)
        self.directory = directory
        self.extra = extra or []

    def server_arguments(self) -> list[str]:
        return [
            "--bind",
            "127.0.0.1",
            "--directory",
            str(self.directory),
            *self.extra,
            str(self.port),
        ]


def _serving_dir(tmp_path: Path, ready: bool = True) -> Path:
    if ready:
        (tmp_path / "v1").mkdir()
        (tmp_path / "v1" / "models").write_text('{"data": []}')
    return tmp_path


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    status = Path(f"/proc/{pid}/stat")
    return not (status.exists() and status.read_text().split(")")[-1].split()[0] == "Z")


def test_a_server_is_started_once_waited_for_and_stopped(tmp_path):
    server = StandInServer(_serving_dir(tmp_path))
    try:
        server.ensure_running(timeout_s=READY_S)
        pid = server._process.pid
        server.ensure_running(timeout_s=READY_S)  # already running: not started again
        assert server._process.pid == pid and server.running
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
            assert response.status == 200
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    finally:
        server.stop()
    assert not server.running and not _alive(pid)


def test_a_started_server_is_not_ready_until_it_answers(tmp_path):
    """Members sharing a server call it only once it is ``ready``: a running process whose
    port is not yet answering made a second member's first call fail (connection refused)."""
    directory = _serving_dir(tmp_path, ready=False)
    server = StandInServer(directory)
    starter = threading.Thread(target=server.ensure_running, kwargs={"timeout_s": READY_S})
    starter.start()
    try:
        deadline = time.monotonic() + READY_S
        while not server.running and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.running and not server.ready  # started, still waiting for /v1/models
        (directory / "v1").mkdir()
        (directory / "v1" / "models").write_text('{"data": []}')
        starter.join(READY_S)
        assert server.ready
    finally:
        starter.join(READY_S)
        server.stop()
    assert not server.ready


def test_a_server_that_exits_is_one_error_with_its_output_and_is_not_restarted(tmp_path):
    server = StandInServer(_serving_dir(tmp_path), extra=["--no-such-flag"])
    with pytest.raises(
        ProviderError, match=r"exited with code 2 before it was ready: .*--no-such-flag"
    ):
        server.ensure_running(timeout_s=READY_S)
    with pytest.raises(ProviderError, match="exited with code 2"):
        server.ensure_running(timeout_s=READY_S)
    assert server._process is None


def test_a_server_that_never_answers_is_given_up_after_the_wait_and_ended(tmp_path):
    server = StandInServer(_serving_dir(tmp_path, ready=False))  # /v1/models is a 404
    started = time.monotonic()
    with pytest.raises(ProviderError, match=rf"127.0.0.1:{server.port} was not ready within 1 s"):
        server.ensure_running(timeout_s=1)
    assert time.monotonic() - started < 15
    assert not server.running


def test_the_server_ends_when_its_parent_is_killed(tmp_path):
    directory = _serving_dir(tmp_path)
    parent_code = f"""
import sys, time
sys.path[:0] = {[str(Path(__file__).parent), *sys.path]!r}
from test_local_server import StandInServer
from pathlib import Path
server = StandInServer(Path({str(directory)!r}))
server.ensure_running(timeout_s={READY_S})
print(server._process.pid, flush=True)
time.sleep(120)
"""
    parent = subprocess.Popen(
        [sys.executable, "-c", parent_code], stdout=subprocess.PIPE, text=True
    )
    try:
        child_pid = int(parent.stdout.readline())
        assert _alive(child_pid)
        parent.send_signal(signal.SIGKILL)  # no atexit, no cleanup: only the watchdog
        parent.wait(60)
        deadline = time.monotonic() + 60  # the watchdog's reaction, on a loaded machine too
        while _alive(child_pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child_pid)
    finally:
        parent.kill()
        parent.wait(60)


def test_a_model_whose_wheel_is_missing_names_the_install_command(monkeypatch):
    missing = LocalModel("llm-council-no-such-model-wheel", ".gguf", n_ctx=512)
    with pytest.raises(
        MissingDependencyError,
        match=re.escape("pip install -e '.[local]' (in the llm-council checkout)"),
    ):
        local_server.model_file(missing)


@pytest.mark.parametrize("value", ["soon", "0", "-5", "inf", "nan"])
def test_a_bad_ready_timeout_is_a_config_error_quoting_it(monkeypatch, value):
    monkeypatch.setenv(READY_TIMEOUT_ENV, value)
    with pytest.raises(ConfigError, match=rf"{READY_TIMEOUT_ENV} must be .* got '{value}'"):
        local_server.ready_timeout_s()


def test_the_ready_timeout_can_be_raised_for_a_slow_machine(monkeypatch):
    monkeypatch.setenv(READY_TIMEOUT_ENV, "240")
    assert local_server.ready_timeout_s() == 240.0


def _take(port: int) -> socket.socket | None:
    """A fake other process's server: bind 127.0.0.1:port as uvicorn does (with
    ``SO_REUSEADDR``) and listen; the socket, or None when the port could not be taken."""
    thief = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    thief.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        thief.bind(("127.0.0.1", port))
    except OSError as error:
        thief.close()
        assert error.errno == errno.EADDRINUSE
        return None
    thief.listen()
    return thief


def test_a_probed_free_port_can_be_taken_before_it_is_used():
    """The race the reservation closes: a port probed free and closed is anyone's."""
    thief = _take(local_server.free_loopback_port())
    assert thief is not None
    thief.close()


def test_the_port_is_held_from_construction_so_another_process_cannot_take_it(tmp_path):
    """A fake that keeps trying to take the server's port, from the moment the port is
    known until the server answers: it never gets it, and the server that answers is ours
    (it serves this test's directory)."""
    directory = _serving_dir(tmp_path)
    (directory / "v1" / "models").write_text('{"data": [{"id": "ours"}]}')
    server = StandInServer(directory)
    taken: list[socket.socket] = []
    done = threading.Event()

    def keep_trying() -> None:
        while not done.is_set():
            thief = _take(server.port)
            if thief is not None:
                taken.append(thief)
                return
            time.sleep(0.005)

    thief_thread = threading.Thread(target=keep_trying)
    thief_thread.start()
    try:
        time.sleep(0.1)  # the window the probe used to leave open
        server.ensure_running(timeout_s=READY_S)
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
            assert b'"ours"' in response.read()
    finally:
        done.set()
        thief_thread.join(10)
        for thief in taken:
            thief.close()
        server.stop()
    assert taken == []


def test_the_same_port_is_reserved_again_after_a_stop(tmp_path):
    """Even while the stopped server's connections are in TIME_WAIT (``http.server``
    closes each connection itself, so the server's side of it waits there)."""
    server = StandInServer(_serving_dir(tmp_path))
    port = server.port
    try:
        server.ensure_running(timeout_s=READY_S)
        with urllib.request.urlopen(f"{server.base_url}/models", timeout=5) as response:
            assert response.status == 200
        server.stop()
        server.ensure_running(timeout_s=READY_S)
        assert server.port == port and server.ready
    finally:
        server.stop()


def test_a_port_taken_while_stopped_or_given_explicitly_is_one_clear_error(tmp_path):
    directory = _serving_dir(tmp_path)
    server = StandInServer(directory)
    server.stop()  # never started: the reservation is given back
    thief = _take(server.port)
    assert thief is not None
    try:
        message = rf"port 127.0.0.1:{server.port} is in use by another process"
        with pytest.raises(ProviderError, match=message):
            server.ensure_running(timeout_s=READY_S)
        explicit = StandInServer(directory, port=server.port)
        with pytest.raises(ProviderError, match=message):
            explicit.ensure_running(timeout_s=READY_S)
        assert not explicit.running
    finally:
        thief.close()
    server.ensure_running(timeout_s=READY_S)  # free again: it starts
    try:
        assert server.ready
    finally:
        server.stop()
