"""The council's reliability from merged coded ratings (ADR 0086): parts finish to the
whole store's section bit for bit (the session bootstrap's interval and every "alpha
without" included), in any merge order and with any rank-only reviewers; malformed
payloads are refused by field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import (
    connection_of,
    independent_sessions,
    ranked_sessions,
    write_parts,
)
from llm_council.bias_audit.report.analyses.incremental_section import needs_inputs
from llm_council.bias_audit.report.analyses.reliability import council_reliability
from llm_council.bias_audit.report.analyses.reliability_summary import ReliabilitySection

SECTION = ReliabilitySection(n_resamples=30, seed=7)

STORES = {
    "independent-3-missing": lambda: independent_sessions(
        3, 40, 1, missing_score_rate=0.1, missing_review_rate=0.1
    ),
    "independent-9-shared-order": lambda: independent_sessions(
        9, 20, 3, shared_order=True, missing_review_rate=0.2
    ),
    "rank-4-integer-scores": lambda: ranked_sessions(4, 40, 4, scores=True, order="reviewer"),
    "independent-4-constant-judge": lambda: [
        [r | {"score_value": 5.0} if r["reviewer_id"] == "judge-0" else r for r in session]
        for session in independent_sessions(4, 40, 21, missing_score_rate=0.05)
    ],
}


def _parts(name: str, directory: Path):
    sessions = STORES[name]()
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], directory)
    summaries = [SECTION.summarize(connection_of(path)) for path in paths[:-1]]
    return summaries, connection_of(paths[-1])


@pytest.mark.parametrize("name", list(STORES))
def test_merged_parts_finish_to_the_whole_store_bit_for_bit(name: str, tmp_path: Path) -> None:
    assert needs_inputs(SECTION)
    (a, b, c), whole = _parts(name, tmp_path)
    reviewers = sorted(
        {str(r[0]) for r in whole.execute("SELECT DISTINCT reviewer FROM records").fetchall()}
    )
    for rank in (set(), {reviewers[0]}):
        cold = council_reliability(whole, rank, n_resamples=30, seed=7)
        assert cold.alphas and cold.n_units > 0 and cold.resolution  # something to compare
        want = repr(cold)  # repr: exact floats, and NaN equals NaN
        for merged in (
            SECTION.merge(SECTION.merge(a, b), c),
            SECTION.merge(a, SECTION.merge(b, c)),
            SECTION.merge(SECTION.merge(c, a), b),
        ):
            assert repr(SECTION.finish(merged, rank_reviewers=rank)) == want
        meta, arrays = SECTION.to_payload(SECTION.merge(SECTION.merge(a, b), c))
        json.dumps(meta)
        again = SECTION.from_payload(meta, arrays)
        assert repr(SECTION.finish(again, rank_reviewers=rank)) == want


@pytest.mark.parametrize(
    "field", ["cell_score", "cell_reviewer", "count_n", "scales", "cell_model"]
)
def test_a_malformed_payload_is_refused_naming_the_field(field: str, tmp_path: Path) -> None:
    (a, _, _), _ = _parts("independent-3-missing", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    broken = dict(arrays)
    if field == "cell_score":
        broken[field] = np.where(np.arange(arrays[field].size) == 0, np.inf, arrays[field])
    elif field == "count_n":
        broken[field] = arrays[field] - 100
    elif field == "scales":
        broken[field] = arrays[field][:, :1]
    else:
        broken[field] = arrays[field] + 10_000
    with pytest.raises(ValueError, match=repr(field)):
        SECTION.from_payload(meta, broken)
    with pytest.raises(ValueError, match=repr(field)):
        SECTION.from_payload(meta, {k: v for k, v in arrays.items() if k != field})


def test_the_name_tables_are_in_python_order_and_the_codes_point_into_them() -> None:
    """The summary's codes come from DuckDB (byte order of UTF-8 = Python's code point
    order); names that sort differently by case, accents or width must land where Python's
    ``sorted`` puts them, and each code must name its own row's value."""
    import duckdb

    names = ["judge-Z", "judge-a", "judge-é", "judge-日本", "judge-1", "JUDGE"]
    rows = []
    for s, session in enumerate(["s-b", "s-A", "s-ä"]):
        for r, reviewer in enumerate(names):
            for m, model in enumerate(["m-é", "m-B", "m-a"]):
                rows.append((session, model, reviewer, 1.0, 10.0, float(1 + (s + r + m) % 10)))
    connection = duckdb.connect()
    connection.execute(
        """CREATE TABLE records (session_id VARCHAR, model VARCHAR, reviewer VARCHAR,
           scale_low DOUBLE, scale_high DOUBLE, score DOUBLE, is_self BOOLEAN)"""
    )
    connection.executemany(
        "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, false)", [list(row) for row in rows]
    )
    summary = ReliabilitySection(n_resamples=10, seed=0).summarize(connection)
    assert list(summary.reviewers) == sorted(names)
    assert list(summary.sessions) == sorted(["s-b", "s-A", "s-ä"])
    assert list(summary.models) == sorted(["m-é", "m-B", "m-a"])
    got = sorted(
        zip(
            summary.sessions[summary.cell_session].tolist(),
            summary.models[summary.cell_model].tolist(),
            summary.reviewers[summary.cell_reviewer].tolist(),
            summary.cell_score.tolist(),
            strict=True,
        )
    )
    assert got == sorted((s, m, r, score) for s, m, r, _, _, score in rows)
