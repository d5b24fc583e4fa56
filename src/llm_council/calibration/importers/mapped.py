"""Any other judgment log: columns named by ``--map``, one row per judgment or per pair.

The ``--map`` syntax (repeatable; the mappings are merged)::

    FIELD=COLUMN[:VALUE=OURS[:VALUE=OURS...]][,FIELD=COLUMN...]

e.g. ``--map id=pair_id,order=shown,winner=verdict:A=a:B=b:Tie=tie,judge=grader``: commas
separate fields, colons the entries of a value map (so labels such as ``model_a`` cannot
be mistaken for a field; a column name or label cannot contain ``,`` ``:`` or ``=``). Value
keys match the cell text exactly (booleans read as ``true``/``false``); a cell missing from
the value map is an error. Without a value map a cell is trimmed and lower-cased.

Fields: ``id`` (required); the verdicts either LONG, ``winner`` + ``order`` (one row per
judgment, ``order`` values ``ab``/``ba``), or WIDE, ``winner_ab`` and/or ``winner_ba`` (one
row per pair); optional ``judge`` (else the file name's stem), ``repetition`` (integer >= 1),
``model_a``, ``model_b``, ``prompt``, ``response_a``, ``response_b``, ``human_label``,
``reference_answer``, ``pair_type``. Winner values after mapping: ``a``/``b``/``tie`` (the
ORIGINAL labels), ``first``/``second`` (the display slot, mapped back through the order),
or ``error`` (an unevaluated judgment: dropped and counted, never a tie). Rows with the same
(judge, id) are one pair; its text, models and human label must agree between rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from llm_council.calibration.importers.pair_key import Where, parse_positive_int
from llm_council.calibration.importers.result import ImportResult
from llm_council.calibration.importers.tables import Row
from llm_council.calibration.pairs import Order, slot_to_original
from llm_council.errors import ConfigError
from llm_council.infra.safe_text import terminal_safe

SOURCE_FORMAT = "mapped"
Slot = Literal["first", "second", "tie"]
PAIR_TEXT_FIELDS = (
    "model_a",
    "model_b",
    "prompt",
    "response_a",
    "response_b",
    "reference_answer",
    "pair_type",
)
FIELDS = (
    "id",
    "winner",
    "order",
    "winner_ab",
    "winner_ba",
    "judge",
    "repetition",
    "human_label",
    *PAIR_TEXT_FIELDS,
)
_WINNER_VALUES = ("a", "b", "tie", "first", "second", "error")
_ALLOWED = {
    "order": ("ab", "ba"),
    "winner": _WINNER_VALUES,
    "winner_ab": _WINNER_VALUES,
    "winner_ba": _WINNER_VALUES,
    "human_label": ("a", "b", "tie"),
}


@dataclass(frozen=True)
class ColumnMap:
    """One field read from one column, with an optional cell -> our value table."""

    column: str
    values: Mapping[str, str] = field(default_factory=dict)


def parse_map(specs: Sequence[str]) -> dict[str, ColumnMap]:
    """``["id=pair,winner=v:A=a:B=b"]`` -> {field: ColumnMap}; a bad item is a ConfigError."""
    mapping: dict[str, ColumnMap] = {}
    for spec in specs:
        for item in spec.split(","):
            left, sep, right = item.partition("=")
            name = left.strip()
            if not sep or not name:
                raise ConfigError(f"--map item {item!r} must be FIELD=COLUMN")
            if name not in FIELDS:
                raise ConfigError(f"--map: unknown field {name!r} (fields: {', '.join(FIELDS)})")
            if name in mapping:
                raise ConfigError(f"--map: field {name!r} mapped twice")
            column, *value_items = right.split(":")
            if not column.strip():
                raise ConfigError(f"--map item {item!r}: empty column name")
            values: dict[str, str] = {}
            for value_item in value_items:
                cell, eq, ours = value_item.partition("=")
                if not eq:
                    raise ConfigError(
                        f"--map item {item!r}: value map entry {value_item!r} must be VALUE=OURS"
                    )
                values[cell.strip()] = ours.strip()
            mapping[name] = ColumnMap(column.strip(), values)
    _check_map(mapping)
    return mapping


def _check_map(mapping: Mapping[str, ColumnMap]) -> None:
    if "id" not in mapping:
        raise ConfigError("--map needs id=COLUMN")
    long_form = "winner" in mapping or "order" in mapping
    wide_form = "winner_ab" in mapping or "winner_ba" in mapping
    if long_form and wide_form:
        raise ConfigError("--map: use winner+order or winner_ab/winner_ba, not both")
    if long_form and not ("winner" in mapping and "order" in mapping):
        raise ConfigError("--map: winner= needs order= (or use winner_ab=/winner_ba=)")
    if not (long_form or wide_form or "human_label" in mapping):
        raise ConfigError(
            "--map needs verdicts (winner+order or winner_ab/winner_ba) or human_label"
        )
    for name, column_map in mapping.items():
        allowed = _ALLOWED.get(name)
        bad = [v for v in column_map.values.values() if allowed and v not in allowed]
        if column_map.values and not allowed:
            raise ConfigError(f"--map: field {name!r} takes no value map")
        if bad:
            raise ConfigError(
                f"--map: {name} value {bad[0]!r} is not one of {', '.join(allowed or ())}"
            )


def _cell_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class _RowReader:
    """Reads mapped fields of one row, naming the column and line on any problem."""

    def __init__(self, row: Row, mapping: Mapping[str, ColumnMap], where: Where) -> None:
        self.row, self.mapping, self.where = row, mapping, where

    def raw(self, name: str) -> Any:
        column = self.mapping[name].column
        if column not in self.row:
            # header names come from the user's file: shown with escapes, never raw
            shown = ", ".join(terminal_safe(header) for header in list(self.row)[:12])
            raise self.where.error(
                f"column {column!r} (--map {name}={terminal_safe(column)}) not found;"
                f" columns: {shown}"
            )
        return self.row[column]

    def value(self, name: str) -> str | None:
        """The mapped value, or None when the field is unmapped or the cell is empty."""
        if name not in self.mapping:
            return None
        cell = self.raw(name)
        if cell is None or (isinstance(cell, str) and not cell.strip()):
            return None
        column_map = self.mapping[name]
        if column_map.values:
            text = _cell_text(cell)
            if text not in column_map.values:
                raise self.where.error(
                    f"column {column_map.column!r}: value {text!r} is not in the --map"
                    f" {name} values ({', '.join(map(terminal_safe, column_map.values))})"
                )
            return column_map.values[text]
        text = _cell_text(cell)
        allowed = _ALLOWED.get(name)
        if allowed is None:
            return text
        normalized = text.strip().lower()
        if normalized not in allowed:
            raise self.where.error(
                f"column {column_map.column!r} ({name}): expected one of {', '.join(allowed)};"
                f" got {text!r}"
            )
        return normalized

    def repetition(self) -> int | None:
        text = self.value("repetition")
        if text is None:
            return None
        repetition = parse_positive_int(text)
        if repetition is None:
            column = self.mapping["repetition"].column
            raise self.where.error(
                f"column {column!r} (repetition): expected an integer >= 1; got {text!r}"
            )
        return repetition


def mapped_records(
    rows: Iterable[tuple[int, Row]],
    mapping: Mapping[str, ColumnMap],
    path: str,
    default_judge: str,
) -> ImportResult:
    """Replay records from any table through ``mapping`` (see the module docstring)."""
    records: dict[tuple[str, str], dict[str, Any]] = {}
    first_line: dict[tuple[str, str], int] = {}
    repetitions = _RepetitionLines()
    counts = {"rows": 0, "games": 0, "error_games_dropped": 0}
    for number, row in rows:
        where = Where(path, number)
        reader = _RowReader(row, mapping, where)
        counts["rows"] += 1
        pair_id = reader.value("id")
        if pair_id is None:
            raise where.error(f"column {mapping['id'].column!r} (id) is empty")
        judge = reader.value("judge") or default_judge
        key = (judge, pair_id)
        fields = _pair_fields(reader)
        record = records.get(key)
        if record is None:
            record = _new_record(pair_id, judge, fields)
            records[key] = record
            first_line[key] = number
        else:
            _check_same(record, fields, first_line[key], mapping, where)
        for order, winner in _verdicts(reader):
            if winner == "error":
                counts["error_games_dropped"] += 1
                continue
            if winner in ("first", "second"):
                winner = slot_to_original(cast(Order, order), cast(Slot, winner))
            judgment: dict[str, Any] = {"order": order, "winner": winner}
            repetition = reader.repetition()
            repetitions.check(key, order, repetition, reader)
            if repetition is not None:
                judgment["repetition"] = repetition
            record["judgments"].append(judgment)
            counts["games"] += 1
    out = tuple(records.values())
    if not any(name in mapping for name in ("winner", "winner_ab", "winner_ba")):
        for record in out:  # human labels only: labelled pairs, no judge
            del record["judgments"]
            del record["judge"]
    return ImportResult(
        SOURCE_FORMAT,
        out,
        {
            **counts,
            "pairs": len(out),
            "judges": len({judge for judge, _ in records}),
            "pairs_without_text": sum(not r["metadata"]["answer_text"] for r in out),
        },
    )


class _RepetitionLines:
    """Where each (judge, id, order, repetition) was first given, so a repeated one or a
    record mixing given and missing repetitions is refused at the user's file line (the
    replay parser would only see the converted record)."""

    def __init__(self) -> None:
        self.lines: dict[tuple[str, str, str, int], int] = {}
        self.given: dict[tuple[str, str], tuple[bool, int]] = {}

    def check(
        self, key: tuple[str, str], order: str, repetition: int | None, reader: _RowReader
    ) -> None:
        where = reader.where
        given, line = self.given.setdefault(key, (repetition is not None, where.line))
        if given != (repetition is not None):
            column = reader.mapping["repetition"].column
            raise where.error(
                f"column {column!r} (repetition) is {'empty' if given else 'set'} here but"
                f" {'set' if given else 'empty'} on line {line} for {_pair_name(key)}:"
                " give it on every row of a pair or on none"
            )
        if repetition is None:
            return  # numbered in file order, so never repeated
        seen = self.lines.setdefault((*key, order, repetition), where.line)
        if seen != where.line:
            raise where.error(
                f"repetition {repetition} of order {order!r} for {_pair_name(key)}"
                f" is already on line {seen}"
            )


def _pair_name(key: tuple[str, str]) -> str:
    """``judge 'j' and id 'p'``: ``repr`` escapes every non-printable character (control,
    C1 and bidi controls alike), so the quoted names are terminal-safe."""
    judge, pair_id = key
    return f"judge {judge!r} and id {pair_id!r}"


def _verdicts(reader: _RowReader) -> list[tuple[str, str]]:
    if "winner" in reader.mapping:
        order, winner = reader.value("order"), reader.value("winner")
        if order is None or winner is None:
            name = "order" if order is None else "winner"
            raise reader.where.error(f"column {reader.mapping[name].column!r} ({name}) is empty")
        return [(order, winner)]
    verdicts = []
    for order in ("ab", "ba"):
        winner = reader.value(f"winner_{order}")
        if winner is not None:
            verdicts.append((order, winner))
    return verdicts


def _pair_fields(reader: _RowReader) -> dict[str, str | None]:
    return {name: reader.value(name) for name in (*PAIR_TEXT_FIELDS, "human_label")}


def _new_record(pair_id: str, judge: str, fields: Mapping[str, str | None]) -> dict[str, Any]:
    has_text = all(fields[name] is not None for name in ("prompt", "response_a", "response_b"))
    record: dict[str, Any] = {
        "id": pair_id,
        "prompt": fields["prompt"] or "",
        "response_a": fields["response_a"] or "",
        "response_b": fields["response_b"] or "",
        "metadata": {
            "model_a": fields["model_a"],
            "model_b": fields["model_b"],
            "source_format": SOURCE_FORMAT,
            "answer_text": has_text,
        },
        "judge": judge,
        "judgments": [],
    }
    for name in ("human_label", "reference_answer", "pair_type"):
        if fields[name] is not None:
            record[name] = fields[name]
    return record


def _check_same(
    record: Mapping[str, Any],
    fields: Mapping[str, str | None],
    first: int,
    mapping: Mapping[str, ColumnMap],
    where: Where,
) -> None:
    for name, value in fields.items():
        if name.startswith("model_"):
            before = record["metadata"][name]
        elif name in ("prompt", "response_a", "response_b"):
            before = record[name] or None
        else:
            before = record.get(name)
        if value != before:
            raise where.error(
                f"column {mapping[name].column!r} ({name}) is {value!r} here but {before!r} on"
                f" line {first} for the same judge and id"
            )
