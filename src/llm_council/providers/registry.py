"""Turn a spec like ``openai:gpt-4o`` into a :class:`Provider`.

Built-in providers are imported lazily (an SDK is only imported when a member uses it).
Third parties and tests add providers with :func:`register_provider` or through the
``llm_council.providers`` entry-point group; fakes go through this same registry so tests
walk the real path.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from typing import Any

from llm_council.errors import ConfigError
from llm_council.providers.base import Provider

ProviderFactory = Callable[[str, Mapping[str, Any]], Provider]

_BUILTIN_FACTORIES: dict[str, str] = {
    "openai": "llm_council.providers.openai_sdk:OpenAIProvider",
    "anthropic": "llm_council.providers.anthropic_sdk:AnthropicProvider",
    "google": "llm_council.providers.google_sdk:GoogleProvider",
    "simulated": "llm_council.providers.simulated:SimulatedProvider",
}

_registered: dict[str, ProviderFactory] = {}


def register_provider(prefix: str, factory: ProviderFactory) -> None:
    """Register ``factory(model_name, options) -> Provider`` under ``prefix``."""
    _registered[prefix] = factory


def unregister_provider(prefix: str) -> None:
    _registered.pop(prefix, None)


def known_prefixes() -> list[str]:
    names = set(_BUILTIN_FACTORIES) | set(_registered)
    names |= {ep.name for ep in entry_points(group="llm_council.providers")}
    return sorted(names)


def split_spec(spec: str) -> tuple[str, str]:
    """``"openai:gpt-4o"`` -> ``("openai", "gpt-4o")``; a bad spec is a :class:`ConfigError`."""
    prefix, sep, model_name = spec.partition(":")
    if not sep or not prefix or not model_name:
        raise ConfigError(
            f"invalid model spec '{spec}': expected PROVIDER:MODEL, e.g. 'openai:gpt-4o' "
            "or 'simulated:harsh'"
        )
    return prefix.strip(), model_name.strip()


def _resolve_factory(prefix: str, spec: str) -> ProviderFactory:
    if prefix in _registered:
        return _registered[prefix]
    target = _BUILTIN_FACTORIES.get(prefix)
    if target is None:
        for ep in entry_points(group="llm_council.providers"):
            if ep.name == prefix:
                return ep.load()  # type: ignore[no-any-return]
        raise ConfigError(
            f"unknown provider '{prefix}' in spec '{spec}'; known: {', '.join(known_prefixes())}"
        )
    module_name, _, class_name = target.partition(":")
    module = importlib.import_module(module_name)
    provider_class = getattr(module, class_name)
    return lambda model_name, options: provider_class(model_name, **dict(options))  # type: ignore[no-any-return]


def create_provider(spec: str, options: Mapping[str, Any] | None = None) -> Provider:
    """Build the provider for ``spec`` with per-member ``options`` (base_url, api_key_env, ...)."""
    prefix, model_name = split_spec(spec)
    factory = _resolve_factory(prefix, spec)
    return factory(model_name, options or {})
