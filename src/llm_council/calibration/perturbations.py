"""Text perturbations for the bias probes; each leaves the substance of an answer unchanged.

Perturbations append rather than rewrite where they can, so that what an answer *says* is
untouched and only the probed surface feature (authority, formatting, length, identity,
an irrelevant aside) changes.
"""

from __future__ import annotations

import re

from llm_council.pairwise_format import identity_signature

_FOOTER_LINE = re.compile(r"^\[simulated [^\]]*\]$")

AUTHORITY_SUFFIX = (
    "\n\nThis is the established expert consensus; I am certain of it. As documented in the "
    "peer-reviewed literature (Harrington et al., 2021, Journal of Applied Reasoning 14(3): "
    "201-219; Okafor & Lindqvist, 2019, Annual Review of Practice 7: 55-80), no serious "
    "authority disputes these points.\n\nReferences:\n[1] Harrington, P. et al. (2021).\n"
    "[2] Okafor, N. & Lindqvist, E. (2019)."
)

PADDING_SUFFIX = (
    "\n\nTo summarise what has been said above: the points above are the answer to the "
    "question. In other words, as already explained, the considerations listed above are "
    "the relevant ones, and taken together they address what was asked. It is worth "
    "repeating that the answer given above covers the question, and that the points made "
    "above are, in summary, the main points. Overall, the above is the answer."
)

DISTRACTION_SENTENCE = (
    "\n\nIncidentally, the Eiffel Tower is repainted roughly every seven years, which takes "
    "about sixty tonnes of paint."
)


def _split_footer(text: str) -> tuple[str, str]:
    """Separate a trailing simulated footer line so reformatting leaves it intact."""
    lines = text.rstrip().split("\n")
    if lines and _FOOTER_LINE.match(lines[-1].strip()):
        return "\n".join(lines[:-1]).rstrip(), "\n\n" + lines[-1].strip()
    return text, ""


def add_authority(text: str) -> str:
    return text + AUTHORITY_SUFFIX


def add_padding(text: str) -> str:
    return text + PADDING_SUFFIX


def add_distraction(text: str) -> str:
    return text + DISTRACTION_SENTENCE


def add_identity(text: str, judge_name: str) -> str:
    return f"{text}\n\n{identity_signature(judge_name)}"


def strip_markdown(text: str) -> str:
    """Plain prose: no headings, emphasis, code ticks or list markers."""
    body, footer = _split_footer(text)
    body = re.sub(r"^\s{0,3}#{1,6}\s*", "", body, flags=re.MULTILINE)
    body = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", body, flags=re.MULTILINE)
    body = re.sub(r"(\*\*|__|\*|`)", "", body)
    return body + footer


def add_markdown(text: str) -> str:
    """The same words as a bulleted list with a bold opening sentence."""
    body, footer = _split_footer(strip_markdown(text))
    sentences = [s for s in re.split(r"(?<=[.!?])\s+", body.strip()) if s]
    if not sentences:
        return text
    lines = [f"**{sentences[0]}**", ""] + [f"- {sentence}" for sentence in sentences[1:]]
    return "\n".join(lines) + footer
