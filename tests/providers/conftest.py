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
    """What the SDK sent; header names are lower-cased."""

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
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, *bodies: Any) -> None:
        """Queue 200 replies with these bodies (dicts sent as JSON, bytes as they are)."""
        for body in bodies:
            self.respond(200, body)

    def respond(
        self, status: int, body: Any, *, headers: dict[str, str] | None = None, delay_s: float = 0.0
    ) -> None:
        """Queue one reply; ``delay_s`` makes the server hang before answering."""
        with self._lock:
            self.replies.append(ScriptedReply(status, body, headers or {}, delay_s))

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
                    ReceivedRequest(
                        "POST", self.path, {k.lower(): v for k, v in self.headers.items()}, parsed
                    )
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


@dataclass(frozen=True)
class VendorCase:
    """How one vendor's API looks on the wire, so one test can exercise all three SDKs."""

    prefix: str
    model_name: str
    key_envs: tuple[str, ...]
    path_suffix: str  # the end of the path the SDK posts to

    def base_url(self, server_url: str) -> str:
        return f"{server_url}/v1" if self.prefix == "openai" else server_url

    def success_body(self, text: str, model: str) -> dict[str, Any]:
        if self.prefix == "openai":
            return {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
            }
        if self.prefix == "anthropic":
            return {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 11, "output_tokens": 3},
            }
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 11,
                "candidatesTokenCount": 3,
                "totalTokenCount": 14,
            },
            "modelVersion": model,
        }

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        if self.prefix == "openai":
            return {"error": {"message": message, "type": "server_error", "code": None}}
        if self.prefix == "anthropic":
            return {"type": "error", "error": {"type": "api_error", "message": message}}
        return {"error": {"code": status, "message": message, "status": "UNAVAILABLE"}}


VENDOR_CASES = (
    VendorCase("openai", "gpt-4o", ("OPENAI_API_KEY",), "/v1/chat/completions"),
    VendorCase("anthropic", "claude-sonnet-4-6", ("ANTHROPIC_API_KEY",), "/v1/messages"),
    VendorCase(
        "google", "gemini-2.5-pro", ("GOOGLE_API_KEY", "GEMINI_API_KEY"), ":generateContent"
    ),
)


@pytest.fixture(params=VENDOR_CASES, ids=[case.prefix for case in VENDOR_CASES])
def vendor(request: pytest.FixtureRequest, no_vendor_env: pytest.MonkeyPatch) -> VendorCase:
    """Each vendor in turn, with its key env var set to the canary key."""
    case: VendorCase = request.param
    no_vendor_env.setenv(case.key_envs[0], CANARY_KEY)
    return case


@pytest.fixture
def canary_key() -> str:
    return CANARY_KEY
