"""Which model family a model or judge name belongs to, for self-preference.

A judge favouring "its own" answers is measured on pairs where exactly one answer's
``metadata.model_a/model_b`` is in the judge's family. Families group versions and
dated snapshots of one model line (``gpt-4o-2024-08-06`` and ``openai:gpt-4`` are both
``gpt-4``) but keep different lines apart (``gpt-3.5`` is not ``gpt-4``).
"""

from __future__ import annotations

import re

_FAMILY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"gpt-?4"), "gpt-4"),
    (re.compile(r"gpt-?3\.?5|chatgpt"), "gpt-3.5"),
    (re.compile(r"claude"), "claude"),
    (re.compile(r"gemini|bard|palm"), "gemini"),
    (re.compile(r"vicuna"), "vicuna"),
    (re.compile(r"llama"), "llama"),
    (re.compile(r"mistral|mixtral"), "mistral"),
    (re.compile(r"guanaco"), "guanaco"),
)


def model_family(name: str) -> str:
    """The family key of a model name or provider spec (``"anthropic:claude-3-5"`` -> ``"claude"``).

    Unknown names fall back to the model part of the spec, lower-cased and without a
    trailing version or ``:tag`` (``"simulated:narcissist"`` -> ``"narcissist"``).
    """
    lowered = name.strip().lower()
    for pattern, family in _FAMILY_PATTERNS:
        if pattern.search(lowered):
            return family
    model_part = lowered.split(":", 1)[1] if ":" in lowered else lowered
    return model_part.split(":", 1)[0]
