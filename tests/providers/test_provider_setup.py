"""Shared provider set-up: SDK import hints, local-server detection, option checks."""

from __future__ import annotations

import sys

import pytest

from llm_council.errors import ConfigError, MissingDependencyError
from llm_council.providers.provider_setup import import_sdk, is_local_url
from llm_council.providers.registry import create_provider


def test_missing_sdk_gives_the_install_command():
    with pytest.raises(MissingDependencyError) as caught:
        import_sdk("no_such_vendor_sdk", "no-such-vendor-sdk", "vendorx")
    assert str(caught.value) == (
        "provider 'vendorx' needs the 'no-such-vendor-sdk' package: "
        "pip install 'no-such-vendor-sdk'"
    )
    assert isinstance(caught.value, ConfigError)


@pytest.mark.parametrize(
    ("spec", "module", "package"),
    [
        ("openai:gpt-4o", "openai", "openai"),
        ("anthropic:claude-sonnet-4-6", "anthropic", "anthropic"),
        ("google:gemini-2.5-pro", "google.genai", "google-genai"),
    ],
)
def test_uninstalled_vendor_sdk_fails_only_its_provider(monkeypatch, spec, module, package):
    monkeypatch.setitem(sys.modules, module, None)  # makes ``import module`` fail
    with pytest.raises(MissingDependencyError, match=f"pip install '{package}'"):
        create_provider(spec)


@pytest.mark.parametrize(
    ("url", "local"),
    [
        ("http://localhost:11434/v1", True),
        ("http://127.0.0.1:8000/v1", True),
        ("http://[::1]:8000/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://10.0.0.5/v1", True),
        ("http://gpu-box.local:8000/v1", True),
        ("http://host.docker.internal:11434/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://api.together.example/v1", False),
        ("https://8.8.8.8/v1", False),
        ("not a url", False),
    ],
)
def test_is_local_url(url, local):
    assert is_local_url(url) is local
