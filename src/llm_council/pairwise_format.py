"""What a pairwise judge and its simulated stand-in share: slot labels and the verdict line.

The calibration prompt asks for the verdict line and parses it; the simulated judge writes
it. Both import it from here, so the simulator never imports calibration. The identity
probe's sign-off is here for the same reason (the simulated judge recognises it).
"""

from __future__ import annotations

import re
from typing import Literal

from llm_council.prompts import label_for

SlotVerdict = Literal["first", "second", "tie"]

FIRST_LABEL = label_for(0)  # "Response A": the answer shown first
SECOND_LABEL = label_for(1)  # "Response B"

_VERDICT_LINE = re.compile(
    r"^\W*verdict\W*\s*(?:is\s*)?:?\s*\W*(?P<choice>response\s*a|response\s*b|a|b|tie)\W*$",
    re.IGNORECASE,
)
_BRACKETED = re.compile(r"\[\[(?P<choice>A|B|C|tie)\]\]", re.IGNORECASE)


def identity_signature(judge_name: str) -> str:
    """A sign-off naming the judge as the author (the identity probe's plant)."""
    return f"-- written by {judge_name}"


def format_verdict(slot_verdict: SlotVerdict) -> str:
    """The verdict line the prompt asks for (also written by the simulated judge)."""
    return {
        "first": f"Verdict: {FIRST_LABEL}",
        "second": f"Verdict: {SECOND_LABEL}",
        "tie": "Verdict: tie",
    }[slot_verdict]


def parse_verdict(reply: str) -> SlotVerdict | None:
    """The judge's verdict about display slots, or ``None`` when the reply has none.

    The last ``Verdict:`` line wins (reasoning may mention verdicts before concluding);
    MT-Bench's ``[[A]]`` / ``[[B]]`` / ``[[C]]`` (C = tie) is accepted as a fallback.
    """
    for line in reversed(reply.strip().splitlines()):
        match = _VERDICT_LINE.match(line.strip())
        if match:
            return _choice(match.group("choice"))
    bracketed = _BRACKETED.findall(reply)
    if bracketed:
        return _choice(bracketed[-1])
    return None


def _choice(raw: str) -> SlotVerdict:
    key = re.sub(r"\s+", "", raw.lower()).removeprefix("response")
    if key == "a":
        return "first"
    if key == "b":
        return "second"
    return "tie"
