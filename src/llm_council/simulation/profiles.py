"""Load the simulated members' profiles from ``simulated_members.toml``."""

from __future__ import annotations

import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llm_council.errors import ConfigError
from llm_council.infra.config_files import default_config_file
from llm_council.simulation.profile import SimulatedProfile


@lru_cache(maxsize=8)
def _load(path_text: str | None) -> dict[str, SimulatedProfile]:
    if path_text:
        source, shown_as = Path(path_text).read_text(encoding="utf-8"), path_text
    else:
        source, shown_as = (
            default_config_file("simulated_members.toml").read_text(encoding="utf-8"),
            "config/simulated_members.toml",
        )
    try:
        document = tomllib.loads(source)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{shown_as}: invalid TOML: {error}") from None
    profiles: dict[str, SimulatedProfile] = {}
    for name, fields in document.get("profiles", {}).items():
        profiles[name] = build_profile(fields, f"{shown_as}: [profiles.{name}]")
    return profiles


def build_profile(fields: dict[str, Any], shown_as: str) -> SimulatedProfile:
    try:
        return SimulatedProfile.model_validate(fields)
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(p) for p in first["loc"])
        raise ConfigError(
            f"{shown_as}: field '{field}': {first['msg']} (got {first.get('input')!r})"
        ) from None


def simulated_profiles() -> dict[str, SimulatedProfile]:
    """All profiles, from ``LLM_COUNCIL_SIMULATED_MEMBERS`` or the embedded file."""
    try:
        return _load(os.environ.get("LLM_COUNCIL_SIMULATED_MEMBERS") or None)
    except FileNotFoundError as error:
        raise ConfigError(f"simulated members file not found: {error.filename}") from None


def resolve_profile(name: str, overrides: dict[str, Any]) -> SimulatedProfile:
    """The profile called ``name`` (``custom`` = all defaults) with ``overrides`` applied."""
    profiles = simulated_profiles()
    if name == "custom":
        base = SimulatedProfile()
    elif name in profiles:
        base = profiles[name]
    else:
        raise ConfigError(
            f"unknown simulated member '{name}'; known: custom, {', '.join(sorted(profiles))}"
        )
    if not overrides:
        return base
    return build_profile({**base.model_dump(), **overrides}, f"options of simulated:{name}")
