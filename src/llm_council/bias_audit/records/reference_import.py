"""Convert the reference council's JSONL bias records (its schema 1.x) into our store.

A reference record is one JSON line per (session, reviewer, candidate) with
``schema_version`` a semver string ("1.2.0"), ``session_id``, ``timestamp``,
``reviewer_id``, ``model_id``, ``position``, ``response_length_chars``,
``score_value``, ``score_scale`` ("1-10"), ``council_config_version``, ``consent_level``,
``query_hash`` and ``query_metadata``. What each of our fields becomes (ADR 0015):

- ``position``: taken only from schema >= 1.2.0. Before 1.2.0 the reference wrote the
  reviewer's *ranking* index there (its issue #611), not the display slot; importing it
  as a position would manufacture a huge "position bias", so such records are skipped
  and counted, never guessed.
- ``response_length_words``: the reference counted characters only. Estimated as
  ``max(1, round(chars / 6))`` (about 6 characters per English word, space included).
  Every statistic uses ln(words), and ln(chars / 6) = ln(chars) - ln 6: a constant
  shift that correlations, slopes and differences do not see. Only a displayed word
  count is an estimate. Imported sessions are marked by ``council_config_hash``
  ``reference:<council_config_version>``.
- ``n_candidates``: the answers this reviewer has records for in the session, or the
  highest position + 1 if larger (a lower bound when unscored answers left no record).
- ``is_self_review``: ``reviewer_id == model_id``. ``rank``: null (not recorded).
- ``score_value``: kept if inside ``score_scale``; a 0 below a scale that starts above 0
  is the reference's default for a missing score and becomes null; any other value
  outside the scale skips the record.
- ``query_hash``: the reference's 16-hex HMAC under *its* key is kept, tagged
  ``reference-hmac-sha256-16:<hex>`` so it never passes for one of ours.
  ``query_metadata`` and ``consent_level`` are dropped.

Each session is written with one :func:`~llm_council.bias_audit.records.jsonl_store.append_records`
call, so a crash leaves whole sessions; sessions already in the target store are not
written again, so an interrupted import can simply be re-run.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from llm_council.bias_audit.records.jsonl_store import append_records, read_records
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.errors import InputError, RecordError

CHARS_PER_WORD = 6.0
FIRST_DISPLAY_ORDER_VERSION = (1, 2, 0)
_SEMVER = re.compile(r"^(\d+)(?:\.(\d+))?(?:\.(\d+))?")
_SCALE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*$")
_HEX = re.compile(r"^[0-9a-f]{8,128}$")
_Raw = dict[str, Any]

#: what the importer does to each field the reference did not record the way we do
FIELD_NOTES: dict[str, str] = {
    "response_length_words": "estimated as max(1, round(response_length_chars / 6))",
    "n_candidates": "records of this reviewer in the session (or highest position + 1)",
    "is_self_review": "derived: reviewer_id == model_id",
    "rank": "null (the reference recorded no rank at schema >= 1.2.0)",
    "council_config_hash": "'reference:' + council_config_version",
    "score_scale": "parsed from the reference's 'low-high' text (default 1-10)",
    "query_hash": "kept, tagged 'reference-hmac-sha256-16:' (the reference's key)",
    "query_metadata": "dropped (no such field here)",
    "consent_level": "dropped (no such field here)",
}


class SkippedLine(ValueError):
    """One source line that cannot become a record; the message is the reason."""


@dataclass
class _Tally:
    """Counts gathered while importing (frozen into :class:`ImportSummary` at the end)."""

    n_lines: int = 0
    n_records_read: int = 0
    n_records_written: int = 0
    n_sessions_written: int = 0
    n_sessions_already_present: int = 0
    n_scores_nulled: int = 0
    skipped: list[tuple[int, str]] = field(default_factory=list)


@dataclass(frozen=True)
class ImportSummary:
    """What an import read, wrote and could not convert (``skipped``: line, reason)."""

    source: str
    target: str
    dry_run: bool
    n_lines: int
    n_records_read: int
    n_records_written: int
    n_sessions_written: int
    n_sessions_already_present: int
    n_scores_nulled: int
    skipped: tuple[tuple[int, str], ...]

    def skipped_by_reason(self) -> Counter[str]:
        return Counter(reason for _, reason in self.skipped)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "lines": self.n_lines,
            "records_read": self.n_records_read,
            "records_written": self.n_records_written,
            "sessions_written": self.n_sessions_written,
            "sessions_already_in_store": self.n_sessions_already_present,
            "scores_set_to_null": self.n_scores_nulled,
            "skipped": [{"line": line, "reason": reason} for line, reason in self.skipped],
            "fields_derived_or_defaulted": dict(FIELD_NOTES),
        }


def _version(raw: Any) -> tuple[int, int, int]:
    """The reference's semver string; a missing one is its reader's default, 1.0.0."""
    if raw is None:
        return (1, 0, 0)
    match = _SEMVER.match(raw) if isinstance(raw, str) else None
    if match is None:
        if isinstance(raw, int) and not isinstance(raw, bool):
            raise SkippedLine(f"integer schema_version {raw}: already an llm-council record")
        raise SkippedLine(f"schema_version {str(raw)[:40]!r} is not a reference version")
    parts = tuple(int(part) if part else 0 for part in match.groups())
    if parts[0] != 1:
        raise SkippedLine(f"reference schema_version {raw!r}: only 1.x is known")
    return (parts[0], parts[1], parts[2])


def _text(raw: _Raw, name: str) -> str:
    value = raw.get(name)
    if not isinstance(value, str) or not value.strip():
        raise SkippedLine(f"'{name}' missing or not text")
    return value


def _whole_number(raw: _Raw, name: str) -> int:
    value = raw.get(name)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SkippedLine(f"'{name}' must be a whole number >= 0, got {str(value)[:40]!r}")
    return value


def _timestamp(raw: _Raw) -> str:
    text = _text(raw, "timestamp").strip()
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SkippedLine(f"timestamp {text[:40]!r} is not ISO 8601") from None
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")


def _scale(raw: _Raw) -> tuple[float, float]:
    value = raw.get("score_scale", "1-10")
    if (
        isinstance(value, list)
        and len(value) == 2
        and all(isinstance(bound, int | float) and not isinstance(bound, bool) for bound in value)
    ):
        low, high = float(value[0]), float(value[1])
    elif isinstance(value, str) and (match := _SCALE.match(value)):
        low, high = float(match.group(1)), float(match.group(2))
    else:
        raise SkippedLine(f"score_scale {str(value)[:40]!r} is not 'low-high'")
    if not (math.isfinite(low) and math.isfinite(high) and low < high):
        raise SkippedLine(f"score_scale {str(value)[:40]!r} is not 'low-high'")
    return low, high


def _score(raw: _Raw, scale: tuple[float, float]) -> tuple[float | None, bool]:
    """``(score, nulled)``: the score inside the scale, or None for the reference's 0."""
    value = raw.get("score_value")
    if value is None:
        return None, False
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise SkippedLine(f"score_value {str(value)[:40]!r} is not a number")
    low, high = scale
    if low <= value <= high:
        return float(value), False
    if value == 0 and low > 0:
        return None, True  # the reference wrote 0.0 for "no score"
    raise SkippedLine(f"score_value {value!r} is outside score_scale {low:g}-{high:g}")


