"""A loopback fake of the OpenAI chat-completions API that can misbehave on cue.

The council's members are real ``openai:`` providers (the official SDK, its HTTP client,
its parsing and its exceptions) pointed at this server through ``base_url``. Each member
asks for its own model name, so faults are scripted per member: a queue of scripted
replies per model is served first, then the server behaves like a sensible model
(answers, JSON reviews naming the labels it was shown, a synthesis). Every request is
counted per model, so tests can compare provider calls with the attempts the council
reports.
"""

from __future__ import annotations

import re
import threading
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from fakes.loopback_http import (
    LoopbackJsonServer,
    ReceivedRequest,
    Reply,
    openai_completion_body,
    sensible_reply,
)
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.providers.calling import RetryPolicy

SENSIBLE = Reply(status=0)  # in a script: "behave normally for this request"
ReplySpec = Mapping[str, Any] | str


def reply_from_spec(spec: ReplySpec, model: str) -> Reply:
    """``"sensible"``, or ``{"status", "body" | "text", "headers", "delay_s"}`` (test tables)."""
    if spec == "sensible":
        return SENSIBLE
    assert isinstance(spec, Mapping)
    body = openai_completion_body(spec["text"], model) if "text" in spec else spec.get("body")
    return Reply(
        spec.get("status", 200), body, dict(spec.get("headers", {})), spec.get("delay_s", 0.0)
    )


def _model_in_path(path: str) -> str:
    """``/v1beta/models/gemini-x:generateContent`` -> ``gemini-x``."""
    match = re.search(r"/models/([^/:]+):", path)
    return match.group(1) if match else "?"


class FakeOpenAIServer(LoopbackJsonServer):
    """Scripted faults per model, then sensible replies; counts requests per model."""

    def __init__(self) -> None:
        super().__init__()
        self.scripts: dict[str, deque[Reply]] = defaultdict(deque)
        self.requests: Counter[str] = Counter()
        self._lock = threading.Lock()

    @property
    def root_url(self) -> str:
        return self.url

    @property
    def base_url(self) -> str:
        """The OpenAI SDK's base URL (the Anthropic SDK takes :attr:`root_url`)."""
        return f"{self.url}/v1"

    def script(self, model: str, *replies: ReplySpec) -> None:
        """Queue the next replies for ``model`` (see :func:`reply_from_spec`)."""
        with self._lock:
            self.scripts[model].extend(reply_from_spec(spec, model) for spec in replies)

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        # OpenAI and Anthropic name the model in the body, Google in the path
        model = str(body.get("model") or _model_in_path(request.path))
        return self._next(model, body.get("messages", []))

    def _next(self, model: str, messages: list[dict[str, str]]) -> Reply:
        with self._lock:
            self.requests[model] += 1
            if self.scripts[model] and self.scripts[model][0] != SENSIBLE:
                return self.scripts[model].popleft()
            if self.scripts[model]:
                self.scripts[model].popleft()
        return Reply(200, openai_completion_body(sensible_reply(model, messages), model))


def _serve() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer().running() as server:
        yield server


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAIServer]:
    yield from _serve()


@pytest.fixture(scope="module")
def module_openai_fake() -> Iterator[FakeOpenAIServer]:
    """One fake for a module whose expensive set-up (CLI subprocesses) is shared."""
    yield from _serve()


# 2 s per attempt: a loopback call takes milliseconds, but a first SDK call on a loaded
# machine can take a few hundred (0.5 s let a slow healthy call be retried, miscounting attempts)
FAST_RETRY = RetryPolicy(max_attempts=3, timeout_s=2.0, initial_backoff_s=0.01, max_backoff_s=0.02)


@pytest.fixture
def openai_council(openai_fake: FakeOpenAIServer) -> Callable[..., CouncilConfig]:
    """``openai_council("m1", "m2", "m3", chairman="chair")``: members on the loopback fake."""

    def build(
        *names: str, chairman: str = "chair", retry: RetryPolicy = FAST_RETRY
    ) -> CouncilConfig:
        options = {"base_url": openai_fake.base_url}
        return CouncilConfig(
            members=tuple(
                CouncilMember(name=n, spec=f"openai:{n}", options=options) for n in names
            ),
            chairman=CouncilMember(name=chairman, spec=f"openai:{chairman}", options=options),
            retry=retry,
        )

    return build


@pytest.fixture(autouse=True)
def _restore_logging_config() -> Iterator[None]:
    """An in-process CLI run reconfigures structlog (bound to pytest's captured stderr) and
    the root logger; put both back after the test."""
    import logging

    import structlog

    saved = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**saved)
    root.handlers[:] = handlers
    root.setLevel(level)
