"""Stores split into parts by session, loaded into their own connections, for the tests of
sections computed from merged per-session summaries (ADR 0074); and the shared shape of
the "a malformed saved section is recomputed" tests."""

from __future__ import annotations

import dataclasses
import json
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import structlog

from generators import independent_council, rank_council
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.session_summaries import (
    SavedSection,
    read_summaries,
    write_summaries,
)
from llm_council.bias_audit.report.load.tables import create_analysis_tables

T = TypeVar("T")


def merged_in_three_orders(section: Any, a: T, b: T, c: T) -> list[T]:
    """Three parts' summaries merged in three orders (left and right nesting, and starting
    from the last part): an exact merge gives the same finish from each."""
    return [
        section.merge(section.merge(a, b), c),
        section.merge(a, section.merge(b, c)),
        section.merge(section.merge(c, a), b),
    ]


def varied_lengths(records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The records with each answer's length drawn from its (session, model) (a generator
    whose answers are all one length gives the length fits nothing to fit)."""
    out = []
    for record in records:
        seed = zlib.crc32(f"{record['session_id']}|{record['model_id']}".encode())
        words = 20 + seed % 400
        out.append(record | {"response_length_words": words, "response_length_chars": 6 * words})
    return out


def write_parts(
    sessions: Sequence[Sequence[dict[str, Any]]], parts: Sequence[Sequence[int]], directory: Path
) -> list[Path]:
    """One JSONL store per part (a list of session indices), plus the whole store last."""
    paths = []
    for number, part in enumerate([*parts, range(len(sessions))]):
        path = directory / f"part-{number}.jsonl"
        with path.open("w", encoding="utf-8") as handle:
            for index in part:
                for record in sessions[index]:
                    handle.write(json.dumps(record) + "\n")
        paths.append(path)
    return paths


def connection_of(path: Path) -> duckdb.DuckDBPyConnection:
    """The store's analysis tables, as the report builds them."""
    connection = load_store(str(path)).connection
    create_analysis_tables(connection)
    return connection


def independent_sessions(
    n_members: int, n_sessions: int, seed: int, **spec: Any
) -> list[list[dict[str, Any]]]:
    """Sessions of the independent generator (integer scores), as record lists."""
    council = independent_council.CouncilSpec(n_members=n_members, **spec)
    sessions = independent_council.generate_sessions(council, n_sessions, seed)
    return [session.records() for session in sessions]


def ranked_sessions(
    n_members: int, n_sessions: int, seed: int, **spec: Any
) -> list[list[dict[str, Any]]]:
    """Sessions of the rank-only generator, with varied answer lengths, as record lists."""
    council = rank_council.RankCouncilSpec(n_members=n_members, **spec)
    sessions = rank_council.generate_sessions(council, n_sessions, seed)
    return [varied_lengths(session.records()) for session in sessions]


def report_after_a_malformed_section(
    store: Path,
    lines: Sequence[bytes],
    section: str,
    malform: Callable[[SavedSection], SavedSection],
    report: Callable[[], T],
) -> tuple[T, list[dict[str, Any]]]:
    """The "malformed saved section" shape of the incremental sections' tests: write the
    first half of ``lines`` to ``store``, ``report()`` (which saves the summary file),
    replace ``section``'s saved summary by ``malform(saved)`` (sealed again, so only the
    section's ``from_payload`` can refuse it), append the other half and ``report()`` again.
    Returns that report and the log entries of the second run (every level captured)."""
    half = len(lines) // 2
    store.write_bytes(b"".join(lines[:half]))
    report()
    saved = read_summaries(store)
    assert saved is not None and section in saved.sections
    broken = {**saved.sections, section: malform(saved.sections[section])}
    assert write_summaries(store, dataclasses.replace(saved, sections=broken))
    with store.open("ab") as stream:
        stream.write(b"".join(lines[half:]))
    structlog.reset_defaults()  # an earlier report set the library's default (warnings only)
    with structlog.testing.capture_logs() as logs:
        again = report()
    return again, logs


#: a tail load abandoned because of one saved section (ADR 0081's amendment): the report
#: is then computed from every record, which recomputes that section with all the others
_ABANDONED_FOR_A_SECTION = re.compile(
    r"the tail load was abandoned: section '([^']*)'(?: cannot merge the tail)?: (.*)", re.S
)


def recomputed_sections(logs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The log entries saying a section was summarized again over every session of a full
    load (``report_section_recomputed``)."""
    return [entry for entry in logs if entry["event"] == "report_section_recomputed"]


def sections_summarized_again(logs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The sections summarized again over every session, as ``{"section", "reason"}``: one
    recomputed alone after a full load (:func:`recomputed_sections`), or one whose saved
    summary made a tail load fall back to a full load (``report_sessions_rebuilt``, the
    reason naming the section; every section is then summarized again)."""
    found: list[Mapping[str, Any]] = list(recomputed_sections(logs))
    for entry in logs:
        if entry["event"] == "report_sessions_rebuilt":
            match = _ABANDONED_FOR_A_SECTION.match(str(entry.get("reason", "")))
            if match:
                found.append({"section": match.group(1), "reason": match.group(2)})
    return found


def json_lines(sessions: Sequence[Sequence[dict[str, Any]]]) -> list[bytes]:
    """The sessions' records as JSONL lines, in order."""
    return [(json.dumps(record) + "\n").encode() for session in sessions for record in session]
