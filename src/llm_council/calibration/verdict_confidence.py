"""A judgment's stated confidence in its verdict, read from a replay record.

``confidence``: the judge's probability (0..1) that its verdict is right, as some judge
prompts ask for. ``verdict_logprob``: the natural-log probability the SDK gave the
verdict token (OpenAI ``logprobs``), turned into ``exp(logprob)``. One of the two, or none.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from llm_council.errors import InputError


def judgment_confidence(item: Mapping[str, Any], name: str, where: tuple[str, int]) -> float | None:
    """The confidence of one judgment, or ``None``; bad values are a one-line error."""
    confidence, logprob = item.get("confidence"), item.get("verdict_logprob")
    if confidence is not None and logprob is not None:
        raise InputError(
            f"field '{name}': give 'confidence' or 'verdict_logprob', not both",
            path=where[0],
            line=where[1],
        )
    if confidence is not None:
        if not _number(confidence) or not 0.0 <= confidence <= 1.0:
            raise InputError(
                f"field '{name}.confidence' must be a number from 0 to 1, got {confidence!r}",
                path=where[0],
                line=where[1],
            )
        return float(confidence)
    if logprob is not None:
        if not _number(logprob) or logprob > 0.0:
            raise InputError(
                f"field '{name}.verdict_logprob' must be a number <= 0, got {logprob!r}",
                path=where[0],
                line=where[1],
            )
        return math.exp(float(logprob))
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
