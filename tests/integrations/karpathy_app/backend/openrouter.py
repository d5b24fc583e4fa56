"""Offline stand-ins for the app's OpenRouter calls: deterministic judges with known biases.

A stage-1 answer carries its author's tag (``[[author:<model>]]``) and a hidden quality
(``quality=<0-99>``); a reviewer reads the "Response X:" blocks of its prompt and ranks
them by its ``JUDGES`` kind:

- ``"slot"``: the order it was shown (A first): a pure position bias;
- ``"self"``: its own answer first, the others by quality: self-preference;
- ``"fair"``: by quality as it perceives it (its own fixed noise of +-15 per answer);
- ``"garbled"``: a reply with no "FINAL RANKING:" (the app parses no ranking).

``FAILING`` models return None (the app drops them), as a model that timed out.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Sequence
from typing import Any

JUDGES: dict[str, str] = {
    "openai/gpt-5.1": "slot",
    "anthropic/claude-sonnet-4.5": "self",
}
FAILING: set[str] = set()
CALLS: list[tuple[str, str]] = []  # (model, first 40 characters of the prompt), for tests

_BLOCK = re.compile(r"^Response ([A-Z]):\n(.*?)(?=^Response [A-Z]:\n|\Z)", re.MULTILINE | re.DOTALL)


def _draw(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:4], "big")


def _answer(model: str, prompt: str) -> str:
    quality = _draw(prompt, model) % 100
    words = " ".join(["detail"] * (10 + _draw(model, prompt, "n") % 60))
    return f"[[author:{model}]] quality={quality} {words}"


def _ranking(model: str, prompt: str) -> str:
    blocks = {label: text for label, text in _BLOCK.findall(prompt)}

    def quality(label: str) -> tuple[int, str]:
        # the hidden quality as this judge perceives it (its own noise, +-15, fixed per
        # judge and answer, never a function of the order shown); ties broken by the
        # author: a sort that kept the shown order on ties would be a primacy habit
        found = re.search(r"quality=(\d+)", blocks[label])
        author = re.search(r"\[\[author:([^\]]+)\]\]", blocks[label])
        name = author.group(1) if author else ""
        noise = _draw(model, name, blocks[label]) % 31 - 15
        return (int(found.group(1)) + noise if found else noise, name)

    shown = sorted(blocks)
    kind = JUDGES.get(model, "fair")
    if kind == "garbled":
        return "I would rather not rank these."
    if kind == "slot":
        order = shown
    elif kind == "self":
        own = [label for label in shown if f"[[author:{model}]]" in blocks[label]]
        order = own + sorted((x for x in shown if x not in own), key=quality, reverse=True)
    else:
        order = sorted(shown, key=quality, reverse=True)
    lines = "\n".join(f"{place}. Response {label}" for place, label in enumerate(order, 1))
    return f"Response {order[0]} reads best.\n\nFINAL RANKING:\n{lines}"


async def query_model(
    model: str, messages: list[dict[str, str]], timeout: float = 120.0
) -> dict[str, Any] | None:
    """One model's reply ``{"content": ...}``, or None when it fails."""
    await asyncio.sleep(0)
    prompt = messages[-1]["content"]
    CALLS.append((model, prompt[:40]))
    if model in FAILING:
        return None
    if prompt.startswith("Synthesize"):
        return {"content": "The council agrees, mostly."}
    if "FINAL RANKING:" in prompt:
        return {"content": _ranking(model, prompt)}
    if prompt.startswith("Title"):
        return {"content": "A short title"}
    return {"content": _answer(model, prompt)}


async def query_models_parallel(
    models: Sequence[str], messages: list[dict[str, str]]
) -> dict[str, dict[str, Any] | None]:
    """Every model's reply, asked at once: ``{model: reply or None}``."""
    replies = await asyncio.gather(*(query_model(model, messages) for model in models))
    return dict(zip(models, replies, strict=True))
