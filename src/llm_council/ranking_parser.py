"""Parse a reviewer's reply into a ranking and scores; never raises.

Accepted, in order of preference:
1. a JSON object ``{"ranking": [...], "scores": {...}, "rationale": "..."}``, fenced or raw
   (the *last* valid one wins, so a reply that quotes a candidate's fake JSON before giving
   its own verdict is read correctly);
2. a ``FINAL RANKING:`` numbered list (the last such block);
3. otherwise the review is recorded as unparseable, with the reason.

The reviewer's own verdict comes last, after anything it quotes from the candidates, so
the reply is searched from the end: JSON objects are tried latest-start first (quoted
text full of ``{`` cannot push the verdict out of the search window), and a
``FINAL RANKING:`` block written after the last valid JSON object wins over it (a
candidate's fake JSON quoted before a plain-text verdict is not taken for the verdict).

Labels not shown to this reviewer are ignored, duplicates are dropped (first kept), and
a missing or invalid score stays missing: it is never turned into 0.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from llm_council.results import ParseStatus

MAX_REPLY_CHARS = 200_000
MAX_JSON_STARTS = 400

_LABEL = re.compile(r"\b[Rr]esponse\s+([A-Za-z]{1,3})\b")
_FINAL_RANKING = re.compile(r"FINAL\s+RANKING\s*:", re.IGNORECASE)
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*\d+(?:\.\d+)?)?\s*$")


@dataclass(frozen=True)
class ParsedReview:
    status: ParseStatus
    ranking: tuple[str, ...] = ()
    scores: dict[str, float] = field(default_factory=dict)
    rationale: str | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()


class _ReviewJson(BaseModel):
    model_config = ConfigDict(extra="ignore")

    ranking: list[Any]
    scores: dict[str, Any] = {}
    rationale: str | None = None

    @field_validator("rationale", mode="before")
    @classmethod
    def _text(cls, value: Any) -> str | None:
        return None if value is None else str(value)[:2000]


def _normalize_label(raw: Any, known: dict[str, str]) -> str | None:
    """Map ``'Response B'``, ``'response b'``, ``'B'`` to the shown label, else None."""
    text = str(raw).strip()
    match = _LABEL.search(text)
    letters = match.group(1) if match else text
    return known.get(letters.upper())


def _score_value(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str) and (m := _NUMBER.match(raw)):
        value = float(m.group(1))
    else:
        return None
    return value if math.isfinite(value) else None


def _json_candidates(reply: str) -> Iterator[tuple[int, Any]]:
    """Yield ``(end, obj)`` for JSON objects in the reply, the latest-starting first.

    At most ``MAX_JSON_STARTS`` opening braces are tried, counted from the end, because
    the verdict follows whatever the reviewer quoted. Fenced JSON needs no separate pass:
    its opening brace is one of the starts.
    """
    decoder = json.JSONDecoder()
    starts = [i for i, char in enumerate(reply) if char == "{"]
    for start in reversed(starts[-MAX_JSON_STARTS:]):
        try:
            obj, end = decoder.raw_decode(reply, start)
        except (ValueError, RecursionError):
            continue
        yield end, obj


def _from_json(
    reply: str, known: dict[str, str], scale: tuple[float, float]
) -> tuple[ParsedReview, int] | None:
    """The last valid review JSON object, parsed, and where it ends in ``reply``."""
    last_valid: _ReviewJson | None = None
    json_end = -1
    for end, obj in _json_candidates(reply):
        if not isinstance(obj, dict) or "ranking" not in obj:
            continue
        try:
            last_valid = _ReviewJson.model_validate(obj)
        except ValidationError:
            continue
        json_end = end
        break
    if last_valid is None:
        return None
    notes: list[str] = []
    ranking = _dedupe_known(last_valid.ranking, known, notes)
    scores: dict[str, float] = {}
    low, high = scale
    for raw_label, raw_score in last_valid.scores.items():
        label = _normalize_label(raw_label, known)
        if label is None:
            notes.append(f"ignored score for unknown label {str(raw_label)[:40]!r}")
            continue
        value = _score_value(raw_score)
        if value is None or not low <= value <= high:
            notes.append(f"ignored invalid score {str(raw_score)[:40]!r} for {label}")
            continue
        scores.setdefault(label, value)
    if not ranking and not scores:
        error = "JSON had no ranking or score for a shown label"
        return ParsedReview("unparseable", error=error, notes=tuple(notes)), json_end
    verdict = ParsedReview("json", tuple(ranking), scores, last_valid.rationale, notes=tuple(notes))
    return verdict, json_end


def _dedupe_known(raw_labels: Sequence[Any], known: dict[str, str], notes: list[str]) -> list[str]:
    ranking: list[str] = []
    for raw in raw_labels:
        label = _normalize_label(raw, known)
        if label is None:
            notes.append(f"ignored unknown label {str(raw)[:40]!r}")
        elif label in ranking:
            notes.append(f"dropped duplicate {label}")
        else:
            ranking.append(label)
    return ranking


def _from_final_ranking(reply: str, known: dict[str, str]) -> ParsedReview | None:
    markers = list(_FINAL_RANKING.finditer(reply))
    if not markers:
        return None
    tail = reply[markers[-1].end() :]
    notes: list[str] = []
    found = [f"Response {m.group(1)}" for m in _LABEL.finditer(tail)]
    ranking = _dedupe_known(found, known, notes)
    if not ranking:
        return ParsedReview(
            "unparseable", error="FINAL RANKING block lists no shown label", notes=tuple(notes)
        )
    return ParsedReview("final_ranking", tuple(ranking), notes=tuple(notes))


def parse_review(
    reply: str | None, shown_labels: Sequence[str], score_scale: tuple[float, float] = (1.0, 10.0)
) -> ParsedReview:
    """Parse ``reply`` for the labels this reviewer was shown. Never raises."""
    try:
        if reply is None or not reply.strip():
            return ParsedReview("unparseable", error="empty reply")
        text = reply[:MAX_REPLY_CHARS]
        known = {label.removeprefix("Response ").upper(): label for label in shown_labels}
        parsed, json_end = _from_json(text, known, score_scale) or (None, -1)
        last_marker = max((m.start() for m in _FINAL_RANKING.finditer(text)), default=-1)
        if parsed is not None and parsed.status == "json" and last_marker < json_end:
            return parsed
        fallback = _from_final_ranking(text, known)
        if fallback is not None and fallback.status == "final_ranking":
            return fallback
        if parsed is not None and parsed.status == "json":
            return parsed  # a FINAL RANKING after the JSON that lists no shown label
        partial = parsed or fallback
        if partial is not None:
            return ParsedReview("unparseable", error=partial.error, notes=partial.notes)
        return ParsedReview(
            "unparseable", error="no JSON object with a 'ranking' and no FINAL RANKING block"
        )
    except Exception as error:  # the parser must never take the session down
        return ParsedReview("unparseable", error=f"parser error: {type(error).__name__}")
