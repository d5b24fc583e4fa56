"""The council's reliability from merged Poisson-bootstrap pair-count sums (ADRs 0086,
0089): parts finish to the whole store's section bit for bit (the session bootstrap's
interval and every "alpha without" included), in any merge order; a reviewer whose
rank-only status changes refuses the merge; malformed payloads are refused by field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import (
    connection_of,
    independent_sessions,
    json_lines,
    merged_in_three_orders,
    ranked_sessions,
    report_after_a_malformed_section,
    sections_summarized_again,
    write_parts,
)
from llm_council.bias_audit.report.analyses.incremental_section import (
    SummaryNotMergeable,
    needs_inputs,
)
from llm_council.bias_audit.report.analyses.reliability_summary import (
    ReliabilitySection,
    council_reliability,
    rank_only,
)
from llm_council.bias_audit.report.load.tables import rank_point_reviewers

SECTION = ReliabilitySection(n_resamples=30, seed=7)

STORES = {
    "independent-3-missing": lambda: independent_sessions(
        3, 40, 1, missing_score_rate=0.1, missing_review_rate=0.1
    ),
    "independent-5-shuffled": lambda: independent_sessions(5, 30, 2, missing_score_rate=0.05),
    "independent-9-shared-order": lambda: independent_sessions(
        9, 20, 3, shared_order=True, missing_review_rate=0.2
    ),
    "rank-4-integer-scores": lambda: ranked_sessions(4, 40, 4, scores=True, order="reviewer"),
    "rank-9-integer-scores": lambda: ranked_sessions(9, 20, 5, scores=True, truncate_rate=0.2),
    # vendor/model-0 gives rank points (a rank-only reviewer, left out), the others scores
    "rank-4-one-rank-only": lambda: [
        [
            r | {"score_value": float(r["n_candidates"] - r["rank"] + 1)}
            if r["reviewer_id"] == "vendor/model-0" and r["rank"] is not None
            else r
            for r in session
        ]
        for session in ranked_sessions(4, 40, 8, scores=True)
    ],
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
    rank = rank_point_reviewers(whole)
    assert bool(rank) == (name == "rank-4-one-rank-only")
    cold = council_reliability(whole, rank, n_resamples=30, seed=7)
    assert cold.alphas and cold.n_units > 0 and cold.resolution  # something to compare
    assert cold.resamples == 30 and np.isfinite(cold.alphas[0].alpha.ci_low)
    assert not rank & set(cold.reviewers) and cold.rank_only_reviewers == sorted(rank)
    want = repr(cold)  # repr: exact floats, and NaN equals NaN
    for merged in merged_in_three_orders(SECTION, a, b, c):
        assert repr(SECTION.finish(merged, rank_reviewers=rank)) == want
        assert rank_only(merged.flags) == rank  # the flags combine to the profiles' rule
    meta, arrays = SECTION.to_payload(SECTION.merge(SECTION.merge(a, b), c))
    json.dumps(meta)
    again = SECTION.from_payload(meta, arrays)
    assert repr(SECTION.finish(again, rank_reviewers=rank)) == want


def test_the_summary_does_not_grow_with_the_sessions(tmp_path: Path) -> None:
    """Twice the sessions, the same arrays' sizes (the value grid and reviewers held)."""
    sessions = independent_sessions(4, 80, 9, missing_score_rate=0.05)
    paths = write_parts(sessions, [range(0, 40), range(0, 80)], tmp_path)
    sizes = []
    for path in paths[:2]:
        _, arrays = SECTION.to_payload(SECTION.summarize(connection_of(path)))
        sizes.append({name: array.size for name, array in arrays.items() if "block" in name})
    assert sizes[0] == sizes[1] and sizes[0]["block0_sums"] > 0


def test_a_reviewer_who_ranked_then_scored_refuses_the_merge(tmp_path: Path) -> None:
    """vendor/model-0 gives rank points in the first part and scores in the second: its rank
    points were left out of the first part's sums, so no exact merge exists."""
    ranked = ranked_sessions(4, 10, 6)  # rankings: every reviewer rank-only
    scored = ranked_sessions(4, 10, 7, scores=True)
    scored = [[r | {"session_id": "z" + r["session_id"]} for r in s] for s in scored]
    paths = write_parts(ranked + scored, [range(0, 10), range(10, 20)], tmp_path)
    first, second = (SECTION.summarize(connection_of(path)) for path in paths[:2])
    assert "vendor/model-0" in rank_point_reviewers(connection_of(paths[0]))
    assert "vendor/model-0" not in rank_point_reviewers(connection_of(paths[2]))
    with pytest.raises(SummaryNotMergeable, match="vendor/model-"):
        SECTION.merge(first, second)
    # the section summarized over every session (the runner's fallback) is the cold one
    whole = connection_of(paths[2])
    assert repr(SECTION.finish(SECTION.summarize(whole), rank_reviewers=set())) == repr(
        council_reliability(whole, set(), n_resamples=30, seed=7)
    )


