"""Parse a reviewer's reply into a ranking and scores; never raises.

The verdict must come from a place candidate text cannot write into (ADR 0018). In order:

1. **structured** - the provider returned the verdict through the SDK's structured-output
   channel (OpenAI ``json_schema``, an Anthropic forced tool call, Google
   ``response_schema``): the whole reply is the verdict object, and only its top level
   counts (a ``"ranking"`` nested inside it is ignored).
2. **nonce** - the reply holds a block ``<<<VERDICT id=NONCE>>> ... <<<END VERDICT
   id=NONCE>>>`` carrying this prompt's nonce, which candidates never saw (it is drawn
   after they answered). When that tag is present, only the tagged text is read; anything
   outside it (quotes of candidates, before or after) is ignored, however long the reply.
3. **untagged** - neither: every top-level JSON object with a ``"ranking"`` and every
   ``FINAL RANKING:`` block in the reply is a candidate verdict. If they all agree, that is
   the verdict; if they disagree (a reviewer quoted a candidate's fake verdict, before or
   after its own) the review is ``unparseable``, because nothing in untagged text tells the
   reviewer's verdict from a quote. A forged verdict can then spoil an untagged review but
   never flip it. Replies longer than ``MAX_REPLY_CHARS`` are not searched untagged (a
   truncated reply could lose the real verdict and keep a quoted fake).

**Scores only** (ADR 0041): on the structured channel, a verdict object with ``scores`` and
no ``ranking`` is what llama.cpp's ``json_object`` grammar returns (it cannot enforce a
permutation, so none is asked for). It is read strictly: every shown label needs one score
on the scale and nothing else may be scored, or the review is ``unparseable`` with the
reason. The ranking is derived from the scores, best first, only when no two scores tie;
with a tie it stays empty (the scores are kept) rather than guess an order.

Refusals (ADR 0027): a verdict whose ``ranking`` is an explicit empty list and that scores no
shown label, or a nonce-tagged block whose text declines to judge (``I cannot rank ...``,
``abstain``), is ``refused``: the reviewer declined, which is neither a reply we could not
read (``unparseable``) nor a failed call. A refusal counts only where candidates cannot
write: the structured channel or the nonce-tagged block. An untagged refusal could be a
candidate's text that the reviewer quoted, so it is ``unparseable``, never ``refused``.

Labels not shown to this reviewer are ignored, duplicates are dropped (first kept), and
a missing or invalid score stays missing: it is never turned into 0. A score written as a
fraction (``"8/10"``) is kept only when its denominator is the top of the declared scale;
any other denominator (``"4/5"`` on 1-10) is rejected with a note, never silently dropped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from llm_council.results import ParseStatus

MAX_REPLY_CHARS = 200_000
MAX_JSON_STARTS = 2_000

VerdictChannel = Literal["structured", "nonce", "untagged"]

_LABEL = re.compile(r"\b[Rr]esponse\s+([A-Za-z]{1,3})\b")
_FINAL_RANKING = re.compile(r"FINAL\s+RANKING\s*:", re.IGNORECASE)
_NUMBER = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:/\s*(\d+(?:\.\d+)?))?\s*$")
_REFUSAL_TEXT = re.compile(
    r"^\W*(?:FINAL\s+RANKING\s*:\W*)?(?:(?:none|n/a)\W*$|abstain|refuse|decline|"
    r"(?:I\s+)?(?:cannot|can't|can\s+not|won't|will\s+not|decline\s+to|am\s+unable\s+to|"
    r"am\s+not\s+able\s+to|must\s+decline\s+to)\s+(?:rank|judge|evaluate|score|compare|"
    r"assess|review)\b)",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^```[A-Za-z]*\s*\n?(?P<body>.*?)\n?```$", re.DOTALL)


def verdict_open_tag(nonce: str) -> str:
    return f"<<<VERDICT id={nonce}>>>"


def verdict_close_tag(nonce: str) -> str:
    return f"<<<END VERDICT id={nonce}>>>"


@dataclass(frozen=True)
class ParsedReview:
    status: ParseStatus
    ranking: tuple[str, ...] = ()
    scores: dict[str, float] = field(default_factory=dict)
    rationale: str | None = None
    error: str | None = None
    notes: tuple[str, ...] = ()
    channel: VerdictChannel | None = None  # where the verdict was read from
    rationale_chars: int | None = None  # the rationale's length before it was cut to 2000


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


def _score_value(raw: Any, high: float) -> tuple[float | None, str | None]:
    """The score, or ``None`` and why; ``"n/high"`` is n, any other fraction is refused."""
    if isinstance(raw, bool):
        return None, None
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str) and (m := _NUMBER.match(raw)):
        value = float(m.group(1))
        if m.group(2) is not None and float(m.group(2)) != high:
            return None, f"denominator {m.group(2)} is not the scale's top {high:g}"
    else:
        return None, None
    return (value, None) if math.isfinite(value) else (None, None)


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


def _validation_problem(error: ValidationError, obj: dict[str, Any]) -> str:
    """What failed, e.g. ``verdict's 'scores' is a list, not an object`` (first problem)."""
    details = error.errors()
    location = details[0]["loc"] if details else ()
    field_name = str(location[0]) if location else "?"
    value = obj.get(field_name)
    expected = {"ranking": "a list", "scores": "an object", "rationale": "text"}.get(
        field_name, "valid"
    )
    where = "".join(f"[{part!r}]" for part in location[1:])
    return f"verdict's {field_name!r}{where} is {type(value).__name__}, not {expected}"


