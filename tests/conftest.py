"""Shared fixtures: a scripted fake provider registered through the real registry."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import structlog

import blas_kernels  # noqa: F401  (first: pins OpenBLAS's kernels before numpy loads)
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import ProviderError
from llm_council.providers.base import Completion, CompletionRequest, Provider
from llm_council.providers.registry import register_provider, unregister_provider

Script = Callable[[CompletionRequest, int], str]


class ScriptedProvider(Provider):
    """A fake model: ``scripts[model_name][task](request, call_number) -> text`` or raises."""

    provider_name = "fake"
    scripts: dict[str, dict[str, Script]] = {}
    calls: list[tuple[str, str]] = []

    async def complete(self, request: CompletionRequest) -> Completion:
        ScriptedProvider.calls.append((self.model_name, request.task))
        number = sum(
            1
            for name, task in ScriptedProvider.calls
            if name == self.model_name and task == request.task
        )
        script = self.scripts.get(self.model_name, {}).get(request.task)
        if script is None:
            raise ProviderError(
                f"fake:{self.model_name} has no script for {request.task}", provider="fake"
            )
        return Completion(text=script(request, number), model=f"fake:{self.model_name}")


@pytest.fixture
def scripted_provider() -> Iterator[type[ScriptedProvider]]:
    ScriptedProvider.scripts = {}
    ScriptedProvider.calls = []
    register_provider("fake", lambda name, options: ScriptedProvider(name))
    yield ScriptedProvider
    unregister_provider("fake")


def simulated_config(
    *members: tuple[str, str, dict[str, Any]],
    self_review: str = "exclude_at_aggregation",
    **fields: Any,
) -> CouncilConfig:
    """A council of simulated members: ``(name, profile, options)`` triples."""
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=n, spec=f"simulated:{p}", options=o) for n, p, o in members
        ),
        chairman=CouncilMember(name="chair", spec="simulated:balanced"),
        self_review=self_review,  # type: ignore[arg-type]
        **fields,
    )


@pytest.fixture(autouse=True)
def _default_structlog() -> Iterator[None]:
    """Each test starts from structlog's defaults: a CLI test configures a level filter
    (warning, the CLI's default) that would hide the info events a later test captures
    with ``structlog.testing.capture_logs``."""
    structlog.reset_defaults()
    yield
    structlog.reset_defaults()


@pytest.fixture(autouse=True)
def _isolated_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """No test sees the developer's keys or writes to the real bias store."""
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GOOGLE_API_KEY",
        "GEMINI_API_KEY",
        "LLM_COUNCIL_CONFIG",
        "LLM_COUNCIL_BIAS_AUDIT",
        "BIAS_AUDIT_ENABLED",
        "LLM_COUNCIL_HASH_SECRET",
        "LLM_COUNCIL_QUERY_HASH",
        "LLM_COUNCIL_LENGTH_CORRELATION_THRESHOLD",
        "LLM_COUNCIL_POSITION_VARIANCE_THRESHOLD",
        "LLM_COUNCIL_SIGNIFICANCE_LEVEL",
        "LLM_COUNCIL_BIAS_CHECK_PROBABILITY",
        "LLM_COUNCIL_SIMULATED_MEMBERS",
        "LLM_COUNCIL_SIMILARITY",
        "OPENAI_BASE_URL",
        "LLM_COUNCIL_SESSION_DEADLINE_S",
        "LLM_COUNCIL_MAX_ANSWER_CHARS",
        "LLM_COUNCIL_AGGREGATION",
        "LLM_COUNCIL_REVIEW_ORDERS",
        "LLM_COUNCIL_OTEL_CAPTURE_CONTENT",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
    ):
        monkeypatch.delenv(name, raising=False)
    for name in [name for name in os.environ if name.startswith("OTEL_")]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(
        "LLM_COUNCIL_BIAS_STORE", str(tmp_path_factory.mktemp("store") / "records.jsonl")
    )
    # summaries beside a store are sealed with a key (records/summary_seal.py): never the
    # developer's own key file
    monkeypatch.delenv("LLM_COUNCIL_SUMMARY_KEY", raising=False)
    monkeypatch.setenv(
        "LLM_COUNCIL_SUMMARY_KEY_FILE", str(tmp_path_factory.mktemp("keys") / "summary.key")
    )


CHROMIUM = "/usr/bin/chromium"
#: how long a browser test waits for the browser or a page (ms): only a hang-catcher
BROWSER_WAIT_MS = 180_000
# headless as root on a machine with no network beyond the package registries
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


@pytest.fixture
def chromium_path() -> str:
    """Debian's chromium for browser tests: skipped when absent, but a failure in CI.

    .ci/run installs chromium and sets LLM_COUNCIL_REQUIRE_BROWSER=1, so a browser test
    can never pass CI by being skipped.
    """
    if os.path.exists(CHROMIUM):
        return CHROMIUM
    if os.environ.get("LLM_COUNCIL_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests are required here but {CHROMIUM} is missing")
    pytest.skip(f"{CHROMIUM} not installed (apt-get install chromium)")


@pytest.fixture
def make_simulated_config() -> Callable[..., CouncilConfig]:
    """``make_simulated_config(("a", "unbiased", {}), ...)`` builds a simulated council."""
    return simulated_config


@pytest.fixture
def chromium_launch_options(chromium_path: str) -> dict[str, Any]:
    """Keyword arguments for Playwright's ``chromium.launch`` on Debian's chromium.

    The launch may take :data:`BROWSER_WAIT_MS` (Playwright's default is 30 s): a browser
    starting on a loaded 2-core machine is slow, not broken; the wait only catches a hang.
    """
    return {
        "executable_path": chromium_path,
        "args": list(CHROMIUM_ARGS),
        "headless": True,
        "timeout": BROWSER_WAIT_MS,
    }
