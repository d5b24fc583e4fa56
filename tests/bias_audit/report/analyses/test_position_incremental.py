"""The position section from merged coded reviews (ADR 0088): parts finish to the whole
store's ``position_bias`` bit for bit (within answers, across sessions, the randomization
test, not identified), in any merge order; a report over three appends equals the cold
report's position section exactly on JSONL and Parquet; a malformed saved summary is
refused by field and recomputed."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pytest
import structlog

from bias_audit.report.analyses.split_stores import (
    connection_of,
    independent_sessions,
    merged_in_three_orders,
    ranked_sessions,
    sections_summarized_again,
    write_parts,
)
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses.incremental_section import needs_inputs
from llm_council.bias_audit.report.analyses.position import modal_n_slots, position_bias
from llm_council.bias_audit.report.analyses.position_summary import PositionSection
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.bias_audit.report.load.session_summaries import read_summaries, write_summaries

SECTION = PositionSection(0.05)
Sessions = list[list[dict[str, Any]]]


def _recount(session: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A session's records with ``session_n_records`` (if written) matching their number."""
    if not session or "session_n_records" not in session[0]:
        return session
    return [record | {"session_n_records": len(session)} for record in session]


def _judged(sessions: Sessions, judge: str, score: Any) -> Sessions:
    """``judge``'s scores replaced by ``score(record)`` (a degenerate judge)."""
    return [
        [
            r | {"score_value": score(r)} if r["reviewer_id"] == judge and r["score_value"] else r
            for r in session
        ]
        for session in sessions
    ]


def _late_reviewer(sessions: Sessions, reviewer: str, first: int) -> Sessions:
    """``reviewer``'s reviews dropped from the first ``first`` sessions (absent from part 1)."""
    return [
        _recount([r for r in session if r["reviewer_id"] != reviewer]) if i < first else session
        for i, session in enumerate(sessions)
    ]


def _degenerate() -> Sessions:
    """judge-0 always gives 5 (a constant judge); judge-1 always puts slot A on top (its
    Wald covariance is singular: the randomization test, issue 23)."""
    sessions = independent_sessions(4, 36, 21, missing_score_rate=0.05)
    sessions = _judged(sessions, "judge-0", lambda r: 5.0)
    return _judged(sessions, "judge-1", lambda r: 10.0 if r["position"] == 0 else 1.0)


STORES = {
    "independent-3-shuffled-missing": lambda: independent_sessions(
        3,
        72,
        1,
        missing_score_rate=0.1,
        missing_review_rate=0.1,
        slot_effects=[[0.8, 0, 0]] * 3,
    ),
    "independent-9-shuffled": lambda: independent_sessions(9, 15, 2, missing_score_rate=0.05),
    "independent-9-shared-order": lambda: independent_sessions(
        9, 18, 3, shared_order=True, missing_review_rate=0.2
    ),
    "rank-5-fixed-order": lambda: ranked_sessions(5, 36, 4, truncate_rate=0.2),
    "rank-4-session-order-first-judge": lambda: ranked_sessions(
        4, 36, 5, order="session", judges=["first", "honest", "honest", "honest"]
    ),
    "independent-4-degenerate-judges": _degenerate,
    "independent-5-late-reviewer": lambda: _late_reviewer(
        independent_sessions(5, 36, 6, missing_score_rate=0.1), "judge-3", 16
    ),
}


