"""The tail load through ``build_report`` (ADR 0081 and its amendment): with the gate open,
a re-run on a grown store reads only the new bytes and equals the cold report of the grown
store; whatever stops a tail load after it was chosen (a saved section that cannot merge,
a changed section list, an attacked file or store) gives the cold report, never a section
over the tail alone, a crash or a half-written file.

The gate is open (``COMPUTED_FROM_EVERY_RECORD`` is empty since position was merged,
ADR 0088); the tests still monkeypatch it empty, so they keep testing the tail load if a
section ever goes back on the list. Every report is compared whole with the cold one.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import structlog

from bias_audit.report.analyses.split_stores import (
    connection_of,
    independent_sessions,
    json_lines,
    ranked_sessions,
    recomputed_sections,
    report_after_a_malformed_section,
)
from bias_audit.report.analyses.test_incremental_runner import assert_same_report
from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report import build
from llm_council.bias_audit.report.analyses import families
from llm_council.bias_audit.report.analyses.families import dense_table_cells
from llm_council.bias_audit.report.build import REPORT_STEPS, build_report
from llm_council.bias_audit.report.load import parquet_compaction
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.bias_audit.report.load.session_summaries import (
    SavedSection,
    read_summaries,
    summaries_path,
    write_summaries,
)
from llm_council.bias_audit.report.model import BiasReport

LOADED = "report_tail_loaded"
REBUILT = "report_sessions_rebuilt"
ABANDONED = "the tail load was abandoned: "


@pytest.fixture(autouse=True)
def gate_open(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every part of the report counts as incremental: the tail load may run."""
    monkeypatch.setattr(build, "COMPUTED_FROM_EVERY_RECORD", ())


def _report(store: Path, **options: Any) -> BiasReport:
    return build_report(store, n_resamples=20, seed=3, reproducible=True, **options)


def _logged(run: Callable[[], BiasReport]) -> tuple[BiasReport, list[dict[str, Any]]]:
    structlog.reset_defaults()  # an earlier report set the library's default (warnings only)
    with structlog.testing.capture_logs() as logs:
        report = run()
    return report, logs


def _events(logs: Sequence[dict[str, Any]], event: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == event]


def _canonical(report: BiasReport) -> str:
    data = report.to_dict()
    data.pop("generated_at")
    data.pop("store")
    return json.dumps(data, sort_keys=True, allow_nan=True)


def _assert_cold_equal(store: Path, report: BiasReport) -> None:
    cold = _report(store, session_summaries=False)
    assert_same_report(_canonical(report), _canonical(cold))


def _append(store: Path, lines: Sequence[bytes]) -> None:
    with store.open("ab") as stream:
        stream.write(b"".join(lines))


STORES: dict[str, Callable[[], list[bytes]]] = {
    "independent-3-missing": lambda: json_lines(
        independent_sessions(3, 90, 11, missing_score_rate=0.1, missing_review_rate=0.1)
    ),
    "rank-9-shuffled": lambda: json_lines(
        ranked_sessions(9, 14, 12, order="reviewer", truncate_rate=0.1)
    ),
    "rank-3-fixed-order": lambda: json_lines(
        ranked_sessions(3, 120, 12, order="fixed", missing_review_rate=0.1)
    ),
}


@pytest.mark.parametrize("name", list(STORES))
def test_three_appends_read_only_the_tail_and_equal_the_cold_report(
    name: str, tmp_path: Path
) -> None:
    lines = STORES[name]()
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"")
    done, tails = 0, []
    # cut mid-session: a session straddles every cut
    for cut in [int(len(lines) * share) + 3 for share in (0.45, 0.7, 0.85)] + [len(lines)]:
        _append(store, lines[done:cut])
        done = cut
        report, logs = _logged(lambda: _report(store))
        tails.append(len(_events(logs, LOADED)))
        assert _events(logs, REBUILT) == [] or tails == [0]
        _assert_cold_equal(store, report)
    assert tails == [0, 1, 1, 1]


