"""Spec parsing and provider lookup."""

from __future__ import annotations

import pytest

from llm_council.errors import ConfigError
from llm_council.providers.base import Completion, CompletionRequest, Provider
from llm_council.providers.registry import (
    create_provider,
    known_prefixes,
    register_provider,
    split_spec,
    unregister_provider,
)


class EchoProvider(Provider):
    provider_name = "echo"

    def __init__(self, model_name: str, options: dict[str, object]) -> None:
        super().__init__(model_name)
        self.options = options

    async def complete(self, request: CompletionRequest) -> Completion:
        return Completion(text=request.prompt_text, model=self.model_name)


def test_unknown_prefix_is_quoted_with_the_known_ones():
    with pytest.raises(ConfigError) as caught:
        create_provider("opnai:gpt-4o")
    message = str(caught.value)
    assert "unknown provider 'opnai'" in message
    assert "'opnai:gpt-4o'" in message
    for prefix in ("openai", "anthropic", "google", "simulated"):
        assert prefix in message


@pytest.mark.parametrize("spec", ["gpt-4o", "openai:", ":gpt-4o", ""])
def test_spec_without_prefix_and_model_is_rejected(spec):
    with pytest.raises(ConfigError, match=f"invalid model spec '{spec}'.*PROVIDER:MODEL"):
        split_spec(spec)


def test_model_names_may_contain_colons():
    assert split_spec("openai:llama3.2:3b") == ("openai", "llama3.2:3b")


def test_registered_factory_gets_model_and_options():
    register_provider("echo", lambda model, options: EchoProvider(model, dict(options)))
    try:
        provider = create_provider("echo:parrot", {"volume": 3})
        assert isinstance(provider, EchoProvider)
        assert (provider.model_name, provider.options, provider.spec) == (
            "parrot",
            {"volume": 3},
            "echo:parrot",
        )
        assert "echo" in known_prefixes()
    finally:
        unregister_provider("echo")
    with pytest.raises(ConfigError, match="unknown provider 'echo'"):
        create_provider("echo:parrot")


def test_builtin_vendor_prefixes_resolve_to_their_sdk_modules(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-registry-000000")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-registry-000000")
    monkeypatch.setenv("GOOGLE_API_KEY", "sk-test-registry-000000")
    for spec, class_name in [
        ("openai:gpt-4o", "OpenAIProvider"),
        ("anthropic:claude-sonnet-4-6", "AnthropicProvider"),
        ("google:gemini-2.5-pro", "GoogleProvider"),
    ]:
        provider = create_provider(spec)
        assert type(provider).__name__ == class_name
        assert repr(provider) == f"<{class_name} {spec}>"  # no key in the repr