def _parts(name: str, directory: Path) -> tuple[list[Any], Any]:
    sessions = STORES[name]()
    n = len(sessions)
    # the late reviewer's sessions come first: the first part never sees it
    cuts = [range(0, n // 3), range(n // 3, 2 * n // 3), range(2 * n // 3, n)]
    if name != "independent-5-late-reviewer":
        cuts = [range(0, n, 3), range(1, n, 3), range(2, n, 3)]
    paths = write_parts(sessions, cuts, directory)
    return [SECTION.summarize(connection_of(path)) for path in paths[:-1]], connection_of(paths[-1])


def _paths_taken(result: Any) -> set[str]:
    """Which estimators and tests a section result went through (so a case is not empty)."""
    profiles = [result.council, *result.per_reviewer]
    return {p.basis for p in profiles} | {str(getattr(p, "test_method", "")) for p in profiles}


@pytest.mark.parametrize("name", list(STORES))
def test_merged_parts_finish_to_the_whole_store_bit_for_bit(name: str, tmp_path: Path) -> None:
    assert not needs_inputs(SECTION)
    (a, b, c), whole = _parts(name, tmp_path)
    cold = position_bias(whole, 0.05)
    assert cold is not None and cold.per_reviewer and cold.mean_score
    want = repr(cold)  # repr: exact floats, and NaN equals NaN
    for merged in merged_in_three_orders(SECTION, a, b, c):
        assert repr(SECTION.finish(merged)) == want
    meta, arrays = SECTION.to_payload(SECTION.merge(SECTION.merge(a, b), c))
    json.dumps(meta)
    assert repr(SECTION.finish(SECTION.from_payload(meta, arrays))) == want
    assert repr(SECTION.finish(SECTION.summarize(whole))) == want


def test_the_cases_reach_every_estimator_and_test(tmp_path: Path) -> None:
    """The stores above between them take each path of the section: within answers, across
    sessions, the randomization test and the not-identified fixed order."""
    taken: set[str] = set()
    for name in STORES:
        (tmp_path / name).mkdir()
        result = position_bias(_parts(name, tmp_path / name)[1], 0.05)
        taken |= _paths_taken(result)
    assert {"within answers", "across sessions", "none", "randomization"} <= taken


def test_the_late_reviewer_is_absent_from_the_first_part(tmp_path: Path) -> None:
    (a, b, _), _ = _parts("independent-5-late-reviewer", tmp_path)
    assert "judge-3" not in a.reviewers[a.kind_reviewer].tolist()
    assert "judge-3" in b.reviewers[b.kind_reviewer].tolist()


def test_the_modal_size_follows_the_queries_rule() -> None:
    """Most sessions; a tie goes to the larger size, and a missing size (NULL) ranks last,
    as DuckDB's ``ORDER BY count DESC, n_candidates DESC`` (NULLS LAST) does."""
    assert modal_n_slots([(3, 5), (4, 5)]) == 4
    assert modal_n_slots([(None, 5), (3, 5)]) == 3
    assert modal_n_slots([(None, 6), (3, 5)]) is None
    assert modal_n_slots([(1, 9), (3, 5)]) is None
    assert modal_n_slots([]) is None
    connection = duckdb.connect()  # the reference: the query position.py ran before ADR 0088
    for sizes in ([(3, 5), (4, 5)], [(None, 5), (3, 5)], [(None, 6), (3, 5)], [(5, 2), (9, 2)]):
        connection.execute("CREATE OR REPLACE TABLE scored (session INTEGER, n_candidates INTEGER)")
        rows = [(size, 1000 * i + s) for i, (size, n) in enumerate(sizes) for s in range(n)]
        connection.executemany("INSERT INTO scored VALUES (?, ?)", [[s, z] for z, s in rows])
        row = connection.execute(
            """SELECT n_candidates FROM scored GROUP BY n_candidates
               ORDER BY count(DISTINCT session) DESC, n_candidates DESC LIMIT 1"""
        ).fetchone()
        want = None if row is None or row[0] is None or row[0] < 2 else int(row[0])
        assert modal_n_slots(sizes) == want, sizes


def _broken(arrays: dict[str, np.ndarray], field: str) -> dict[str, np.ndarray]:
    broken = dict(arrays)
    if field == "cell_score":
        broken[field] = np.where(np.arange(arrays[field].size) == 0, np.nan, arrays[field])
    elif field == "run_length":
        broken[field] = arrays[field][:-1]  # another length than run_session
    elif field == "cell_kind":
        broken[field] = arrays[field] + 10_000  # a code out of range
    elif field == "kind_size":
        broken[field] = arrays[field] + 1  # a size the size table does not count
    elif field == "kind_reviewer":
        broken[field] = arrays[field][:-1]
    return broken


@pytest.mark.parametrize(
    "field", ["cell_score", "run_length", "cell_kind", "kind_size", "kind_reviewer"]
)
def test_a_malformed_payload_is_refused_naming_the_field(field: str, tmp_path: Path) -> None:
    (a, _, _), _ = _parts("independent-3-shuffled-missing", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    with pytest.raises(ValueError, match=repr(field)):
        SECTION.from_payload(meta, _broken(dict(arrays), field))
    with pytest.raises(ValueError, match=repr(field)):
        SECTION.from_payload(meta, {k: v for k, v in arrays.items() if k != field})


def _report_position(store: Path, **options: Any) -> str:
    report = build_report(store, n_resamples=20, seed=3, reproducible=True, **options).to_dict()
    return json.dumps(report["position"], sort_keys=True, allow_nan=True)


def _lines(sessions: Sessions) -> list[bytes]:
    return [(json.dumps(record) + "\n").encode() for session in sessions for record in session]


def _cuts(n_lines: int) -> list[int]:
    # not at session boundaries: a session straddles each cut
    return [int(n_lines * share) + 3 for share in (0.35, 0.6, 0.8)] + [n_lines]


def _appended(lines: list[bytes], tmp_path: Path, parquet: bool) -> list[tuple[str, str]]:
    """(incremental, cold) position sections after each of three appends and the last."""
    jsonl = tmp_path / "store.jsonl"
    store = tmp_path / "parquet" if parquet else jsonl
    jsonl.write_bytes(b"")
    done, pairs = 0, []
    for step, cut in enumerate(_cuts(len(lines))):
        with jsonl.open("ab") as stream:
            stream.write(b"".join(lines[done:cut]))
        done = cut
        if parquet:
            compact_store(jsonl, store)
        structlog.reset_defaults()
        with structlog.testing.capture_logs() as logs:
            incremental = _report_position(store)
        rebuilt = [e for e in logs if e["event"] == "report_sessions_rebuilt"]
        assert len(rebuilt) == (1 if step == 0 else 0), rebuilt
        assert not [e for e in logs if e["event"] == "report_section_recomputed"]
        pairs.append((incremental, _report_position(store, session_summaries=False)))
    saved = read_summaries(store)
    assert saved is not None and "position" in saved.sections
    return pairs


@pytest.mark.parametrize(
    ("name", "parquet"),
    [
        ("independent-3-shuffled-missing", False),
        ("independent-9-shared-order", False),
        ("rank-5-fixed-order", False),
        ("independent-5-late-reviewer", False),
        ("independent-4-degenerate-judges", True),
        ("independent-9-shuffled", True),
    ],
)
def test_three_appends_equal_the_cold_reports_position(
    name: str, parquet: bool, tmp_path: Path
) -> None:
    pairs = _appended(_lines(STORES[name]()), tmp_path, parquet)
    for incremental, cold in pairs:
        assert incremental == cold
    assert json.loads(pairs[-1][0]) is not None


def test_a_malformed_saved_position_summary_is_recomputed(tmp_path: Path) -> None:
    """A sealed file whose position payload does not fit together: the section is
    summarized again over every session, the report's position is the cold one."""
    lines = _lines(STORES["independent-3-shuffled-missing"]())
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(lines[: len(lines) // 2]))
    _report_position(store)
    saved = read_summaries(store)
    assert saved is not None and "position" in saved.sections
    payload = saved.sections["position"]
    arrays = _broken(dict(payload.arrays), "kind_reviewer")
    sections = {**saved.sections, "position": replace(payload, arrays=arrays)}
    assert write_summaries(store, replace(saved, sections=sections))
    with store.open("ab") as stream:
        stream.write(b"".join(lines[len(lines) // 2 :]))
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as logs:
        incremental = _report_position(store)
    recomputed = sections_summarized_again(logs)
    assert [e["section"] for e in recomputed] == ["position"]
    assert "'kind_reviewer'" in recomputed[0]["reason"]
    assert incremental == _report_position(store, session_summaries=False)


def _hostile_parts(directory: Path) -> tuple[list[Any], Any]:
    """Parts of a store with a session of the largest INTEGER size (its reviews at slot
    2**31 - 2: the kinds' mixed-radix key would overflow, so the row-wise table is used),
    and a first part with no scored review at all (every review failed to parse)."""
    sessions = independent_sessions(4, 30, 8, missing_score_rate=0.1)
    huge = 2**31 - 1
    sessions[5] = [
        r | {"n_candidates": huge, "position": huge - 1 - r["position"]} for r in sessions[5]
    ]
    unscored = [[r | {"score_value": None} for r in session] for session in sessions[:6]]
    n = len(sessions)
    paths = write_parts(
        [*unscored, *sessions[6:]], [range(0, 6), range(6, 18), range(18, n)], directory
    )
    return [SECTION.summarize(connection_of(path)) for path in paths[:-1]], connection_of(paths[-1])


def test_huge_session_sizes_and_a_part_without_scores_merge_exactly(tmp_path: Path) -> None:
    (a, b, c), whole = _hostile_parts(tmp_path)
    assert a.cell_kind.size == 0 and a.reviewers.size == 4  # reviewers kept, no review
    want = repr(position_bias(whole, 0.05))
    assert want != "None"
    for merged in (SECTION.merge(SECTION.merge(a, b), c), SECTION.merge(c, SECTION.merge(b, a))):
        assert repr(SECTION.finish(merged)) == want
        meta, arrays = SECTION.to_payload(merged)
        assert repr(SECTION.finish(SECTION.from_payload(meta, arrays))) == want


def test_huge_session_sizes_keep_their_kinds(tmp_path: Path) -> None:
    """The row-wise kinds table (the key would overflow) names each review's own kind."""
    sessions = independent_sessions(3, 4, 9)
    huge = 2**31 - 1
    sessions[0] = [r | {"n_candidates": huge, "position": huge - 1} for r in sessions[0]]
    path = write_parts(sessions, [], tmp_path)[-1]
    summary = SECTION.summarize(connection_of(path))
    got = sorted(
        zip(
            summary.kind_size[summary.cell_kind].tolist(),
            summary.kind_slot[summary.cell_kind].tolist(),
            summary.cell_score.tolist(),
            strict=True,
        )
    )
    want = sorted(
        (r["n_candidates"], r["position"], float(r["score_value"]))
        for session in sessions
        for r in session
        if r["score_value"] is not None
    )
    assert got == want


def test_names_that_sort_differently_by_case_accent_or_script_merge_exactly(
    tmp_path: Path,
) -> None:
    """The merged name tables are sorted by Python (code points), the full run's indices by
    DuckDB (UTF-8 bytes): names where other orders disagree must land alike."""
    names = ["judge-Z", "judge-a", "judge-é", "JUDGE-日本", "judge-1"]
    rename = {f"judge-{i}": name for i, name in enumerate(names)}
    sessions = [
        [
            r
            | {
                "reviewer_id": rename[r["reviewer_id"]],
                "model_id": rename[r["model_id"]],
                "session_id": f"s-{'AbÄ日'[i % 4]}-{i}",
            }
            for r in session
        ]
        for i, session in enumerate(independent_sessions(5, 24, 10, missing_score_rate=0.1))
    ]
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], tmp_path)
    a, b, c = (SECTION.summarize(connection_of(path)) for path in paths[:-1])
    whole = connection_of(paths[-1])
    want = repr(position_bias(whole, 0.05))
    assert all(name in want for name in names)
    assert repr(SECTION.finish(SECTION.merge(SECTION.merge(c, a), b))) == want