def _query_hash(raw: _Raw) -> str | None:
    value = raw.get("query_hash")
    if isinstance(value, str) and _HEX.match(value):
        return f"reference-hmac-sha256-16:{value}"
    return None


@dataclass(frozen=True)
class _Row:
    line: int
    fields: dict[str, Any]
    nulled: bool


def _convert_line(raw: _Raw, line: int) -> _Row:
    """One reference record as our record's fields, except the per-session ones."""
    version = _version(raw.get("schema_version"))
    if version < FIRST_DISPLAY_ORDER_VERSION:
        raise SkippedLine(
            "reference schema < 1.2.0: 'position' holds the ranking index, not the display "
            "position (reference issue #611)"
        )
    scale = _scale(raw)
    score, nulled = _score(raw, scale)
    chars = _whole_number(raw, "response_length_chars")
    config_version = raw.get("council_config_version")
    config_label = config_version if isinstance(config_version, str) and config_version else "?"
    fields = {
        "session_id": _text(raw, "session_id"),
        "timestamp": _timestamp(raw),
        "reviewer_id": _text(raw, "reviewer_id"),
        "model_id": _text(raw, "model_id"),
        "position": _whole_number(raw, "position"),
        "response_length_chars": chars,
        "response_length_words": max(1, round(chars / CHARS_PER_WORD)) if chars else 0,
        "score_value": score,
        "score_scale": scale,
        "rank": None,
        "council_config_hash": f"reference:{config_label[:64]}",
        "query_hash": _query_hash(raw),
    }
    fields["is_self_review"] = fields["reviewer_id"] == fields["model_id"]
    return _Row(line, fields, nulled)