def _rationale_chars(obj: dict[str, Any]) -> int | None:
    value = obj.get("rationale")
    return None if value is None else len(str(value))


def _from_object(obj: Any, known: dict[str, str], scale: tuple[float, float]) -> ParsedReview:
    """One verdict object, read at its top level only."""
    if not isinstance(obj, dict) or "ranking" not in obj:
        return ParsedReview("unparseable", error="verdict is not an object with a 'ranking'")
    try:
        verdict = _ReviewJson.model_validate(obj)
    except ValidationError as invalid:
        return ParsedReview("unparseable", error=_validation_problem(invalid, obj))
    notes: list[str] = []
    ranking = _dedupe_known(verdict.ranking, known, notes)
    scores: dict[str, float] = {}
    low, high = scale
    for raw_label, raw_score in verdict.scores.items():
        label = _normalize_label(raw_label, known)
        if label is None:
            notes.append(f"ignored score for unknown label {str(raw_label)[:40]!r}")
            continue
        value, reason = _score_value(raw_score, high)
        if value is None or not low <= value <= high:
            why = f" ({reason})" if reason else ""
            notes.append(f"ignored invalid score {str(raw_score)[:40]!r} for {label}{why}")
            continue
        scores.setdefault(label, value)
    chars = _rationale_chars(obj)
    if not verdict.ranking and not scores:
        # an explicit empty ranking that scores nothing: the reviewer declined to judge
        error = "the verdict's ranking is empty and it scores no answer: declined to judge"
        return ParsedReview(
            "refused", rationale=verdict.rationale, error=error, rationale_chars=chars
        )
    if not ranking and not scores:
        error = "JSON had no ranking or score for a shown label"
        return ParsedReview("unparseable", error=error, notes=tuple(notes))
    return ParsedReview(
        "json", tuple(ranking), scores, verdict.rationale, notes=tuple(notes), rationale_chars=chars
    )


def _from_scores_only(
    obj: dict[str, Any], known: dict[str, str], scale: tuple[float, float]
) -> ParsedReview:
    """A structured verdict with scores and no ranking, read strictly (see the module doc)."""
    raw_scores = obj.get("scores")
    if not isinstance(raw_scores, dict):
        found = type(raw_scores).__name__
        return ParsedReview("unparseable", error=f"verdict's 'scores' is {found}, not an object")
    rationale = obj.get("rationale")
    if rationale is not None and not isinstance(rationale, str):
        found = type(rationale).__name__
        return ParsedReview("unparseable", error=f"verdict's 'rationale' is {found}, not text")
    low, high = scale
    scores: dict[str, float] = {}
    for raw_label, raw_score in raw_scores.items():
        label = _normalize_label(raw_label, known)
        if label is None:
            return ParsedReview(
                "unparseable", error=f"verdict scores an unknown label {str(raw_label)[:40]!r}"
            )
        if label in scores:
            return ParsedReview("unparseable", error=f"verdict scores {label} twice")
        value, reason = _score_value(raw_score, high)
        if value is None or not low <= value <= high:
            why = f" ({reason})" if reason else f" (not a number from {low:g} to {high:g})"
            return ParsedReview(
                "unparseable",
                error=f"verdict's score {str(raw_score)[:40]!r} for {label} is invalid{why}",
            )
        scores[label] = value
    missing = [label for label in known.values() if label not in scores]
    if missing:
        return ParsedReview("unparseable", error=f"verdict has no score for {', '.join(missing)}")
    notes: tuple[str, ...] = ()
    ordered = sorted(scores, key=lambda label: -scores[label])
    if len(set(scores.values())) == len(scores):
        ranking = tuple(ordered)
    else:
        ranking = ()
        notes = ("tied scores: no ranking derived",)
    text = None if rationale is None else rationale[:2000]
    chars = None if rationale is None else len(rationale)
    return ParsedReview("json", ranking, scores, text, notes=notes, rationale_chars=chars)


