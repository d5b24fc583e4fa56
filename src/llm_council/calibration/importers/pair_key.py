"""What makes two foreign rows the same pair, and the checked reading of their key fields.

MT-bench logs (FastChat judge files and the human judgments) name a comparison by
question, turn and the two models in either order; our pair id is built from the question,
the turn and the SORTED model pair, and ``a`` is always the alphabetically first model, so
the judge file and the human file land on the same id whatever order each wrote them in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from llm_council.errors import InputError


@dataclass(frozen=True)
class Where:
    """A row's place for error messages: file and line (or row) number."""

    path: str
    line: int

    def error(self, message: str) -> InputError:
        return InputError(message, path=self.path, line=self.line)


@dataclass(frozen=True)
class PairKey:
    """One comparison: ``model_a`` sorts before ``model_b``."""

    question_id: str
    turn: int
    model_a: str
    model_b: str

    @property
    def pair_id(self) -> str:
        return f"q{self.question_id}-t{self.turn}-{self.model_a}-vs-{self.model_b}"


def required(row: Mapping[str, Any], name: str, where: Where) -> Any:
    if name not in row or row[name] is None:
        raise where.error(f"missing field '{name}'")
    return row[name]


def text(row: Mapping[str, Any], name: str, where: Where) -> str:
    value = required(row, name, where)
    if not isinstance(value, str) or not value.strip():
        raise where.error(f"field '{name}' must be a non-empty string, got {value!r}")
    return value


def question_id(row: Mapping[str, Any], where: Where) -> str:
    value = required(row, "question_id", where)
    if isinstance(value, bool) or not isinstance(value, int | str) or str(value).strip() == "":
        raise where.error(f"field 'question_id' must be an integer or a string, got {value!r}")
    return str(value)


def parse_positive_int(text: str) -> int | None:
    """``"3"`` -> 3; None for anything that is not a plain integer >= 1 (``"²"``, ``"1.5"``)."""
    stripped = text.strip()
    if not stripped.isascii() or not stripped.isdigit():
        return None
    return int(stripped) if int(stripped) >= 1 else None


def turn(row: Mapping[str, Any], where: Where) -> int:
    """``turn`` (1-based); absent means 1, as in single-turn MT-bench logs."""
    value = row.get("turn", 1)
    if isinstance(value, str):
        value = parse_positive_int(value) or value
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise where.error(f"field 'turn' must be an integer >= 1, got {value!r}")
    return value


def pair_key(row: Mapping[str, Any], first: str, second: str, where: Where) -> tuple[PairKey, bool]:
    """The key of a row naming its models in ``first``/``second``; True when they were swapped."""
    model_first, model_second = text(row, first, where), text(row, second, where)
    if model_first == model_second:
        raise where.error(f"fields '{first}' and '{second}' name the same model {model_first!r}")
    swapped = model_second < model_first
    model_a, model_b = (model_second, model_first) if swapped else (model_first, model_second)
    return PairKey(question_id(row, where), turn(row, where), model_a, model_b), swapped


def empty_pair_record(key: PairKey, source_format: str) -> dict[str, Any]:
    """A replay record for ``key`` without text, verdicts or labels yet."""
    return {
        "id": key.pair_id,
        "prompt": "",
        "response_a": "",
        "response_b": "",
        "metadata": {
            "model_a": key.model_a,
            "model_b": key.model_b,
            "question_id": key.question_id,
            "turn": key.turn,
            "source_format": source_format,
            "answer_text": False,
        },
    }
