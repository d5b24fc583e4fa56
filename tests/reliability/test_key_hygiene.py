"""API keys with control characters, and redaction of every form of a configured secret.

Issue 10, item 14: an ``OPENAI_API_KEY`` holding a newline made the HTTP client fail with
"Illegal header value b'Bearer sk-...\\n...'", which quoted the key (escaped, so the
pattern-free substring redaction missed it) into ``metadata["degraded"]``, the logs and
the final error. Now such a key is a ``ConfigError`` before any request, naming the
variable and never the value, and redaction covers the escaped, collapsed and split forms
of every configured secret, whatever variable held it.
"""

from __future__ import annotations

import asyncio
import io
import json
import secrets
from contextlib import redirect_stderr
from typing import Any

import pytest
import structlog

from llm_council import run_full_council
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import ConfigError, CouncilError, ProviderError
from llm_council.infra.log_setup import configure_logging, redact
from llm_council.providers.registry import create_provider

HEAD = f"sk-canary-{secrets.token_hex(6)}"
TAIL = f"tail{secrets.token_hex(6)}"


def _fragments_absent(text: str, *values: str) -> None:
    for value in values:
        assert value not in text


def _openai_council(fake: Any, key_env: str = "OPENAI_API_KEY") -> CouncilConfig:
    options = {"base_url": fake.base_url, "api_key_env": key_env}
    return CouncilConfig(
        members=(
            CouncilMember(name="m1", spec="openai:m1", options=options),
            CouncilMember(name="m2", spec="simulated:unbiased"),
        ),
        chairman=CouncilMember(name="chair", spec="simulated:balanced"),
    )


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        (f"{HEAD}\n{TAIL}", "contains a control character (U+000A)"),
        (f"{HEAD}\r\n{TAIL}", "contains a control character (U+000D)"),
        (f"{HEAD}\x1b{TAIL}", "contains a control character (U+001B)"),
        (f"{HEAD}\u200b{TAIL}", "contains a control character (U+200B)"),
        (f"{HEAD} {TAIL}", "contains whitespace (U+0020) inside the key"),
        (
            f"{HEAD}\u00e9{TAIL}",
            "contains a non-ASCII character (U+00E9); HTTP headers carry ASCII",
        ),
    ],
)
def test_a_key_that_cannot_be_a_header_is_a_config_error_without_the_key(
    key: str, problem: str, openai_fake: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", key)
    with pytest.raises(ConfigError) as caught:
        asyncio.run(run_full_council("q", config=_openai_council(openai_fake), middleware=[]))
    message = str(caught.value)
    assert message == (
        f"member 'm1' (openai:m1): OPENAI_API_KEY: the API key {problem}; the value is not shown"
    )
    _fragments_absent(message, HEAD, TAIL)
    assert openai_fake.requests["m1"] == 0  # refused before any request


@pytest.mark.parametrize("padding", ["\n", "\r\n", " ", "\t\n"])
def test_whitespace_around_a_key_is_stripped_not_refused(
    padding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``OPENAI_API_KEY=$(cat key.txt)`` keeps the file's final newline: that key is fine."""
    monkeypatch.setenv("OPENAI_API_KEY", f"{padding}{HEAD}{TAIL}{padding}")
    asyncio.run(create_provider("openai:m", {"base_url": "http://127.0.0.1:9/v1"}).aclose())


def test_a_custom_key_variable_is_named_and_its_key_redacted_in_logs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MY_PROXY_KEY", f"{HEAD}\t{TAIL}")
    with pytest.raises(ConfigError, match=r"^MY_PROXY_KEY: the API key contains a control"):
        create_provider("openai:m", {"api_key_env": "MY_PROXY_KEY"})
    # a valid key from a variable outside the known list is redacted once configured
    good = f"proxy-{secrets.token_hex(8)}"
    monkeypatch.setenv("MY_PROXY_KEY", good)
    asyncio.run(create_provider("openai:m", {"api_key_env": "MY_PROXY_KEY"}).aclose())
    err = io.StringIO()
    with redirect_stderr(err):
        configure_logging(json_logs=True, level="INFO", standard_logging=False)
        structlog.get_logger("t").warning("echo", detail=f"upstream said {good!r}")
    line = json.loads(err.getvalue().strip().splitlines()[-1])
    assert good not in err.getvalue() and line["detail"] == "upstream said '[redacted]'"


@pytest.mark.parametrize(
    "shown_as",
    [
        "Illegal header value b'Bearer {escaped}'",  # httpx / h11
        'header {{"authorization": "Bearer {json}"}}',  # a JSON dump of the headers
        "Bearer {collapsed} rejected",  # whitespace collapsed by a one-line message
        "key {head} (truncated)",  # only the part before the newline
    ],
)
def test_redaction_covers_every_form_of_a_secret(shown_as: str) -> None:
    secret = f"{HEAD}\n{TAIL}"
    text = shown_as.format(
        escaped=repr(secret.encode())[2:-1],
        json=json.dumps(secret)[1:-1],
        collapsed=" ".join(secret.split()),
        head=HEAD,
    )
    redacted = redact(text, [secret])
    _fragments_absent(redacted, HEAD, TAIL)
    assert "[redacted]" in redacted


def test_degraded_and_the_final_error_redact_an_escaped_secret(
    scripted_provider: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secret no validation guards (the hash secret) echoed escaped by a failing provider."""
    secret = f"{HEAD}\n{TAIL}"
    monkeypatch.setenv("LLM_COUNCIL_HASH_SECRET", secret)

    def leak(request: Any, n: int) -> str:
        raise ProviderError(f"Illegal header value b'{repr(secret.encode())[2:-1]}'")

    scripted_provider.scripts = {
        "a": {"answer": leak, "review": lambda r, n: '{"ranking": ["Response A"]}'},
        "b": {"answer": lambda r, n: "fine", "review": lambda r, n: '{"ranking": ["Response A"]}'},
        "chair": {"synthesize": leak},
    }
    config = CouncilConfig(
        members=(CouncilMember(name="a", spec="fake:a"), CouncilMember(name="b", spec="fake:b")),
        chairman=CouncilMember(name="chair", spec="fake:chair"),
    )
    result = asyncio.run(run_full_council("q", config=config, middleware=[]))
    shown = json.dumps(result.to_json_dict())
    _fragments_absent(shown, HEAD, TAIL)
    assert [f["stage"] for f in result.metadata["degraded"]] == ["answer", "synthesize"]
    assert all("[redacted]" in f["error"] for f in result.metadata["degraded"])

    scripted_provider.scripts["b"]["answer"] = leak
    with pytest.raises(CouncilError) as caught:
        asyncio.run(run_full_council("q", config=config, middleware=[]))
    _fragments_absent(str(caught.value), HEAD, TAIL)
    assert str(caught.value).count("[redacted]") == 2
