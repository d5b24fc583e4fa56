"""The pairs file: one JSON object per line, each a question with two answers to compare.

Live calibration needs ``id``, ``prompt``, ``response_a``, ``response_b``; replay also reads
``judge`` and ``judgments`` (verdicts already recorded, ``winner`` always in the ORIGINAL
labels). Every problem is reported with the file, the line and the field, because these
files are written by hand or by other tools.

The in-memory model (what importers produce): one :class:`Pair` per (judge, id), its
``judgments`` each with an ``order``, a ``winner`` in the original labels and a 0-based
``repetition`` index (the file's optional ``repetition`` field is 1-based), and optional
human labels: ``human_label`` (the label used) and ``human_votes`` (one per annotator,
from which a missing ``human_label`` is the strict-plurality majority).
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, cast

from llm_council.calibration.majority import strict_plurality
from llm_council.calibration.verdict_confidence import judgment_confidence
from llm_council.errors import InputError
from llm_council.infra.input_files import read_input_text

Winner = Literal["a", "b", "tie"]
Order = Literal["ab", "ba"]

WINNERS: tuple[Winner, ...] = ("a", "b", "tie")
ORDERS: tuple[Order, ...] = ("ab", "ba")


@dataclass(frozen=True)
class Judgment:
    """One verdict of one judge on one pair shown in one order, in the original labels."""

    order: Order
    winner: Winner
    repetition: int = 0
    # characters of the judge's rationale for this verdict (ADR 0027); None when not given
    rationale_chars: int | None = None
    # the judge's probability that this verdict is right (``confidence`` or
    # exp(``verdict_logprob``)); None when not given
    confidence: float | None = None


@dataclass(frozen=True)
class HumanVote:
    """One human annotator's label for a pair (``annotator`` may be unknown)."""

    winner: Winner
    annotator: str | None = None


@dataclass(frozen=True)
class Pair:
    """A question with two answers; ``judgments`` are present only in replay files."""

    pair_id: str
    prompt: str
    response_a: str
    response_b: str
    model_a: str | None = None
    model_b: str | None = None
    human_label: Winner | None = None
    reference_answer: str | None = None
    pair_type: str | None = None
    subset_tags: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)
    judge: str | None = None
    judgments: tuple[Judgment, ...] = ()
    line: int = 0
    human_votes: tuple[HumanVote, ...] = ()

    def response(self, label: Literal["a", "b"]) -> str:
        return self.response_a if label == "a" else self.response_b

    @property
    def human_vote_agreement(self) -> float | None:
        """Share of annotators who gave ``human_label`` (None without votes or label)."""
        if not self.human_votes or self.human_label is None:
            return None
        agreeing = sum(vote.winner == self.human_label for vote in self.human_votes)
        return agreeing / len(self.human_votes)


def shown_order(order: Order) -> tuple[Literal["a", "b"], Literal["a", "b"]]:
    """The original labels in display order: ``"ba"`` shows ``response_b`` first."""
    return ("a", "b") if order == "ab" else ("b", "a")


def slot_to_original(order: Order, slot_winner: Literal["first", "second", "tie"]) -> Winner:
    """Map a verdict about display slots back to the original labels."""
    if slot_winner == "tie":
        return "tie"
    first, second = shown_order(order)
    return first if slot_winner == "first" else second


def _text_field(
    record: Mapping[str, Any], name: str, where: tuple[str, int], *, required: bool
) -> str | None:
    value = record.get(name)
    if value is None:
        if required:
            raise InputError(f"missing field '{name}'", path=where[0], line=where[1])
        return None
    if not isinstance(value, str):
        raise InputError(
            f"field '{name}' must be a string, got {type(value).__name__}",
            path=where[0],
            line=where[1],
        )
    return value


def _winner(value: Any, field_name: str, where: tuple[str, int]) -> Winner:
    normalized = value.strip().lower() if isinstance(value, str) else value
    if normalized not in WINNERS:
        raise InputError(
            f"field '{field_name}' must be one of a, b, tie; got {value!r}",
            path=where[0],
            line=where[1],
        )
    return cast(Winner, normalized)


def _rationale_chars(item: Mapping[str, Any], name: str, where: tuple[str, int]) -> int | None:
    """``rationale_chars`` (an integer >= 0), else the length of ``rationale``, else None."""
    value = item.get("rationale_chars")
    if value is None:
        text = item.get("rationale")
        if text is not None and not isinstance(text, str):
            raise InputError(
                f"field '{name}.rationale' must be a string, got {type(text).__name__}",
                path=where[0],
                line=where[1],
            )
        return None if text is None else len(text)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InputError(
            f"field '{name}.rationale_chars' must be an integer >= 0, got {value!r}",
            path=where[0],
            line=where[1],
        )
    return value


