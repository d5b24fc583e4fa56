"""A loopback HTTP server that plays a vendor's JSON API, for running the real SDKs offline.

The installed SDKs (openai, anthropic, google-genai) send through ``httpx2``, which respx
cannot intercept, so tests point an SDK's ``base_url`` at a server on 127.0.0.1 instead:
the whole SDK stack (request building, HTTP, parsing, exceptions) runs for real.
Subclasses decide each reply in :meth:`LoopbackJsonServer.choose_reply`; this module owns
the server's life cycle, request parsing, hanging on cue and writing the reply.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from llm_council.prompts import REVIEW_SYSTEM, extract_candidate_blocks


@dataclass(frozen=True)
class Reply:
    """One HTTP reply: status, body (sent as JSON, bytes as they are), headers, delay."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass(frozen=True)
class ReceivedRequest:
    """What the SDK sent; header names lower-cased, body parsed as JSON when it is JSON."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    client_port: int = 0  # the client's TCP port: equal ports mean a reused connection


def openai_completion_body(text: str, model: str) -> dict[str, Any]:
    """A chat.completions response as the OpenAI API returns it."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


class _BackloggedServer(ThreadingHTTPServer):
    # socketserver listens with a backlog of 5: a council opening 13 connections at once
    # overflows it, and the dropped SYNs are retried by the kernel after a whole second
    # (a real server's backlog is 128 or more)
    request_queue_size = 128


class LoopbackJsonServer:
    """A threaded HTTP/1.1 server on 127.0.0.1 whose replies a subclass chooses."""

    def __init__(self) -> None:
        self.stopping = threading.Event()  # set on stop: releases handlers that "hang"
        self._server = _BackloggedServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.02,), daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        raise NotImplementedError

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    @contextmanager
    def running(self) -> Iterator[Self]:
        self.start()
        try:
            yield self
        finally:
            self.stop()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in two writes; with Nagle on, the body waits for the
            # client's delayed ACK (40 ms on Linux) on a kept-alive connection. Real API
            # servers set TCP_NODELAY, so the fake does too.
            disable_nagle_algorithm = True

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    parsed: Any = json.loads(raw) if raw else None
                except ValueError:
                    parsed = raw
                headers = {name.lower(): value for name, value in self.headers.items()}
                port = int(self.client_address[1])
                received = ReceivedRequest("POST", self.path, headers, parsed, port)
                reply = fake.choose_reply(received)
                if reply.delay_s and fake.stopping.wait(reply.delay_s):
                    return  # the test is over; the client is gone
                body = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    if not any(name.lower() == "content-type" for name in reply.headers):
                        self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and closed the socket, as the test intended

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass  # keep test output clean

        return Handler


def sensible_reply(model: str, messages: list[dict[str, str]]) -> str:
    """What a well-behaved model says: an answer, a JSON review, or a synthesis."""
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    prompt = "\n".join(m["content"] for m in messages if m["role"] == "user")
    if system == REVIEW_SYSTEM:
        labels = [label for label, _ in extract_candidate_blocks(prompt)]
        scores = {label: 9 - index for index, label in enumerate(labels)}
        return json.dumps({"ranking": labels, "scores": scores, "rationale": "in order"})
    if "As chairman" in prompt:
        return f"Synthesis by {model}."
    return f"Answer by {model}: use a cache and measure p99."
