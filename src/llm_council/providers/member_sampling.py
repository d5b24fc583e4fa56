"""Per-member sampling options: what makes council members on one model differ.

Several members served by the same model (the local council, ADR 0041) are a council only
if they differ: each may have its own ``persona`` (put before every system message the
council sends it), ``temperature``, ``seed`` and ``max_tokens`` cap, and a
``review_max_tokens`` cap for its stage-2 reviews (default: ``max_tokens``), because a
grammar-constrained verdict needs more tokens than a short answer (ADR 0065). They are
options of the member, applied to each request before the provider translates it, so the
council's stages stay unaware of them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llm_council.errors import ConfigError
from llm_council.providers.base import CompletionRequest

SAMPLING_OPTIONS = ("persona", "temperature", "seed", "max_tokens", "review_max_tokens")
#: seeds are sent modulo this (llama.cpp and OpenAI take a 32-bit signed seed)
SEED_MODULUS = 2**31
MAX_PERSONA_CHARS = 2_000


@dataclass(frozen=True)
class MemberSampling:
    """A member's own sampling settings; ``None`` leaves the request's as they are."""

    persona: str | None = None
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    #: the cap of ``task == "review"`` requests; None: ``max_tokens``
    review_max_tokens: int | None = None

    @classmethod
    def from_options(cls, spec: str, options: Mapping[str, Any]) -> MemberSampling:
        """Validate the member's sampling options; errors quote the option and its value."""

        def bad(name: str, expected: str) -> ConfigError:
            shown = str(options[name])[:40]
            return ConfigError(f"option '{name}' for '{spec}' must be {expected}, got {shown!r}")

        persona = options.get("persona")
        if persona is not None and (
            not isinstance(persona, str) or not persona.strip() or len(persona) > MAX_PERSONA_CHARS
        ):
            raise bad("persona", f"non-empty text of at most {MAX_PERSONA_CHARS} characters")
        temperature = options.get("temperature")
        if temperature is not None and (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or not (math.isfinite(temperature) and 0 <= temperature <= 2)
        ):
            raise bad("temperature", "a number from 0 to 2")
        seed = options.get("seed")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise bad("seed", "a whole number")
        caps: dict[str, int | None] = {}
        for name in ("max_tokens", "review_max_tokens"):
            cap = options.get(name)
            if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
                raise bad(name, "a whole number >= 1")
            caps[name] = cap
        return cls(
            persona=persona.strip() if isinstance(persona, str) else None,
            temperature=None if temperature is None else float(temperature),
            seed=seed,
            max_tokens=caps["max_tokens"],
            review_max_tokens=caps["review_max_tokens"],
        )

    def apply(self, request: CompletionRequest) -> CompletionRequest:
        """``request`` with this member's settings: the persona before the system message,
        the member's temperature unless the request sets one (calibration does), the seed
        offset by the member's, and ``max_tokens`` capped (a review by ``review_max_tokens``
        when set)."""
        if self == _NONE:
            return request
        update: dict[str, Any] = {}
        if self.persona is not None:
            update["system"] = (
                self.persona if not request.system else f"{self.persona}\n\n{request.system}"
            )
        if self.temperature is not None and request.temperature is None:
            update["temperature"] = self.temperature
        if self.seed is not None:
            update["seed"] = ((request.seed or 0) + self.seed) % SEED_MODULUS
        cap = self.max_tokens
        if request.task == "review" and self.review_max_tokens is not None:
            cap = self.review_max_tokens
        if cap is not None and request.max_tokens > cap:
            update["max_tokens"] = cap
        return request.model_copy(update=update) if update else request


_NONE = MemberSampling()