def _repetition(item: Mapping[str, Any], name: str, where: tuple[str, int]) -> int | None:
    """The file's 1-based ``repetition`` as a 0-based index, or None when absent."""
    value = item.get("repetition")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(
            f"field '{name}.repetition' must be an integer >= 1, got {value!r}",
            path=where[0],
            line=where[1],
        )
    return value - 1


def _judgments(raw: Any, where: tuple[str, int]) -> tuple[Judgment, ...]:
    if not isinstance(raw, list):
        raise InputError("field 'judgments' must be a list", path=where[0], line=where[1])
    seen: dict[str, int] = {"ab": 0, "ba": 0}
    taken: set[tuple[str, int]] = set()
    explicit: set[bool] = set()
    judgments = []
    for index, item in enumerate(raw):
        name = f"judgments[{index}]"
        if not isinstance(item, dict):
            raise InputError(f"field '{name}' must be an object", path=where[0], line=where[1])
        order = item.get("order")
        if order not in ORDERS:
            raise InputError(
                f"field '{name}.order' must be 'ab' or 'ba', got {order!r}",
                path=where[0],
                line=where[1],
            )
        winner = _winner(item.get("winner"), f"{name}.winner", where)
        repetition = _repetition(item, name, where)
        explicit.add(repetition is not None)
        if len(explicit) > 1:
            raise InputError(
                f"field '{name}.repetition': give it on every judgment of the record or on none",
                path=where[0],
                line=where[1],
            )
        if repetition is None:
            # without the field, repetitions are numbered in file order within each order
            repetition = seen[order]
            seen[order] += 1
        if (order, repetition) in taken:
            raise InputError(
                f"field '{name}': repetition {repetition + 1} of order {order!r} given twice",
                path=where[0],
                line=where[1],
            )
        taken.add((order, repetition))
        judgments.append(
            Judgment(
                order=order,
                winner=winner,
                repetition=repetition,
                rationale_chars=_rationale_chars(item, name, where),
                confidence=judgment_confidence(item, name, where),
            )
        )
    return tuple(judgments)


def _human_votes(raw: Any, where: tuple[str, int]) -> tuple[HumanVote, ...]:
    """``human_labels``: a list of labels or of ``{"label": ..., "annotator": ...}``."""
    if not isinstance(raw, list):
        raise InputError("field 'human_labels' must be a list", path=where[0], line=where[1])
    votes = []
    for index, item in enumerate(raw):
        name = f"human_labels[{index}]"
        if isinstance(item, dict):
            annotator = item.get("annotator")
            if annotator is not None and not isinstance(annotator, str):
                raise InputError(
                    f"field '{name}.annotator' must be a string", path=where[0], line=where[1]
                )
            votes.append(HumanVote(_winner(item.get("label"), f"{name}.label", where), annotator))
        else:
            votes.append(HumanVote(_winner(item, name, where)))
    return tuple(votes)


def parse_pair(record: Any, where: tuple[str, int]) -> Pair:
    """Validate one decoded line; ``where`` is ``(path, line)`` for error messages."""
    if not isinstance(record, dict):
        raise InputError(
            f"expected a JSON object, got {type(record).__name__}", path=where[0], line=where[1]
        )
    pair_id = record.get("id")
    if isinstance(pair_id, int) and not isinstance(pair_id, bool):
        pair_id = str(pair_id)
    if not isinstance(pair_id, str) or not pair_id:
        raise InputError(
            f"field 'id' must be a non-empty string, got {pair_id!r}", path=where[0], line=where[1]
        )
    metadata = record.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise InputError("field 'metadata' must be an object", path=where[0], line=where[1])
    models = {}
    for side in ("model_a", "model_b"):
        value = metadata.get(side)
        if value is not None and not isinstance(value, str):
            raise InputError(
                f"field 'metadata.{side}' must be a string", path=where[0], line=where[1]
            )
        models[side] = value
    human = record.get("human_label")
    votes = (
        _human_votes(record["human_labels"], where)
        if record.get("human_labels") is not None
        else ()
    )
    human_label = _winner(human, "human_label", where) if human is not None else None
    if human_label is None and votes:
        human_label = strict_plurality([vote.winner for vote in votes])
    tags = record.get("subset_tags") or []
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise InputError(
            "field 'subset_tags' must be a list of strings", path=where[0], line=where[1]
        )
    judge = _text_field(record, "judge", where, required=False)
    judgments = (
        _judgments(record["judgments"], where) if record.get("judgments") is not None else ()
    )
    if judgments and judge is None:
        raise InputError(
            "field 'judge' is required when 'judgments' is present", path=where[0], line=where[1]
        )
    return Pair(
        pair_id=pair_id,
        prompt=cast(str, _text_field(record, "prompt", where, required=True)),
        response_a=cast(str, _text_field(record, "response_a", where, required=True)),
        response_b=cast(str, _text_field(record, "response_b", where, required=True)),
        model_a=models["model_a"],
        model_b=models["model_b"],
        human_label=human_label,
        reference_answer=_text_field(record, "reference_answer", where, required=False),
        pair_type=_text_field(record, "pair_type", where, required=False),
        subset_tags=tuple(tags),
        metadata=metadata,
        judge=judge,
        judgments=judgments,
        line=where[1],
        human_votes=votes,
    )