def _top_level_objects(text: str) -> tuple[list[tuple[int, int, Any]], bool]:
    """``(start, end, obj)`` of each top-level JSON object, and whether the scan finished.

    Scans forward; a decoded object is skipped whole, so objects nested in it (or in a
    string inside it) are never taken for verdicts. At most ``MAX_JSON_STARTS`` braces are
    tried; past that the scan reports itself unfinished rather than guess.
    """
    decoder = json.JSONDecoder()
    found: list[tuple[int, int, Any]] = []
    position, tried = 0, 0
    while (start := text.find("{", position)) != -1:
        tried += 1
        if tried > MAX_JSON_STARTS:
            return found, False
        try:
            obj, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            position = start + 1
            continue
        found.append((start, end, obj))
        position = end
    return found, True


def _final_ranking_blocks(
    text: str, object_spans: Sequence[tuple[int, int]], known: dict[str, str]
) -> list[ParsedReview]:
    """Each ``FINAL RANKING:`` block, read up to the next block or JSON object."""
    markers = [m for m in _FINAL_RANKING.finditer(text)]
    starts = sorted([m.start() for m in markers] + [start for start, _ in object_spans])
    blocks = []
    for marker in markers:
        if any(start < marker.start() < end for start, end in object_spans):
            continue  # the marker is text inside a JSON object, not a block of its own
        stop = next((s for s in starts if s > marker.start()), len(text))
        notes: list[str] = []
        found = [f"Response {m.group(1)}" for m in _LABEL.finditer(text, marker.end(), stop)]
        ranking = _dedupe_known(found, known, notes)
        if ranking:
            blocks.append(ParsedReview("final_ranking", tuple(ranking), notes=tuple(notes)))
        else:
            error = "FINAL RANKING block lists no shown label"
            blocks.append(ParsedReview("unparseable", error=error, notes=tuple(notes)))
    return blocks


def _agreeing(verdicts: Sequence[ParsedReview], where: str) -> ParsedReview:
    """The one verdict all parsed candidates agree on, else an ``unparseable`` naming why."""
    valid = [v for v in verdicts if v.status in ("json", "final_ranking", "refused")]
    if not valid:
        failed = next(iter(verdicts), None)
        if failed is not None:
            return failed
        return ParsedReview(
            "unparseable",
            error=f"no JSON object with a 'ranking' and no FINAL RANKING block {where}",
        )
    rankings = {v.ranking for v in valid}
    score_sets = {tuple(sorted(v.scores.items())) for v in valid if v.status == "json"}
    if len(rankings) > 1 or len(score_sets) > 1:
        return ParsedReview(
            "unparseable",
            error=f"{len(valid)} verdicts that disagree {where}; a quoted candidate's "
            "verdict cannot be told from the reviewer's without the nonce tag",
        )
    return next((v for v in valid if v.status == "json"), valid[0])


def _from_text(
    text: str, known: dict[str, str], scale: tuple[float, float], *, tagged: bool = False
) -> ParsedReview:
    """Every top-level verdict in ``text`` must agree; a refusal counts only when ``tagged``."""
    objects, finished = _top_level_objects(text)
    if not finished:
        return ParsedReview(
            "unparseable", error=f"more than {MAX_JSON_STARTS} '{{' in an untagged reply"
        )
    verdicts = [_from_object(obj, known, scale) for _, _, obj in objects if _has_ranking(obj)]
    spans = [(start, end) for start, end, _ in objects]
    verdicts += _final_ranking_blocks(text, spans, known)
    parsed = _agreeing(verdicts, "in the reply")
    if parsed.status == "refused" and not tagged:
        return ParsedReview(
            "unparseable",
            error="an untagged empty ranking: a refusal quoted from a candidate cannot be "
            "told from the reviewer's own without the nonce tag",
        )
    return parsed


