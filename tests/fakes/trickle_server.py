"""A loopback OpenAI-compatible server that can trickle a reply one byte at a time.

Per-read timeouts never fire against a server that keeps sending a byte every interval,
so only a wall-clock deadline can stop such a call. Models named in ``trickle_models``
get a valid status line and headers at once, then their body one byte per ``interval_s``;
every other model gets a sensible reply immediately (an answer, a JSON review naming the
labels it was shown, or a synthesis).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from fakes.loopback_http import openai_completion_body, sensible_reply


class TrickleServer:
    """``with TrickleServer({"slow"}, interval_s=1.0).running() as server: server.base_url``."""

    def __init__(self, trickle_models: set[str], interval_s: float = 1.0) -> None:
        self.trickle_models = trickle_models
        self.interval_s = interval_s
        self.stopping = threading.Event()
        self.bytes_trickled = 0
        self.requests: list[str] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @contextmanager
    def running(self) -> Iterator[TrickleServer]:
        self._thread.start()
        try:
            yield self
        finally:
            self.stopping.set()
            self._server.shutdown()
            self._server.server_close()

    def _trickle(self, wfile: Any, body: bytes) -> None:
        for index in range(len(body)):
            if self.stopping.wait(self.interval_s):
                return
            wfile.write(body[index : index + 1])
            wfile.flush()
            with self._lock:
                self.bytes_trickled += 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                request = json.loads(self.rfile.read(length) or b"{}")
                model = str(request.get("model"))
                with server._lock:
                    server.requests.append(model)
                text = sensible_reply(model, request.get("messages", []))
                body = json.dumps(openai_completion_body(text, model)).encode()
                try:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if model in server.trickle_models:
                        server._trickle(self.wfile, body)
                    else:
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up, as the test intends

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

        return Handler