def _parsed_lines(source: Path, summary: _Tally) -> Iterator[_Row]:
    try:
        handle = source.open("rb")
    except OSError as error:
        raise InputError(f"cannot read {str(source)!r}: {error.strerror or error}") from None
    with handle:
        for line_number, raw_line in enumerate(handle, start=1):
            if not raw_line.strip():
                continue
            summary.n_lines += 1
            try:
                parsed = json.loads(raw_line.decode("utf-8"))
                if not isinstance(parsed, dict):
                    raise SkippedLine(f"not a JSON object ({type(parsed).__name__})")
                row = _convert_line(parsed, line_number)
            except SkippedLine as reason:
                summary.skipped.append((line_number, str(reason)))
                continue
            except (ValueError, RecursionError):  # JSON or UTF-8 errors
                torn = "" if raw_line.endswith(b"\n") else " (torn last line)"
                summary.skipped.append((line_number, f"not valid JSON{torn}"))
                continue
            summary.n_records_read += 1
            yield row


#: no council shows this many answers to one reviewer; a larger position is a broken record
MAX_DISPLAY_SLOTS = 256


def _instant(timestamp: str) -> tuple[int, object]:
    """Sort key: parsed ISO 8601 instants first, in time order; unparseable text after."""
    try:
        parsed = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    except ValueError:
        return (1, timestamp)
    return (0, parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))


def _session_records(rows: list[_Row], summary: _Tally) -> list[ReviewRecord]:
    """The session's records with n_candidates; conflicting rows are skipped."""
    kept: list[_Row] = []
    seen_cells: set[tuple[str, str]] = set()
    seen_slots: set[tuple[str, int]] = set()
    for row in rows:
        cell = (row.fields["reviewer_id"], row.fields["model_id"])
        slot = (row.fields["reviewer_id"], row.fields["position"])
        if row.fields["position"] >= MAX_DISPLAY_SLOTS:
            # one such row would make n_candidates absurd and the report drop the session
            summary.skipped.append(
                (row.line, f"position {row.fields['position']} >= {MAX_DISPLAY_SLOTS}")
            )
        elif cell in seen_cells:
            summary.skipped.append((row.line, "duplicate (session, reviewer, model) record"))
        elif slot in seen_slots:
            summary.skipped.append((row.line, "two answers at one position for this reviewer"))
        else:
            seen_cells.add(cell)
            seen_slots.add(slot)
            kept.append(row)
    shown: Counter[str] = Counter(row.fields["reviewer_id"] for row in kept)
    highest: dict[str, int] = {}
    for row in kept:
        reviewer = row.fields["reviewer_id"]
        highest[reviewer] = max(highest.get(reviewer, 0), row.fields["position"] + 1)
    # one timestamp per session (its latest), as our writer stamps them: a session must
    # not straddle two days (Parquet partitions, --since)
    session_time = max((row.fields["timestamp"] for row in kept), key=_instant, default="")
    records: list[ReviewRecord] = []
    for row in kept:
        reviewer = row.fields["reviewer_id"]
        try:
            record = ReviewRecord(
                **{**row.fields, "timestamp": session_time},
                n_candidates=max(shown[reviewer], highest[reviewer]),
            )
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            summary.skipped.append((row.line, f"field '{where}': {first['msg']}"))
            continue
        summary.n_scores_nulled += row.nulled
        records.append(record)
    return records


def import_reference_store(source: Path, target: Path, *, dry_run: bool = False) -> ImportSummary:
    """Convert ``source`` (reference JSONL) into records appended to ``target``."""
    if source.resolve() == target.resolve():
        raise InputError(f"{str(source)!r} is the target store itself: give another --store")
    summary = _Tally()
    sessions: dict[str, list[_Row]] = {}
    for row in _parsed_lines(source, summary):
        sessions.setdefault(row.fields["session_id"], []).append(row)
    present = {record.session_id for record in read_records(target)} if target.exists() else set()
    for session_id, rows in sessions.items():
        if session_id in present:
            summary.n_sessions_already_present += 1
            continue
        records = _session_records(rows, summary)
        if not records:
            continue
        if not dry_run:
            try:
                append_records(target, records)
            except RecordError as error:
                raise RecordError(
                    f"{error} (after {summary.n_sessions_written} imported session(s); "
                    "re-running the import skips them)"
                ) from error
        summary.n_records_written += len(records)
        summary.n_sessions_written += 1
    return ImportSummary(
        source=str(source),
        target=str(target),
        dry_run=dry_run,
        n_lines=summary.n_lines,
        n_records_read=summary.n_records_read,
        n_records_written=summary.n_records_written,
        n_sessions_written=summary.n_sessions_written,
        n_sessions_already_present=summary.n_sessions_already_present,
        n_scores_nulled=summary.n_scores_nulled,
        skipped=tuple(sorted(summary.skipped)),
    )