def _has_ranking(obj: Any) -> bool:
    return isinstance(obj, dict) and "ranking" in obj


def _tagged_bodies(reply: str, nonce: str) -> list[str] | None:
    """The text of each nonce-tagged verdict block, or None when the tag does not occur."""
    opening, closing = verdict_open_tag(nonce), verdict_close_tag(nonce)
    if opening not in reply:
        return None
    bodies, position = [], 0
    while (start := reply.find(opening, position)) != -1:
        end = reply.find(closing, start + len(opening))
        if end == -1:
            break
        bodies.append(reply[start + len(opening) : end].strip())
        position = end + len(closing)
    return bodies


def _from_tagged(body: str, known: dict[str, str], scale: tuple[float, float]) -> ParsedReview:
    fenced = _FENCE.match(body)
    inner = fenced.group("body").strip() if fenced else body
    try:
        return _from_object(json.loads(inner), known, scale)
    except (ValueError, RecursionError):
        if len(inner) > MAX_REPLY_CHARS:
            return ParsedReview("unparseable", error="tagged verdict is too long")
        parsed = _from_text(inner, known, scale, tagged=True)  # e.g. a FINAL RANKING list
        if parsed.status == "unparseable" and _REFUSAL_TEXT.match(inner):
            error = f"the tagged verdict declines to judge: {inner[:80]!r}"
            return ParsedReview("refused", error=error)
        return parsed


def _with_channel(parsed: ParsedReview, channel: VerdictChannel) -> ParsedReview:
    return ParsedReview(
        parsed.status,
        parsed.ranking,
        parsed.scores,
        parsed.rationale,
        parsed.error,
        parsed.notes,
        channel,
        parsed.rationale_chars,
    )


def _parse(
    reply: str,
    known: dict[str, str],
    scale: tuple[float, float],
    nonce: str | None,
    structured: bool,
) -> ParsedReview:
    if structured:
        try:
            obj = json.loads(reply)
        except (ValueError, RecursionError):
            parsed = ParsedReview("unparseable", error="structured verdict is not valid JSON")
        else:
            if isinstance(obj, dict) and "ranking" not in obj and "scores" in obj:
                parsed = _from_scores_only(obj, known, scale)
            else:
                parsed = _from_object(obj, known, scale)
        return _with_channel(parsed, "structured")
    bodies = _tagged_bodies(reply, nonce) if nonce else None
    if bodies is not None:
        if not bodies:
            parsed = ParsedReview("unparseable", error="verdict tag without its end tag")
        else:
            tagged = [_from_tagged(body, known, scale) for body in bodies]
            parsed = _agreeing(tagged, "in the tagged blocks")
        return _with_channel(parsed, "nonce")
    if len(reply) > MAX_REPLY_CHARS:
        error = f"untagged reply of {len(reply)} chars is over {MAX_REPLY_CHARS}; not searched"
        return _with_channel(ParsedReview("unparseable", error=error), "untagged")
    return _with_channel(_from_text(reply, known, scale), "untagged")


def parse_review(
    reply: str | None,
    shown_labels: Sequence[str],
    score_scale: tuple[float, float] = (1.0, 10.0),
    *,
    nonce: str | None = None,
    structured: bool = False,
) -> ParsedReview:
    """Parse ``reply`` for the labels this reviewer was shown. Never raises.

    ``structured``: the reply came through the provider's structured-output channel.
    ``nonce``: the prompt's nonce; a verdict tagged with it is the only one read.
    """
    try:
        if reply is None or not reply.strip():
            return ParsedReview("unparseable", error="empty reply")
        known = {label.removeprefix("Response ").upper(): label for label in shown_labels}
        return _parse(reply, known, score_scale, nonce, structured)
    except Exception as error:  # the parser must never take the session down
        return ParsedReview("unparseable", error=f"parser error: {type(error).__name__}")
