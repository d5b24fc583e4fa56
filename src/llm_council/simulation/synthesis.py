"""A simulated chairman: builds its synthesis from the top-ranked anonymized answer."""

from __future__ import annotations

import re

from llm_council.prompts import extract_candidate_blocks

_TOP = re.compile(r"^1\. (Response [A-Z]+)", re.MULTILINE)
_FOOTER_LINE = re.compile(r"\n*\[simulated author=\S+ quality=\S+\]\s*$")


def write_synthesis(prompt: str) -> str:
    blocks = dict(extract_candidate_blocks(prompt))
    match = _TOP.search(prompt)
    top_label = match.group(1) if match and match.group(1) in blocks else next(iter(blocks), None)
    if top_label is None:
        return "The council produced no answers to synthesize."
    body = _FOOTER_LINE.sub("", blocks[top_label])
    sentences = re.split(r"(?<=[.!?])\s+", body)
    summary = " ".join(sentences[:4])
    return (
        f"Synthesis of {len(blocks)} answers, led by {top_label}, which the council ranked first. "
        f"{summary}"
    )