def test_parquet_new_days_read_only_the_new_files_and_equal_the_cold_report(
    tmp_path: Path,
) -> None:
    sessions = generate_sessions(CouncilSpec(n_members=3, missing_score_rate=0.1), 120, 11)
    jsonl, parquet = tmp_path / "store.jsonl", tmp_path / "parquet"
    tails = []
    for n_sessions in (48, 72, 96, 120):  # one session an hour: whole new days each time
        write_store(jsonl, sessions[:n_sessions])
        compact_store(jsonl, parquet)
        report, logs = _logged(lambda: _report(parquet))
        tails.append(len(_events(logs, LOADED)))
        _assert_cold_equal(parquet, report)
    assert tails == [0, 1, 1, 1]


def test_parquet_sessions_added_to_a_compacted_day_read_only_the_new_part_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What ADR 0093 is for: ``bias-compact`` adds sessions to the last day (and a new day)
    as new part files, so the next report reads only them; a day merged past the part limit
    gives one cold report."""
    monkeypatch.setattr(parquet_compaction, "MAX_PARTS_PER_DAY", 2)
    sessions = generate_sessions(CouncilSpec(n_members=3, missing_score_rate=0.1), 120, 11)
    jsonl, parquet = tmp_path / "store.jsonl", tmp_path / "parquet"
    tails, tail_records = [], []
    # one session an hour: days 1-3 and 4 hours of day 4, then day 4 grows, then day 5 is
    # new with day 4 growing again (day 4 would hold 3 parts: merged), then day 5 grows
    for n_sessions in (76, 80, 100, 104):
        write_store(jsonl, sessions[:n_sessions])
        compact_store(jsonl, parquet)
        report, logs = _logged(lambda: _report(parquet, session_summaries=True))
        tails.append(len(_events(logs, LOADED)))
        tail_records += [entry["tail_records"] for entry in _events(logs, LOADED)]
        _assert_cold_equal(parquet, report)
        assert report.n_sessions == n_sessions
    assert tails == [0, 1, 0, 1]
    assert tail_records == [
        sum(len(s.records()) for s in sessions[76:80]),
        sum(len(s.records()) for s in sessions[100:104]),
    ]
    day_4 = sorted(parquet.glob("date=*"))[3]
    assert sorted(path.name for path in day_4.iterdir()) == ["part-2.parquet"]


def _other_version(payload: SavedSection) -> SavedSection:
    return dataclasses.replace(payload, version=payload.version + 1)


def _one_array_cut(payload: SavedSection) -> SavedSection:
    name = sorted(payload.arrays)[0]
    array = payload.arrays[name]
    return dataclasses.replace(payload, arrays={**payload.arrays, name: array[: len(array) // 2]})


def _no_arrays(payload: SavedSection) -> SavedSection:
    return dataclasses.replace(payload, arrays={})


def _reviewers_not_sorted(payload: SavedSection) -> SavedSection:
    return dataclasses.replace(payload, meta={**payload.meta, "reviewers": ["z", "a"]})


@pytest.mark.parametrize(
    ("section", "malform"),
    [
        ("report_counts", _reviewers_not_sorted),  # the dense gate would count the tail alone
        ("length", _one_array_cut),
        ("joint_model", _one_array_cut),
        ("favouritism", _no_arrays),
        ("leaderboard", _other_version),
    ],
)
def test_a_saved_section_that_cannot_merge_makes_the_tail_load_read_every_record(
    section: str, malform: Callable[[SavedSection], SavedSection], tmp_path: Path
) -> None:
    """Before the fix the section was summarized over ``records``, which a tail load fills
    with the new sessions alone (ADR 0085): wrong numbers, and the file never rewritten."""
    lines = STORES["independent-3-missing"]()
    store = tmp_path / "store.jsonl"
    report, logs = report_after_a_malformed_section(
        store, lines[: len(lines) * 3 // 4], section, malform, lambda: _report(store)
    )
    assert recomputed_sections(logs) == []  # never a section from the tail's tables
    rebuilt = _events(logs, REBUILT)
    assert len(rebuilt) == 1 and rebuilt[0]["reason"].startswith(ABANDONED)
    assert repr(section) in rebuilt[0]["reason"]
    _assert_cold_equal(store, report)
    saved = read_summaries(store)  # rewritten whole: the next append reads the tail again
    assert saved is not None and saved.resume is not None
    _append(store, lines[len(lines) * 3 // 4 :])
    report, logs = _logged(lambda: _report(store))
    assert len(_events(logs, LOADED)) == 1 and _events(logs, REBUILT) == []
    _assert_cold_equal(store, report)


def _rewrite_saved(store: Path, change: Callable[[Any], Any]) -> None:
    saved = read_summaries(store)
    assert saved is not None and saved.resume is not None
    assert write_summaries(store, change(saved))


def _older_release(saved: Any) -> Any:
    """The file an older release wrote: a section it did not have, another's older version."""
    versions = dict(saved.settings["sections"])
    versions.pop("fingerprints")
    versions["leaderboard"] -= 1
    sections = {name: entry for name, entry in saved.sections.items() if name != "fingerprints"}
    settings = {**saved.settings, "sections": versions}
    return dataclasses.replace(saved, settings=settings, sections=sections)