def _broken(arrays: dict[str, np.ndarray], field: str) -> dict[str, np.ndarray]:
    broken = dict(arrays)
    if field in ("block0_sums", "count_score"):
        broken[field] = np.where(np.arange(arrays[field].size) == 0, np.inf, arrays[field].ravel())
        broken[field] = broken[field].reshape(arrays[field].shape)
    elif field == "count_n":
        broken[field] = arrays[field] - 100
    elif field == "scales":
        broken[field] = arrays[field][:, :1]
    elif field == "block0_values":
        broken[field] = arrays[field][::-1]
    else:
        broken[field] = arrays[field] + 10_000
    return broken


@pytest.mark.parametrize(
    "field",
    ["block0_sums", "count_score", "count_reviewer", "count_n", "scales", "block0_values"],
)
def test_a_malformed_payload_is_refused_naming_the_field(field: str, tmp_path: Path) -> None:
    (a, _, _), _ = _parts("independent-3-missing", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    with pytest.raises(ValueError, match=repr(field)):
        SECTION.from_payload(meta, _broken(arrays, field))
    with pytest.raises(ValueError, match=repr(field)):
        SECTION.from_payload(meta, {k: v for k, v in arrays.items() if k != field})


def test_a_payload_of_other_settings_or_a_half_sum_is_refused(tmp_path: Path) -> None:
    (a, _, _), _ = _parts("independent-3-missing", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    with pytest.raises(ValueError, match="n_resamples"):
        ReliabilitySection(n_resamples=31, seed=7).from_payload(meta, arrays)
    with pytest.raises(ValueError, match="n_resamples"):
        ReliabilitySection(n_resamples=30, seed=8).from_payload(meta, arrays)
    with pytest.raises(ValueError, match="block0_sums"):
        SECTION.from_payload(meta, arrays | {"block0_sums": arrays["block0_sums"] + 0.5})
    for bad in ({"scale": [1.0], "reviewers": []}, {"scale": [1, 10], "reviewers": ["b", "a"]}):
        with pytest.raises(ValueError, match="blocks"):
            SECTION.from_payload(meta | {"blocks": [bad]}, arrays)
    with pytest.raises(ValueError, match="reviewers"):
        SECTION.from_payload(meta | {"reviewers": "judge-0"}, arrays)


def test_the_name_tables_are_in_python_order_and_the_codes_point_into_them() -> None:
    """The summary's codes come from DuckDB (byte order of UTF-8 = Python's code point
    order); names that sort differently by case, accents or width must land where Python's
    ``sorted`` puts them, and each code must name its own row's value."""
    names = ["judge-Z", "judge-a", "judge-é", "judge-日本", "judge-1", "JUDGE"]
    rows = []
    for s, session in enumerate(["s-b", "s-A", "s-ä"]):
        for r, reviewer in enumerate(names):
            for m, model in enumerate(["m-é", "m-B", "m-a"]):
                rows.append((session, model, reviewer, 1.0, 10.0, float(1 + (s + r + m) % 10)))
    summary = ReliabilitySection(n_resamples=10, seed=0).summarize(_table_of(rows))
    assert list(summary.reviewers) == sorted(names)
    (block,) = summary.blocks
    assert list(block.reviewers) == sorted(names)
    # every answer rated by all six: 9 units, 54 ratings, 3 sessions; d = 5, and 4 with a
    # reviewer left out
    assert block.counts.tolist() == [54, 9, 3] and block.divisors.tolist() == [4, 5]
    assert summary.reviewers[int(summary.count_reviewer[0])] == sorted(names)[0]
    whole = ReliabilitySection(n_resamples=10, seed=0).finish(summary)
    # alpha without a reviewer is alpha of the store where it never was, on the same draws
    for index, name in enumerate(sorted(names)):
        store = _table_of([row for row in rows if row[2] != name])
        alone = ReliabilitySection(n_resamples=10, seed=0).finish(
            ReliabilitySection(n_resamples=10, seed=0).summarize(store)
        )
        for metric, with_all in zip(alone.alphas, whole.alphas, strict=True):
            got, want = with_all.without[index], metric.alpha
            for value, reference in zip(got.__dict__.values(), want.__dict__.values(), strict=True):
                assert value == pytest.approx(reference, abs=1e-12, nan_ok=True)
            assert np.isfinite(got.estimate)


def _table_of(rows: list[tuple]):
    """A ``records`` table of (session, model, reviewer, low, high, score) rows, no self."""
    import duckdb

    connection = duckdb.connect()
    connection.execute(
        """CREATE TABLE records (session_id VARCHAR, model VARCHAR, reviewer VARCHAR,
           scale_low DOUBLE, scale_high DOUBLE, score DOUBLE, is_self BOOLEAN,
           session INTEGER, n_candidates INTEGER)"""
    )
    sessions = sorted({row[0] for row in rows})
    if not rows:
        return connection
    connection.executemany(
        "INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, false, ?, 3)",
        [[*row, sessions.index(row[0])] for row in rows],
    )
    return connection


@pytest.mark.parametrize("n_resamples", [0, 20])
def test_no_pairs_one_session_and_an_empty_part(n_resamples: int) -> None:
    """Answers rated once each (no pair: alpha undefined, with its reason), one session (an
    estimate, no interval), and a part with nothing to sum merged with one that has."""
    section = ReliabilitySection(n_resamples=n_resamples, seed=1)
    lonely = [("s1", "m1", "r1", 1.0, 10.0, 3.0), ("s1", "m2", "r2", 1.0, 10.0, 4.0)]
    lonely.append(("s2", "m1", "r2", 1.0, 10.0, 5.0))
    summary = section.summarize(_table_of(lonely))
    assert summary.blocks[0].divisors.size == 0  # no unit with two ratings
    again = section.from_payload(*section.to_payload(summary))
    result = section.finish(again)
    assert result.n_units == 0 and result.resamples == 0
    assert all(a.undefined_reason.startswith("no answer was scored") for a in result.alphas)
    pairs = [(m, r) for m in "abc" for r in "xyz"]
    one = [("s1", m, r, 1.0, 10.0, float(i % 7 + 1)) for i, (m, r) in enumerate(pairs)]
    single = section.finish(section.summarize(_table_of(one)))
    assert single.resamples == 0 and np.isfinite(single.alphas[0].alpha.estimate)
    assert np.isnan(single.alphas[0].alpha.ci_low)
    nothing = section.summarize(_table_of([]))
    assert nothing.blocks == ()
    merged = section.merge(nothing, section.summarize(_table_of(one)))
    assert repr(section.finish(merged)) == repr(single)


@pytest.mark.parametrize("how", ["version-1", "malformed"])
def test_an_old_or_malformed_saved_summary_is_recomputed_by_the_report(
    how: str, tmp_path: Path
) -> None:
    """A saved reliability summary of version 1 (every rating as codes, ADR 0086) or one
    whose payload does not read is never merged: the report computes the section from
    every record and its reliability equals the cold report's bit for bit."""
    from llm_council.bias_audit.report import build_report
    from llm_council.bias_audit.report.load.session_summaries import SavedSection

    store = tmp_path / "store.jsonl"

    def report(**options: object) -> str:
        built = build_report(store, n_resamples=10, seed=1, reproducible=True, **options)
        return repr(built.reliability)

    def malform(payload: SavedSection) -> SavedSection:
        if how == "version-1":  # ADR 0086's arrays, as an old file holds them
            old = {"cell_session": np.zeros(3, np.int64), "cell_score": np.ones(3)}
            return SavedSection(1, {}, old)
        broken = dict(payload.arrays)
        broken["block0_sums"] = broken["block0_sums"] + 0.5
        return SavedSection(payload.version, payload.meta, broken)

    # enough sessions that the first half is folded (the store's last 64 KiB are held back)
    sessions = independent_sessions(3, 240, 1, missing_score_rate=0.1)
    incremental, logs = report_after_a_malformed_section(
        store, json_lines(sessions), "reliability", malform, report
    )
    assert [entry["section"] for entry in sections_summarized_again(logs)] == ["reliability"]
    assert incremental == report(session_summaries=False)


def test_sums_built_in_chunks_of_sessions_are_the_same_bits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary is summed a chunk of sessions at a time (memory); chunks of 7 sessions
    give the same arrays as one chunk, bit for bit."""
    from llm_council.bias_audit.report.analyses import reliability_sums

    sessions = independent_sessions(5, 40, 12, missing_score_rate=0.1, missing_review_rate=0.1)
    (path,) = write_parts(sessions, [], tmp_path)
    connection = connection_of(path)
    whole = SECTION.to_payload(SECTION.summarize(connection))[1]
    monkeypatch.setattr(reliability_sums, "CHUNK_SESSIONS", 7)
    chunked = SECTION.to_payload(SECTION.summarize(connection))[1]
    assert whole.keys() == chunked.keys()
    for name, array in whole.items():
        np.testing.assert_array_equal(chunked[name], array, err_msg=name)
