"""Fixtures for the SDK tests: a loopback fake of each vendor's API (see
``fakes/loopback_http.py``) answering from a queue of scripted replies, and the three
vendors' wire formats so one test exercises all three SDKs."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from fakes.loopback_http import (
    LoopbackJsonServer,
    ReceivedRequest,
    Reply,
    openai_completion_body,
)

CANARY_KEY = "sk-canary-XYZ-0123456789"


class FakeVendorServer(LoopbackJsonServer):
    """Answers from a queue of scripted replies and records every request it received."""

    def __init__(self) -> None:
        super().__init__()
        self.replies: deque[Reply] = deque()
        self.requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()

    def reply(self, *bodies: Any) -> None:
        """Queue 200 replies with these bodies (dicts sent as JSON, bytes as they are)."""
        for body in bodies:
            self.respond(200, body)

    def respond(
        self, status: int, body: Any, *, headers: dict[str, str] | None = None, delay_s: float = 0.0
    ) -> None:
        """Queue one reply; ``delay_s`` makes the server hang before answering."""
        with self._lock:
            self.replies.append(Reply(status, body, headers or {}, delay_s))

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self.replies:
                return self.replies.popleft()
        return Reply(status=599, body={"error": {"message": "fake: no scripted reply"}})


@pytest.fixture
def fake_vendor() -> Iterator[FakeVendorServer]:
    with FakeVendorServer().running() as server:
        yield server


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
        "LLM_COUNCIL_HTTP_CLIENT",
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
    http_client: str | None = None  # LLM_COUNCIL_HTTP_CLIENT for this case (None: unset)

    @property
    def case_id(self) -> str:
        return self.prefix + (f"-{self.http_client}" if self.http_client else "")

    def base_url(self, server_url: str) -> str:
        return f"{server_url}/v1" if self.prefix == "openai" else server_url

    def success_body(self, text: str, model: str) -> dict[str, Any]:
        if self.prefix == "openai":
            return openai_completion_body(text, model)
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

    def structured_body(
        self, verdict: dict[str, Any], model: str, tool_name: str
    ) -> dict[str, Any]:
        """A 200 carrying ``verdict`` on the vendor's structured channel, as the API returns it.

        OpenAI and Google return the schema-conforming JSON as the message text; Anthropic
        returns a ``tool_use`` block whose ``input`` is the object (stop_reason ``tool_use``).
        """
        if self.prefix == "anthropic":
            return {
                "id": "msg_2",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": tool_name, "input": verdict}
                ],
                "stop_reason": "tool_use",
                "stop_sequence": None,
                "usage": {"input_tokens": 11, "output_tokens": 3},
            }
        return self.success_body(json.dumps(verdict), model)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        if self.prefix == "openai":
            return {"error": {"message": message, "type": "server_error", "code": None}}
        if self.prefix == "anthropic":
            return {"type": "error", "error": {"type": "api_error", "message": message}}
        return {"error": {"code": status, "message": message, "status": "UNAVAILABLE"}}


VENDOR_CASES = (
    # the SDKs' httpx client (a plain install's path when aiohttp is missing) ...
    VendorCase("openai", "gpt-4o", ("OPENAI_API_KEY",), "/v1/chat/completions", "httpx"),
    VendorCase("anthropic", "claude-sonnet-4-6", ("ANTHROPIC_API_KEY",), "/v1/messages", "httpx"),
    VendorCase(
        "google", "gemini-2.5-pro", ("GOOGLE_API_KEY", "GEMINI_API_KEY"), ":generateContent"
    ),
    # ... and the same behaviour through their aiohttp transport, the default whenever
    # aiohttp is installed (ADRs 0034, 0035)
    VendorCase("openai", "gpt-4o", ("OPENAI_API_KEY",), "/v1/chat/completions", "aiohttp"),
    VendorCase("anthropic", "claude-sonnet-4-6", ("ANTHROPIC_API_KEY",), "/v1/messages", "aiohttp"),
    # google-genai sends over aiohttp by itself whenever aiohttp is installed (as in .[dev]);
    # this case is a plain install's path, without it
    VendorCase(
        "google",
        "gemini-2.5-pro",
        ("GOOGLE_API_KEY", "GEMINI_API_KEY"),
        ":generateContent",
        "httpx",
    ),
)


@pytest.fixture(params=VENDOR_CASES, ids=[case.case_id for case in VENDOR_CASES])
def vendor(request: pytest.FixtureRequest, no_vendor_env: pytest.MonkeyPatch) -> VendorCase:
    """Each vendor (and HTTP client) in turn, with its key env var set to the canary key."""
    case: VendorCase = request.param
    no_vendor_env.setenv(case.key_envs[0], CANARY_KEY)
    if case.prefix == "google" and case.http_client == "httpx":
        from google.genai import _api_client

        no_vendor_env.setattr(_api_client, "has_aiohttp", False)  # the SDK's own switch
    elif case.http_client is not None:
        no_vendor_env.setenv("LLM_COUNCIL_HTTP_CLIENT", case.http_client)
    return case


@pytest.fixture
def canary_key() -> str:
    return CANARY_KEY