def _section_missing(saved: Any) -> Any:
    """The settings list a section the file holds no summary of."""
    sections = {name: entry for name, entry in saved.sections.items() if name != "drift"}
    return dataclasses.replace(saved, sections=sections)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (_older_release, "the summary file was made with other settings or section versions"),
        (_section_missing, "the summary file holds no summary of section 'drift'"),
    ],
)
def test_a_summary_file_with_another_section_list_reads_every_record(
    change: Callable[[Any], Any], reason: str, tmp_path: Path
) -> None:
    """Before the fix ``tail_plan`` raised ``TailRefused`` out of ``build_report``."""
    lines = STORES["independent-3-missing"]()
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(lines[: len(lines) // 2]))
    _report(store)
    _rewrite_saved(store, change)
    _append(store, lines[len(lines) // 2 : len(lines) * 3 // 4])
    steps: list[str] = []
    report, logs = _logged(lambda: _report(store, on_step=steps.append))
    assert [entry["reason"] for entry in _events(logs, REBUILT)] == [ABANDONED + reason]
    assert len(steps) == len(set(steps)) == REPORT_STEPS  # the progress bar's total, once
    _assert_cold_equal(store, report)
    _append(store, lines[len(lines) * 3 // 4 :])
    report, logs = _logged(lambda: _report(store))
    assert len(_events(logs, LOADED)) == 1 and _events(logs, REBUILT) == []
    _assert_cold_equal(store, report)


def test_a_store_that_crosses_the_dense_gate_reads_every_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The section list changes with the data: past ``MAX_TABLE_CELLS`` (counted over the
    whole store, ADR 0085) amplification and favouritism leave it."""
    lines = STORES["independent-3-missing"]()
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(lines[: len(lines) // 2]))
    connection = connection_of(store)
    try:
        cells_before = dense_table_cells(connection)
    finally:
        connection.close()
    _report(store)
    _append(store, lines[len(lines) // 2 :])
    monkeypatch.setattr(families, "MAX_TABLE_CELLS", cells_before)  # the grown store passes it
    report, logs = _logged(lambda: _report(store))
    assert [entry["reason"] for entry in _events(logs, REBUILT)] == [
        ABANDONED + "the summary file was made with other settings or section versions"
    ]
    assert report.families is not None and report.families.amplification is None
    _assert_cold_equal(store, report)


def test_a_merge_refused_under_a_tail_load_reads_every_record(tmp_path: Path) -> None:
    """Amplification's merge refuses when the store's shared display order changes (ADR
    0073): after a tail load the section must not be recomputed from the tail's tables."""
    shared = json_lines(independent_sessions(3, 60, 11, shared_order=True))
    shuffled = [
        line.replace(b'"indep-', b'"later-')
        for line in json_lines(independent_sessions(3, 30, 12, shared_order=False))
    ]
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(shared))
    _report(store)
    _append(store, shuffled)
    report, logs = _logged(lambda: _report(store))
    assert recomputed_sections(logs) == []
    rebuilt = [entry["reason"] for entry in _events(logs, REBUILT)]
    assert rebuilt == [
        ABANDONED + "section 'amplification' cannot merge the tail: "
        "amplification: the shared display order changed"
    ]
    _assert_cold_equal(store, report)


def _edit_a_prefix_byte(store: Path, tmp: Path) -> None:
    at = store.read_bytes().index(b'"score_value": ') + len(b'"score_value": ')
    with store.open("r+b") as stream:
        stream.seek(at)
        old = stream.read(1)
        stream.seek(at)
        stream.write(b"1" if old != b"1" else b"2")


def _truncate_summary_file(store: Path, tmp: Path) -> None:
    path = summaries_path(store)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _symlink_summary_file(store: Path, tmp: Path) -> None:
    path = summaries_path(store)
    shutil.copy(path, tmp / "elsewhere")
    path.unlink()
    path.symlink_to(tmp / "elsewhere")


def _summary_of_another_store(store: Path, tmp: Path) -> None:
    other = tmp / "other.jsonl"
    shutil.copy(store, other)
    _report(other)
    shutil.copy(summaries_path(other), summaries_path(store))


def _truncate_store(store: Path, tmp: Path) -> None:
    store.write_bytes(b"".join(store.read_bytes().splitlines(keepends=True)[:-40]))


def _first_line_again(store: Path, tmp: Path) -> None:
    _append(store, store.read_bytes().splitlines(keepends=True)[:1])


ATTACKS: dict[str, Callable[[Path, Path], None]] = {
    "prefix-byte-edited": _edit_a_prefix_byte,
    "summary-file-truncated": _truncate_summary_file,
    "summary-file-symlinked": _symlink_summary_file,
    "summary-file-of-another-store": _summary_of_another_store,
    "store-truncated": _truncate_store,
    "a-prefix-session-in-the-tail": _first_line_again,
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attacked_file_or_store_gives_the_cold_report(attack: str, tmp_path: Path) -> None:
    lines = STORES["independent-3-missing"]()
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(lines[: len(lines) * 2 // 3]))
    _report(store)
    ATTACKS[attack](store, tmp_path)
    _append(store, lines[len(lines) * 2 // 3 :])
    report, logs = _logged(lambda: _report(store))
    assert _events(logs, LOADED) == []
    _assert_cold_equal(store, report)
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_removed_parquet_partition_gives_the_cold_report(tmp_path: Path) -> None:
    sessions = generate_sessions(CouncilSpec(n_members=3), 96, 11)
    jsonl, parquet = tmp_path / "store.jsonl", tmp_path / "parquet"
    write_store(jsonl, sessions[:72])
    compact_store(jsonl, parquet)
    _report(parquet)
    shutil.rmtree(sorted(parquet.glob("date=*"))[0])
    write_store(jsonl, sessions)
    compact_store(jsonl, parquet)
    report, logs = _logged(lambda: _report(parquet))
    assert _events(logs, LOADED) == []
    refused = [str(entry["reason"]) for entry in _events(logs, "report_tail_load_refused")]
    assert refused and refused[0].endswith("was removed or rewritten")
    _assert_cold_equal(parquet, report)


def test_an_unwritable_summary_file_leaves_the_old_one_and_the_report_right(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read-only file system (as root a chmod stops nothing; the write's ``mkstemp``
    answers EROFS): the tail run's report is right, the old file is left as it was."""
    lines = STORES["independent-3-missing"]()
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(lines[: len(lines) // 2]))
    _report(store)
    before = summaries_path(store).read_bytes()

    def read_only(*args: object, **kwargs: object) -> tuple[int, str]:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    _append(store, lines[len(lines) // 2 :])
    with monkeypatch.context() as patched:
        patched.setattr(tempfile, "mkstemp", read_only)
        report, logs = _logged(lambda: _report(store))
    assert len(_events(logs, LOADED)) == 1
    assert len(_events(logs, "report_sessions_not_written")) == 1
    assert summaries_path(store).read_bytes() == before
    _assert_cold_equal(store, report)
