"""The header's reviewer and model counts and the dense-table gate from merged summaries
(ADR 0085): the same sets the tables hold, and a tail load decides the gate as a full load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bias_audit.report.analyses.split_stores import connection_of, write_parts
from bias_audit.report.analyses.test_causal_checks import CheckWorld, generate_check_lines
from bias_audit.report.load import tail_report
from llm_council.bias_audit.report.analyses import families
from llm_council.bias_audit.report.analyses.report_counts import REPORT_COUNTS


def _sessions() -> list[list[dict]]:
    """Scorers r1-r3 with check reviews, plus: 'ranker' only ranks, 'selfie' only reviews
    itself, 'checker' only appears in live check reviews (not a reviewer of the tables)."""
    lines = generate_check_lines(CheckWorld(n_sessions=12), 5)
    by_session: dict[str, list[dict]] = {}
    for line in lines:
        by_session.setdefault(str(line["session_id"]), []).append(line)
    sessions = []
    for index, records in enumerate(by_session.values()):
        first = records[0]
        extra = [
            first | {"reviewer_id": "ranker", "score_value": None, "rank": 1},
            first | {"reviewer_id": "selfie", "model_id": "selfie", "is_self_review": True},
        ]
        if index % 4 == 0:
            extra.append(first | {"reviewer_id": "checker", "check_kind": "repeat"})
        count = len(records) + len(extra)
        sessions.append(
            [r | {"schema_version": 2, "session_n_records": count} for r in records + extra]
        )
    return sessions


def test_merged_counts_are_the_tables_sets(tmp_path: Path) -> None:
    sessions = _sessions()
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 2), range(1, n, 2)], tmp_path)
    parts = [REPORT_COUNTS.summarize(connection_of(path)) for path in paths]
    merged = REPORT_COUNTS.merge(parts[0], parts[1])
    whole = connection_of(paths[-1])
    reviewers = tuple(
        r for (r,) in whole.execute("SELECT reviewer FROM reviewers ORDER BY 1").fetchall()
    )
    models = tuple(m for (m,) in whole.execute("SELECT model FROM models ORDER BY 1").fetchall())
    assert merged.reviewers == reviewers and merged.models == models
    assert {"ranker", "selfie"} <= set(merged.reviewers) and "checker" not in merged.reviewers
    assert "selfie" in merged.models
    assert merged.n_sessions == n
    assert merged.dense_cells == families.dense_table_cells(whole)
    meta, arrays = REPORT_COUNTS.to_payload(merged)
    assert REPORT_COUNTS.from_payload(json.loads(json.dumps(meta)), arrays) == merged
    with pytest.raises(ValueError, match="'n_sessions'"):
        REPORT_COUNTS.from_payload(meta | {"n_sessions": -1}, arrays)


def test_a_tail_load_decides_the_gate_as_a_full_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The full store crosses the gate, its tail alone does not: favouritism and
    amplification are left out on both runs (and the tail is used, not refused)."""
    store = tmp_path / "store.jsonl"
    lines = [json.dumps(r) + "\n" for s in _sessions() for r in s]
    big = [line.replace('"s0', '"t0') for line in lines]  # the same sessions, new ids
    store.write_text("".join(lines) + "".join(big[: len(big) // 2]))
    connection = connection_of(store)
    cells = families.dense_table_cells(connection)
    monkeypatch.setattr(families, "MAX_TABLE_CELLS", cells - 1)
    first = tail_report.run_all_incremental(store)
    assert "favouritism" not in first.results
    with store.open("a") as stream:  # a padding of later lines, so the tail is read
        stream.write("".join(big[len(big) // 2 :]))
    second = tail_report.run_all_incremental(store)
    assert second.used_tail
    assert "favouritism" not in second.results and "amplification" not in second.results