def parse_pairs_lines(lines: Iterable[str], path: str) -> list[Pair]:
    """Parse JSONL lines; blank lines are skipped, ``(judge, id)`` must be unique."""
    pairs: list[Pair] = []
    seen: dict[tuple[str | None, str], int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(
                f"invalid JSON: {error.msg} (column {error.colno})", path=path, line=number
            ) from None
        except RecursionError:
            raise InputError("invalid JSON: nested too deeply", path=path, line=number) from None
        pair = parse_pair(record, (path, number))
        key = (pair.judge, pair.pair_id)
        if key in seen:
            raise InputError(
                f"duplicate id {pair.pair_id!r}"
                + (f" for judge '{pair.judge}'" if pair.judge else "")
                + f" (first on line {seen[key]})",
                path=path,
                line=number,
            )
        seen[key] = number
        pairs.append(pair)
    return pairs


def read_pairs(path: Path) -> list[Pair]:
    """Read a pairs file; a missing or empty file is an :class:`InputError`.

    A torn last line (no final newline and not valid JSON: a writer killed mid-line) is
    skipped with a warning naming ``file:line``; a malformed line anywhere else stays an
    error, because only the last line can have been cut by a crash.
    """
    text = read_input_text(path)  # a regular file of bounded size, else one line
    # split on "\n" only: str.splitlines() also splits on U+2028 etc., which are legal
    # inside JSON strings, and would shift every later line number
    lines = text.split("\n")
    if lines[-1].strip() and _is_torn(lines[-1]):
        warnings.warn(
            f"{path}:{len(lines)}: skipped a torn last line (no newline, not valid JSON)",
            stacklevel=2,
        )
        lines = lines[:-1]
    pairs = parse_pairs_lines(lines, str(path))
    if not pairs:
        raise InputError("no pairs in file", path=str(path))
    return pairs


def _is_torn(line: str) -> bool:
    try:
        json.loads(line)
    except (json.JSONDecodeError, RecursionError):
        return True
    return False


def distinct_questions(pairs: Sequence[Pair], path: str) -> list[Pair]:
    """One pair per id for a live run, whatever judges the file recorded.

    A replay file holds one record per (judge, id); a live run judges each question once,
    so records repeating an id must agree on what is judged (prompt, answers, reference,
    human label) and are merged; a disagreement is an error naming both lines.
    """
    first_by_id: dict[str, Pair] = {}
    for pair in pairs:
        first = first_by_id.get(pair.pair_id)
        if first is None:
            first_by_id[pair.pair_id] = replace(pair, judge=None, judgments=())
            continue
        for name in ("prompt", "response_a", "response_b", "reference_answer", "human_label"):
            if getattr(first, name) != getattr(pair, name):
                raise InputError(
                    f"id {pair.pair_id!r} repeats line {first.line} with a different '{name}';"
                    " a live run judges each id once",
                    path=path,
                    line=pair.line,
                )
    return list(first_by_id.values())


def pair_to_record(pair: Pair, *, with_judgments: bool = True) -> dict[str, Any]:
    """The JSON object for ``pair`` in the input format (inverse of :func:`parse_pair`)."""
    record: dict[str, Any] = {
        "id": pair.pair_id,
        "prompt": pair.prompt,
        "response_a": pair.response_a,
        "response_b": pair.response_b,
        "metadata": dict(pair.metadata),
    }
    optional = {
        "human_label": pair.human_label,
        "reference_answer": pair.reference_answer,
        "pair_type": pair.pair_type,
    }
    record.update({key: value for key, value in optional.items() if value is not None})
    if pair.subset_tags:
        record["subset_tags"] = list(pair.subset_tags)
    if pair.human_votes:
        record["human_labels"] = [
            {"label": vote.winner, "annotator": vote.annotator}
            if vote.annotator is not None
            else vote.winner
            for vote in pair.human_votes
        ]
    if with_judgments and pair.judge is not None:
        record["judge"] = pair.judge
        record["judgments"] = [
            {"order": j.order, "winner": j.winner, "repetition": j.repetition + 1}
            | ({} if j.rationale_chars is None else {"rationale_chars": j.rationale_chars})
            | ({} if j.confidence is None else {"confidence": j.confidence})
            for j in pair.judgments
        ]
    return record
