"""A loopback HTTP server that plays a vendor's API, for testing the real SDKs offline.

The installed SDKs (openai, anthropic, google-genai) send through ``httpx2``, which respx
cannot intercept, so each test points the SDK's ``base_url`` at this server instead: the
whole SDK stack (request building, HTTP, response parsing, error raising) runs for real.
A test queues scripted replies; the server records every request it received.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

CANARY_KEY = "sk-canary-XYZ-0123456789"


@dataclass(frozen=True)
class ScriptedReply:
    """One response the fake sends: status, JSON (or raw bytes) body, headers, delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class ReceivedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeVendorServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 answering from a queue of scripted replies."""

    def __init__(self) -> None:
        self.replies: deque[ScriptedReply] = deque()
        self.requests: list[ReceivedRequest] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, *replies: ScriptedReply) -> None:
        with self._lock:
            self.replies.extend(replies)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()  # releases handlers that are "hanging"
        self._server.shutdown()
        self._server.server_close()

    def _next_reply(self, request: ReceivedRequest) -> ScriptedReply:
        with self._lock:
            self.requests.append(request)
            if self.replies:
                return self.replies.popleft()
        return ScriptedReply(status=599, body={"error": {"message": "fake: no scripted reply"}})

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    parsed: Any = json.loads(raw) if raw else None
                except ValueError:
                    parsed = raw
                reply = fake._next_reply(
                    ReceivedRequest("POST", self.path, dict(self.headers.items()), parsed)
                )
                if reply.delay_s and fake.stopping.wait(reply.delay_s):
                    return  # the test is over; the client is gone
                payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body)
                payload_bytes = payload if isinstance(payload, bytes) else payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload_bytes)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload_bytes)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and closed the socket, as intended

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # keep test output clean

        return Handler


@pytest.fixture
def fake_vendor() -> Iterator[FakeVendorServer]:
    server = FakeVendorServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def no_vendor_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """Remove every vendor variable so a developer's real keys never leak into a test."""
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "GOOGLE_GENAI_USE_VERTEXAI",
        "GOOGLE_CLOUD_PROJECT",
        "GOOGLE_GEMINI_BASE_URL",
    ):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch
