"""The tail load (ADR 0081) gives what a full load gives: the new sessions' ``records`` rows,
the whole store's header counts and warnings, and the incremental sections' results; and
it refuses (a cold run, equal to the full recompute) whatever it cannot trust.

The report's gate is closed while any section is a full recompute, so these tests drive
the gate-open steps directly (:mod:`tail_report`)."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import structlog

from bias_audit.report.load.tail_report import cold_results, load, run_all_incremental
from generators.independent_council import CouncilSpec, generate_sessions, write_store
from generators.rank_council import RankCouncilSpec
from generators.rank_council import generate_sessions as rank_sessions
from generators.rank_council import write_store as write_rank_store
from llm_council.bias_audit.report.load import parquet_compaction
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.bias_audit.report.load.session_summaries import read_summaries, summaries_path

REFUSED = "report_tail_load_refused"


def _independent(tmp_path: Path, n_members: int, n_sessions: int, **spec: object) -> list[bytes]:
    path = tmp_path / "source.jsonl"
    sessions = generate_sessions(CouncilSpec(n_members=n_members, **spec), n_sessions, 11)  # type: ignore[arg-type]
    write_store(path, sessions)
    return path.read_bytes().splitlines(keepends=True)


def _rank(tmp_path: Path, n_members: int, n_sessions: int, **spec: object) -> list[bytes]:
    path = tmp_path / "source.jsonl"
    write_rank_store(
        path, rank_sessions(RankCouncilSpec(n_members=n_members, **spec), n_sessions, 12)
    )  # type: ignore[arg-type]
    return path.read_bytes().splitlines(keepends=True)


STORES: dict[str, Callable[[Path], list[bytes]]] = {
    "independent-3-missing": lambda p: _independent(
        p, 3, 90, missing_score_rate=0.1, missing_review_rate=0.1
    ),
    "independent-9-shared-order": lambda p: _independent(p, 9, 14, shared_order=True),
    "rank-3-fixed-order": lambda p: _rank(p, 3, 120, order="fixed", missing_review_rate=0.1),
    "rank-9-shuffled": lambda p: _rank(p, 9, 14, order="reviewer", truncate_rate=0.1),
}


def _append(store: Path, lines: list[bytes]) -> None:
    with store.open("ab") as stream:
        stream.write(b"".join(lines))


def _refusals(run: Callable[[], object]) -> tuple[object, list[str]]:
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as logs:
        outcome = run()
    return outcome, [str(entry["reason"]) for entry in logs if entry["event"] == REFUSED]


def _rows(store: Path, *, tail: bool) -> tuple[list[tuple[object, ...]], bool]:
    """The ``records`` rows (without the dense session index) a load gives, and whether it
    was the tail load."""
    loaded, used_tail = load(store, tail=tail)
    try:
        rows = loaded.connection.execute(
            "SELECT * EXCLUDE (session) FROM records ORDER BY ALL"
        ).fetchall()
    finally:
        loaded.connection.close()
    return rows, used_tail


def _assert_equals_full_load(store: Path) -> bool:
    """The tail load's rows are the full load's rows of the same sessions, its header the
    full load's header; the all-incremental run equals the cold results. Returns whether
    the run read only the tail."""
    tail_rows, used_tail = _rows(store, tail=True)
    full_rows, _ = _rows(store, tail=False)
    tail_sessions = {row[0] for row in tail_rows}
    assert tail_rows == [row for row in full_rows if row[0] in tail_sessions]
    if used_tail:
        assert len(tail_rows) < len(full_rows)
    run = run_all_incremental(store)
    header, results = cold_results(store)
    assert run.used_tail == used_tail
    assert run.header == header
    assert run.results == results
    return used_tail


@pytest.mark.parametrize("name", list(STORES))
def test_appends_read_only_the_tail_and_equal_a_full_load(name: str, tmp_path: Path) -> None:
    lines = STORES[name](tmp_path)
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"")
    done, used = 0, []
    # cut mid-session: a session straddles every cut
    for cut in [int(len(lines) * share) + 3 for share in (0.45, 0.7, 0.85)] + [len(lines)]:
        _append(store, lines[done:cut])
        done = cut
        used.append(_assert_equals_full_load(store))
    assert used == [False, True, True, True]
    saved = read_summaries(store)
    assert saved is not None and saved.resume is not None
    assert 0 < saved.resume.offset < store.stat().st_size


@pytest.fixture
def summarized(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """A store with a saved resume point at 70% of its lines, and the lines not written."""
    lines = STORES["independent-3-missing"](tmp_path)
    store = tmp_path / "store.jsonl"
    cut = int(len(lines) * 0.7) + 2
    store.write_bytes(b"".join(lines[:cut]))
    run_all_incremental(store)
    saved = read_summaries(store)
    assert saved is not None and saved.resume is not None
    return store, lines[cut:]


def _line_of(record: dict[str, object]) -> bytes:
    return (json.dumps(record) + "\n").encode()


def test_a_torn_last_line_and_an_unknown_version_in_the_tail(
    summarized: tuple[Path, list[bytes]],
) -> None:
    store, rest = summarized
    odd = json.loads(rest[0])
    odd.update(schema_version=99, session_id="from-the-future")
    _append(store, [*rest[:30], _line_of(odd), rest[30][:25]])  # the last line torn
    assert _assert_equals_full_load(store)
    full = load_store(store)
    full.connection.close()
    assert full.n_unknown_version == 1 and full.n_unreadable == 1
    assert any("the last line is incomplete" in warning for warning in full.warnings)
    _append(store, [rest[30][25:], *rest[31:]])  # the torn line completed
    assert _assert_equals_full_load(store)


def _big_filler(tmp_path: Path) -> list[bytes]:
    """More than 64 KiB of whole sessions of other ids."""
    lines = _independent(tmp_path, 3, 120)
    return [line.replace(b'"indep-', b'"filler-') for line in lines]


def test_an_incomplete_session_is_folded_as_incomplete_and_forces_a_cold_run_when_completed(
    tmp_path: Path,
) -> None:
    counted = _rank(tmp_path, 4, 3)  # version 2: lines carry session_n_records
    first = json.loads(counted[0])["session_id"]
    of_first = [line for line in counted if json.loads(line)["session_id"] == first]
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join([*of_first[:5], *_big_filler(tmp_path)]))
    run = run_all_incremental(store)
    assert run.header["n_incomplete_sessions"] == 1
    assert run.plan.resume is not None
    assert first in run.plan.resume.other_session_ids.tolist()
    assert run.plan.resume.counts.n_incomplete_sessions == 1
    others = [line for line in counted if json.loads(line)["session_id"] != first]
    _append(store, others)  # two more whole sessions: the tail load merges them
    assert _assert_equals_full_load(store)
    _append(store, of_first[5:])  # the session completes, far after the resume offset
    used_tail, refusals = _refusals(lambda: _assert_equals_full_load(store))
    assert used_tail is False
    assert refusals[0].startswith("1 session(s) of the tail already have lines in the prefix")
    full = load_store(store)
    full.connection.close()
    assert full.n_incomplete_sessions == 0


def test_an_interleaved_session_moves_the_resume_offset_before_its_first_line(
    tmp_path: Path,
) -> None:
    lines = _independent(tmp_path, 3, 10)
    spread = [line.replace(b'"indep-', b'"spread-') for line in lines[:9]]
    filler = _big_filler(tmp_path)
    store = tmp_path / "store.jsonl"
    # one session's lines: one early, the rest in the store's last 64 KiB
    store.write_bytes(b"".join([*filler[:200], spread[0], *filler[200:], *spread[1:]]))
    first_line_at = len(b"".join(filler[:200]))
    run = run_all_incremental(store)
    assert run.plan.resume is not None
    assert run.plan.resume.offset <= first_line_at
    _append(store, lines[9:])
    assert _assert_equals_full_load(store)


def _edit_in_place(store: Path, after: bytes) -> None:
    """Change the byte after the first ``after`` in the store, keeping its size and inode."""
    at = store.read_bytes().index(after) + len(after)
    with store.open("r+b") as stream:
        stream.seek(at)
        old = stream.read(1)
        stream.seek(at)
        stream.write(b"1" if old != b"1" else b"2")


ATTACKS: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "folded-line-again": (
        lambda store, tmp: _append(store, store.read_bytes().splitlines(keepends=True)[:1]),
        "1 session(s) of the tail already have lines in the prefix",
    ),
    "store-concatenated-with-itself": (
        lambda store, tmp: _append(store, [store.read_bytes()]),
        "session(s) of the tail already have lines in the prefix",
    ),
    "prefix-score-edited-in-place": (
        lambda store, tmp: _edit_in_place(store, b'"score_value": '),
        "the prefix's bytes changed (SHA-256 differs)",
    ),
    "prefix-unread-field-edited-in-place": (
        # a field the report does not read: ADR 0073's digests would pass it, the hash not
        lambda store, tmp: _edit_in_place(store, b'"council_config_hash": "'),
        "the prefix's bytes changed (SHA-256 differs)",
    ),
    "store-truncated": (
        lambda store, tmp: store.write_bytes(
            b"".join(store.read_bytes().splitlines(keepends=True)[:-30])
        ),
        "the store no longer extends what was summarized",
    ),
    "store-replaced": (
        lambda store, tmp: (
            (tmp / "copy").write_bytes(store.read_bytes()),
            os.replace(tmp / "copy", store),
        ),
        "the store no longer extends what was summarized",
    ),
    "summary-of-another-store": (
        lambda store, tmp: (
            shutil.copy(store, tmp / "other.jsonl"),
            run_all_incremental(tmp / "other.jsonl"),
            shutil.copy(summaries_path(tmp / "other.jsonl"), summaries_path(store)),
        ),
        "no verified summary file",
    ),
}


#: attacks after which a session's lines lie at both ends of the store for good
SPREAD_FOR_GOOD = ("folded-line-again", "store-concatenated-with-itself")


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_what_the_tail_load_cannot_trust_gives_a_cold_run_equal_to_the_full_load(
    attack: str, summarized: tuple[Path, list[bytes]], tmp_path: Path
) -> None:
    store, rest = summarized
    damage, reason = ATTACKS[attack]
    damage(store, tmp_path)
    _append(store, rest[:40])
    used_tail, refusals = _refusals(lambda: _assert_equals_full_load(store))
    assert used_tail is False
    assert reason in refusals[0]
    # the cold run saved a new resume point: the next append reads the tail again, unless
    # a session now has lines at both ends of the store (no offset can leave it whole)
    _append(store, rest[40:])
    assert _assert_equals_full_load(store) == (attack not in SPREAD_FOR_GOOD)


def test_a_symlinked_store_reads_its_target_s_tail(tmp_path: Path) -> None:
    lines = STORES["independent-3-missing"](tmp_path)
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"".join(lines[: len(lines) // 2]))
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    run_all_incremental(link)
    assert summaries_path(link) == summaries_path(target)
    _append(target, lines[len(lines) // 2 :])
    assert _assert_equals_full_load(link)


def test_parquet_reads_only_new_part_files_and_a_merged_day_forces_one_cold_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bias-compact`` adds a part file for each day that gains sessions, a new day or one
    already compacted, and the tail load reads the new files alone (ADR 0093); a day merged
    past ``MAX_PARTS_PER_DAY`` removes saved files: one cold run, then the tail again."""
    monkeypatch.setattr(parquet_compaction, "MAX_PARTS_PER_DAY", 3)
    sessions = generate_sessions(CouncilSpec(n_members=3, missing_score_rate=0.1), 108, 11)
    jsonl, parquet = tmp_path / "store.jsonl", tmp_path / "parquet"
    used = []
    # one session an hour: days 1-2, day 3, then day 4 three times (its parts 0, 1, 2)
    for n_sessions in (48, 72, 78, 84, 90):
        write_store(jsonl, sessions[:n_sessions])
        compact_store(jsonl, parquet)
        used.append(_assert_equals_full_load(parquet))
    assert used == [False, True, True, True, True]
    day_4 = sorted(parquet.glob("date=*"))[3]
    assert sorted(path.name for path in day_4.iterdir()) == [f"part-{n}.parquet" for n in range(3)]
    write_store(jsonl, sessions[:96])  # day 4 would hold 4 parts: merged into part-3
    assert compact_store(jsonl, parquet).days_merged == (day_4.name.removeprefix("date="),)
    used_tail, refusals = _refusals(lambda: _assert_equals_full_load(parquet))
    assert used_tail is False
    assert refusals[0].endswith("was removed or rewritten")
    saved = read_summaries(parquet)
    assert saved is not None and saved.resume is not None
    assert [part.path for part in saved.resume.files][3] == f"{day_4.name}/part-3.parquet"
    assert len(saved.resume.files) == 4
    write_store(jsonl, sessions[:102])  # day 5: after the cold run, the tail load again
    compact_store(jsonl, parquet)
    assert _assert_equals_full_load(parquet)


def test_a_parquet_file_edited_with_its_size_and_time_kept_forces_a_cold_run(
    tmp_path: Path,
) -> None:
    sessions = generate_sessions(CouncilSpec(n_members=3), 48, 11)
    jsonl, parquet = tmp_path / "store.jsonl", tmp_path / "parquet"
    write_store(jsonl, sessions)
    compact_store(jsonl, parquet)
    run_all_incremental(parquet)
    part = sorted(parquet.glob("date=*/part-0.parquet"))[0]
    status = part.stat()
    raw = bytearray(part.read_bytes())
    raw[len(raw) // 2] ^= 0x01
    part.write_bytes(bytes(raw))
    os.utime(part, ns=(status.st_atime_ns, status.st_mtime_ns))
    loaded, refusals = _refusals(lambda: load(parquet, tail=True))
    loaded[0].connection.close()  # type: ignore[index]
    assert loaded[1] is False  # type: ignore[index]
    assert refusals[0].endswith("was removed or rewritten")
