"""The causal checks, the header's counts and the dense-table gate from merged summaries
(ADR 0085): summaries of disjoint sessions merge to the summary of their union, a report
after three appends equals the cold report bit for bit (JSONL and Parquet), a malformed
saved summary is recomputed, and the counts are the sets the tables hold."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import (
    connection_of,
    report_after_a_malformed_section,
    sections_summarized_again,
    write_parts,
)
from bias_audit.report.analyses.test_causal_checks import (
    CheckWorld,
    generate_check_lines,
    write_store,
)
from bias_audit.report.analyses.test_incremental_runner import (
    _cold,
    _incremental,
    _report,
    assert_same_report,
)
from bias_audit.report.load.tail_report import load, run_all_incremental
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses import families
from llm_council.bias_audit.report.analyses.causal_checks import slot_effect
from llm_council.bias_audit.report.analyses.causal_checks_summary import (
    CausalChecksSection,
    causal_checks_from_payload,
    causal_checks_payload,
)
from llm_council.bias_audit.report.analyses.families import dense_table_cells
from llm_council.bias_audit.report.analyses.report_counts import (
    REPORT_COUNTS,
    saved_counts,
    summarize_counts,
)
from llm_council.bias_audit.report.build import incremental_sections_and_settings
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.bias_audit.report.load.session_summaries import SavedSection
from llm_council.bias_audit.report.load.tables import create_analysis_tables

WORLDS = {
    # 3 reviewers, every kind, integer scores, an injected slot and padding effect
    "3-integer": (
        CheckWorld(n_sessions=30, slot_effect={"r1": 0.6}, padding_effect={"r2": 1.0}),
        1,
    ),
    # 9 reviewers, continuous scores, identity checks too
    "9-continuous": (
        CheckWorld(
            n_sessions=14,
            reviewers=tuple(f"r{i}" for i in range(9)),
            integer_scores=False,
            check_kinds=("reshuffle", "repeat", "padding", "identity"),
            identity_effect={"r3": 1.5},
        ),
        2,
    ),
}


def _lines(name: str) -> list[dict[str, Any]]:
    world, seed = WORLDS[name]
    return generate_check_lines(world, seed)


def _degenerate(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """r1 always gives 5 (repeat ICC undefined: every pair mean is one number), r2's check
    scores are missing in one session in three (missing cells)."""
    out = []
    for line in lines:
        line = dict(line)
        if line["reviewer_id"] == "r1":
            line["score_value"] = 5.0
        session = int(str(line["session_id"])[1:])
        if line["reviewer_id"] == "r2" and line.get("check_kind") and session % 3 == 0:
            line["score_value"] = None
        out.append(line)
    return out


def _as_sessions(lines: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    sessions: dict[str, list[dict[str, Any]]] = {}
    for line in lines:
        sessions.setdefault(str(line["session_id"]), []).append(line)
    return list(sessions.values())


@pytest.mark.parametrize("name", [*WORLDS, "degenerate"])
def test_summaries_of_parts_merge_to_the_summary_of_the_whole(name: str, tmp_path: Path) -> None:
    lines = _degenerate(_lines("3-integer")) if name == "degenerate" else _lines(name)
    sessions = _as_sessions(lines)
    n = len(sessions)
    order = np.random.default_rng(5).permutation(n).tolist()  # shuffled, not by id
    parts = [order[: n // 3], order[n // 3 : n // 2], order[n // 2 :]]
    *part_paths, whole_path = write_parts(sessions, parts, tmp_path)
    section = CausalChecksSection(seed=7)
    summaries = [section.summarize(connection_of(path)) for path in part_paths]
    whole = section.summarize(connection_of(whole_path))
    merged = section.merge(section.merge(summaries[0], summaries[1]), summaries[2])
    other_way = section.merge(summaries[2], section.merge(summaries[1], summaries[0]))
    for got in (merged, other_way):
        assert got.reviewers == whole.reviewers and got.session_ids == whole.session_ids
        assert got.n_check_reviews == whole.n_check_reviews
        for field in whole.rows:
            assert np.array_equal(got.rows[field], whole.rows[field]), field
        # per-session rows, each from its own session's pairs: the same bits
        assert np.array_equal(got.sums, whole.sums)
    assert repr(section.finish(merged)) == repr(section.finish(whole))
    meta, arrays = causal_checks_payload(merged)
    json.dumps(meta)  # JSON-safe
    back = causal_checks_from_payload(meta, arrays)
    assert repr(section.finish(back)) == repr(section.finish(whole))


def test_the_finished_section_equals_the_pair_level_statistics(tmp_path: Path) -> None:
    """The estimates from sums agree with the pair-level functions of ADR 0024 (which are
    tested against the dummy-variable sandwich, scipy and hand derivations)."""
    lines = _lines("3-integer")
    path = write_store(tmp_path / "s.jsonl", lines)
    connection = connection_of(path)
    result = CausalChecksSection(seed=0).finish(CausalChecksSection().summarize(connection))
    assert result is not None
    pairs = connection.execute(
        """SELECT c.session_id, r.position, c.position, r.score, c.score_value
           FROM check_records c JOIN records r ON r.session_id = c.session_id
                AND r.reviewer = c.reviewer_id AND r.model = c.model_id
           WHERE c.check_kind = 'reshuffle' AND c.reviewer_id = 'r1'"""
    ).fetchall()
    sessions = np.asarray([row[0] for row in pairs])
    x = np.asarray([row[2] - row[1] for row in pairs], dtype=float)
    y = np.asarray([row[4] - row[3] for row in pairs], dtype=float)
    want = slot_effect(x, y, sessions)
    got = next(r for r in result.reviewers if r.reviewer == "r1").slot_effect
    assert got is not None
    assert got.estimate == pytest.approx(want.estimate, rel=1e-12)
    assert got.ci_high == pytest.approx(want.ci_high, rel=1e-12)
    assert got.n_sessions == want.n_sessions and got.n_pairs == want.n_pairs


def _causal_and_header(report: str) -> dict[str, Any]:
    parsed = json.loads(report)
    return {key: parsed[key] for key in ("causal_checks", "n_reviewers", "n_models")}


def _cuts(n_lines: int) -> list[int]:
    return [int(n_lines * share) + 3 for share in (0.35, 0.6, 0.8)] + [n_lines]  # mid-session


@pytest.mark.parametrize("name", [*WORLDS, "degenerate"])
def test_three_appends_to_jsonl_equal_the_cold_report(name: str, tmp_path: Path) -> None:
    lines = _degenerate(_lines("3-integer")) if name == "degenerate" else _lines(name)
    encoded = [(json.dumps(line) + "\n").encode() for line in lines]
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"")
    done = 0
    for cut in _cuts(len(encoded)):
        with store.open("ab") as stream:
            stream.write(b"".join(encoded[done:cut]))
        done = cut
        incremental, _rebuilt = _incremental(store)
        cold = _cold(store)
        assert _causal_and_header(incremental) == _causal_and_header(cold)
        assert_same_report(incremental, cold)
    assert json.loads(incremental)["causal_checks"] is not None


def test_three_compactions_into_parquet_equal_the_cold_report(tmp_path: Path) -> None:
    encoded = [(json.dumps(line) + "\n").encode() for line in _lines("3-integer")]
    jsonl, parquet = tmp_path / "store.jsonl", tmp_path / "parquet"
    jsonl.write_bytes(b"")
    done = 0
    for step, cut in enumerate(_cuts(len(encoded))):
        with jsonl.open("ab") as stream:
            stream.write(b"".join(encoded[done:cut]))
        done = cut
        compact_store(jsonl, parquet)
        incremental, rebuilt = _incremental(parquet)
        assert rebuilt == (["no verified summary file"] if step == 0 else [])
        cold = _cold(parquet)
        assert _causal_and_header(incremental) == _causal_and_header(cold)
        assert_same_report(incremental, cold)
    assert json.loads(incremental)["causal_checks"] is not None  # compaction kept the checks


@pytest.mark.parametrize(
    ("section", "field"), [("causal_checks", "sums"), ("report_counts", "reviewers")]
)
def test_a_malformed_saved_summary_is_recomputed(section: str, field: str, tmp_path: Path) -> None:
    encoded = [(json.dumps(line) + "\n").encode() for line in _lines("3-integer")]
    store = tmp_path / "store.jsonl"

    def malform(payload: SavedSection) -> SavedSection:
        if field in payload.arrays:
            arrays = dict(payload.arrays)
            arrays[field] = arrays[field][:, :-1]
            return replace(payload, arrays=arrays)
        return replace(payload, meta={**payload.meta, field: ["z", "a"]})  # not sorted

    incremental, logs = report_after_a_malformed_section(
        store, encoded, section, malform, lambda: _report(store)
    )
    recomputed = sections_summarized_again(logs)
    assert [entry["section"] for entry in recomputed] == [section]
    assert repr(field) in recomputed[0]["reason"]
    assert_same_report(incremental, _cold(store))


def _odd_reviewers_store(tmp_path: Path) -> Path:
    """Reviewers the tables must count like any other: ``ranker`` only ranks, ``selfie``
    only reviews its own answer, ``checker`` only appears in live check records (not a
    reviewer of ``records``), and ``m9`` is a model only ``selfie`` saw."""
    lines = _lines("3-integer")
    extra = []
    for line in lines:
        if line["reviewer_id"] != "r1" or line.get("check_kind"):
            continue
        extra.append(
            line | {"reviewer_id": "ranker", "score_value": None, "rank": line["position"] + 1}
        )
        if line["position"] == 0:
            extra.append(line | {"reviewer_id": "selfie", "model_id": "m9", "is_self_review": True})
        extra.append(line | {"reviewer_id": "checker", "check_kind": "repeat"})
    return write_store(tmp_path / "odd.jsonl", lines + extra)


def test_the_header_counts_are_the_reviewers_and_models_the_tables_hold(tmp_path: Path) -> None:
    store = _odd_reviewers_store(tmp_path)
    connection = connection_of(store)
    tables = connection.execute(
        "SELECT (SELECT count(*) FROM reviewers), (SELECT count(*) FROM models)"
    ).fetchone()
    counts = summarize_counts(connection)
    assert "ranker" in counts.reviewers and "selfie" in counts.reviewers and "m9" in counts.models
    assert "checker" not in counts.reviewers  # only in check_records
    assert (len(counts.reviewers), len(counts.models)) == tables
    report = build_report(store, n_resamples=20, seed=3)
    assert (report.n_reviewers, report.n_models) == tables
    # after an append the header comes from the merged summaries, and still matches
    with store.open("a") as stream:
        for line in _lines("9-continuous")[:200]:
            stream.write(json.dumps(line | {"session_id": f"t{line['session_id']}"}) + "\n")
    merged = build_report(store, n_resamples=20, seed=3)
    tables = (
        connection_of(store)
        .execute("SELECT (SELECT count(*) FROM reviewers), (SELECT count(*) FROM models)")
        .fetchone()
    )
    assert (merged.n_reviewers, merged.n_models) == tables


def test_a_tail_load_decides_the_dense_gate_as_a_full_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full store's dense tables cross the gate while the tail's alone do not: with the
    skipped sessions' saved counts the tail load leaves out amplification and favouritism,
    as the full load does."""
    encoded = [(json.dumps(line) + "\n").encode() for line in _lines("3-integer")]
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(encoded[: int(len(encoded) * 0.8)]))
    first = run_all_incremental(store)
    assert first.saved
    with store.open("ab") as stream:
        stream.write(b"".join(encoded[int(len(encoded) * 0.8) :]))
    tail, used_tail = load(store, tail=True)
    full, _ = load(store, tail=False)
    try:
        for loaded in (tail, full):
            create_analysis_tables(loaded.connection)
        assert used_tail and tail.extent is not None
        base = saved_counts(tail.extent.base_summaries)
        assert base is not None
        full_cells = dense_table_cells(full.connection)
        tail_only = dense_table_cells(tail.connection)
        assert tail_only < full_cells
        assert dense_table_cells(tail.connection, base) == full_cells
        monkeypatch.setattr(families, "MAX_TABLE_CELLS", full_cells - 1)  # between the two

        def names(connection: Any, base_counts: Any = None) -> list[str]:
            sections, _ = incremental_sections_and_settings(
                connection, seed=3, n_resamples=20, base_counts=base_counts
            )
            return [section.name for section in sections]

        assert "amplification" in names(tail.connection)  # the tail alone would keep it
        assert names(tail.connection, base) == names(full.connection)
        assert "amplification" not in names(full.connection)
        assert REPORT_COUNTS.name in names(full.connection)
    finally:
        tail.connection.close()
        full.connection.close()
