"""The reviewer profiles from merged per-session summaries (ADR 0079): merged parts finish
to the whole store's profiles bit for bit (double-double sums), in any order, on an
independent and a rank-only generator, 3-9 members, missing cells and degenerate judges;
payloads round-trip through the file's bytes; malformed payloads are refused by field."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import connection_of, varied_lengths, write_parts
from llm_council.bias_audit.report.analyses.reviewer_summary import ReviewerSummary
from llm_council.bias_audit.report.analyses.reviewers import (
    REVIEWER_PROFILES,
    ProfiledReviewers,
    leniency_fixed_by_the_scale,
    material_leniency,
    reviewer_profiles,
)
from llm_council.bias_audit.report.load.tables import rank_point_reviewers

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators import independent_council, rank_council  # noqa: E402

SECTION = REVIEWER_PROFILES


def _independent(n_members: int, n_sessions: int, seed: int, **spec: Any) -> list[list[dict]]:
    council = independent_council.CouncilSpec(n_members=n_members, **spec)
    sessions = independent_council.generate_sessions(council, n_sessions, seed)
    return [varied_lengths(session.records()) for session in sessions]


def _ranked(n_members: int, n_sessions: int, seed: int, **spec: Any) -> list[list[dict]]:
    council = rank_council.RankCouncilSpec(n_members=n_members, **spec)
    sessions = rank_council.generate_sessions(council, n_sessions, seed)
    return [varied_lengths(session.records()) for session in sessions]


def _degenerate(n_sessions: int, seed: int) -> list[list[dict]]:
    """judge-0 always gives 5 (the same score), judge-1 always puts the first slot on top."""
    out = []
    for session in _independent(4, n_sessions, seed, missing_score_rate=0.1):
        records = []
        for record in session:
            if record["reviewer_id"] == "judge-0" and record["score_value"] is not None:
                record = record | {"score_value": 5.0}
            if record["reviewer_id"] == "judge-1" and record["score_value"] is not None:
                record = record | {"score_value": 10.0 if record["position"] == 0 else 1.0}
            records.append(record)
        out.append(records)
    return out


STORES = {
    "independent-3-harsh": lambda: _independent(3, 40, 1, leniency=[-1.0, 0.0, 0.0]),
    "independent-5-missing": lambda: _independent(
        5, 36, 2, leniency=[0, 0, 0, 0, 1.2], missing_score_rate=0.15, missing_review_rate=0.2
    ),
    "independent-9-shared-order": lambda: _independent(9, 24, 3, shared_order=True),
    "independent-4-no-self": lambda: _independent(4, 30, 6, self_review=False),
    "rank-4-points": lambda: _ranked(4, 30, 4, order="reviewer"),
    "rank-4-integer-scores": lambda: _ranked(4, 30, 5, scores=True, order="session"),
    "degenerate-judges": lambda: _degenerate(30, 7),
}


def _summaries(name: str, directory: Path) -> tuple[list[ReviewerSummary], ReviewerSummary]:
    sessions = STORES[name]()
    n = len(sessions)
    # interleaved parts: session ids of one part sort between those of another
    parts = [range(0, n, 3), range(1, n, 3), range(2, n, 3)]
    paths = write_parts(sessions, parts, directory)
    summaries = [SECTION.summarize(connection_of(path)) for path in paths]
    return summaries[:-1], summaries[-1]


def _same(a: ProfiledReviewers, b: ProfiledReviewers) -> bool:
    """Equal field for field, NaN equal to NaN (bit for bit otherwise)."""
    return repr(a) == repr(b)


@pytest.mark.parametrize("name", sorted(STORES))
def test_merged_parts_finish_to_the_whole_store_bit_for_bit(name: str, tmp_path: Path) -> None:
    (a, b, c), whole = _summaries(name, tmp_path)
    cold = SECTION.finish(whole)
    assert cold.profiles and len(cold.profiles) == len(whole.reviewers)
    for merged in (
        SECTION.merge(SECTION.merge(a, b), c),
        SECTION.merge(a, SECTION.merge(b, c)),
        SECTION.merge(c, SECTION.merge(b, a)),
    ):
        np.testing.assert_array_equal(merged.counts, whole.counts)
        np.testing.assert_array_equal(merged.pairs.both, whole.pairs.both)
        np.testing.assert_array_equal(merged.pairs.cross, whole.pairs.cross)
        assert _same(SECTION.finish(merged), cold)


@pytest.mark.parametrize("name", sorted(STORES))
def test_the_connection_entry_points_agree_with_the_section(name: str, tmp_path: Path) -> None:
    connection = connection_of(write_parts(STORES[name](), [], tmp_path)[-1])
    finished = SECTION.finish(SECTION.summarize(connection))
    ranks = rank_point_reviewers(connection)
    assert finished.rank_reviewers == frozenset(ranks)
    assert finished.forced_choice == leniency_fixed_by_the_scale(connection, ranks)
    assert finished.material_leniency == material_leniency(connection)
    assert repr(reviewer_profiles(connection)) == repr(finished.profiles)


def test_a_harsh_judge_is_found_and_left_out_of_the_reference(tmp_path: Path) -> None:
    (_, _, _), whole = _summaries("independent-5-missing", tmp_path)
    finished = SECTION.finish(whole)
    by_name = {p.reviewer: p for p in finished.profiles}
    generous = by_name["judge-4"]
    assert generous.leniency_label == "generous" and not generous.in_leniency_reference
    assert 0.6 < generous.leniency.estimate < 1.8  # +1.2 against four neutral judges
    assert sorted(finished.reference) == sorted(set(by_name) - {"judge-4"})
    assert all(p.leniency_label == "neutral" for p in finished.profiles if p is not generous)


def test_rank_points_are_not_identified_and_fix_every_level(tmp_path: Path) -> None:
    (_, _, _), whole = _summaries("rank-4-points", tmp_path)
    finished = SECTION.finish(whole)
    assert finished.rank_reviewers == frozenset(whole.reviewers)
    assert finished.forced_choice and finished.level_fixed == frozenset(whole.reviewers)
    assert {p.leniency_label for p in finished.profiles} == {"not identified"}
    assert {p.spread_label for p in finished.profiles} == {"not identified"}


def test_a_constant_judge_has_no_spread_and_a_finite_leniency(tmp_path: Path) -> None:
    (_, _, _), whole = _summaries("degenerate-judges", tmp_path)
    by_name = {p.reviewer: p for p in SECTION.finish(whole).profiles}
    constant = by_name["judge-0"]
    assert constant.spread == 0.0 and constant.spread_label == "compressed"
    assert np.isfinite(constant.leniency.estimate)
    assert not np.isfinite(constant.length_correlation.estimate)  # corr of a constant: none


def test_the_payload_round_trips_through_the_files_bytes(tmp_path: Path) -> None:
    from llm_council.bias_audit.report.load.summary_payload import decode_arrays, encode_arrays

    (a, b, _), _ = _summaries("independent-5-missing", tmp_path)
    merged = SECTION.merge(a, b)
    meta, arrays = SECTION.to_payload(merged)
    directory, raw = encode_arrays(arrays)
    back = SECTION.from_payload(json.loads(json.dumps(meta)), decode_arrays(directory, raw))
    again_meta, again_arrays = SECTION.to_payload(back)
    assert again_meta == meta and again_arrays.keys() == arrays.keys()
    for key, value in arrays.items():
        np.testing.assert_array_equal(again_arrays[key], value)
    assert _same(SECTION.finish(back), SECTION.finish(merged))


_BREAKS = {
    "reviewers": lambda m, a: m.update(reviewers=["z", "a"] + m["reviewers"][2:]),
    "counts": lambda m, a: a.update(counts=-a["counts"] - 1),
    "sums": lambda m, a: a.update(sums=a["sums"] * np.inf),
    "length_sums": lambda m, a: a.update(length_sums=a["length_sums"][:1]),
    "pair_cross": lambda m, a: a.pop("pair_cross"),
    "pair_both": lambda m, a: a.update(pair_both=a["pair_both"].astype(float)),
    "pair_first_lo": lambda m, a: a.update(pair_first_lo=a["pair_first_lo"] + np.nan),
    "scale_range_counts": lambda m, a: a.update(scale_range_counts=np.zeros(7, np.int64)),
}


@pytest.mark.parametrize("field", sorted(_BREAKS))
def test_a_malformed_payload_raises_naming_the_field(field: str, tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("independent-3-harsh", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    meta, arrays = dict(meta), dict(arrays)
    _BREAKS[field](meta, arrays)
    with pytest.raises(ValueError, match=f"reviewer_profiles summary: field '{field}'"):
        SECTION.from_payload(meta, arrays)


def test_new_reviewers_in_a_later_part_are_aligned_by_name(tmp_path: Path) -> None:
    first = _independent(3, 12, 8)
    second = [
        [r | {"session_id": f"later-{i}"} for r in session]
        for i, session in enumerate(_independent(4, 12, 9, member_prefix="other"))
    ]
    paths = write_parts(first + second, [range(12), range(12, 24)], tmp_path)
    a, b, whole = (SECTION.summarize(connection_of(path)) for path in paths)
    merged = SECTION.merge(b, a)
    assert merged.reviewers == whole.reviewers and len(merged.reviewers) == 7
    assert _same(SECTION.finish(merged), SECTION.finish(whole))


@pytest.mark.parametrize("field", ["pair_cross", "reviewers", "counts"])
def test_the_runner_recomputes_a_malformed_saved_summary(field: str, tmp_path: Path) -> None:
    from llm_council.bias_audit.report.analyses.incremental_runner import (
        IncrementalPlan,
        _run_section,
    )
    from llm_council.bias_audit.report.load.session_summaries import (
        SavedSection,
        SessionSummaries,
    )

    (a, _, _), whole = _summaries("independent-3-harsh", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    meta, arrays = dict(meta), dict(arrays)
    _BREAKS[field](meta, arrays)
    saved = SessionSummaries(
        coverage={},
        settings={},
        session_ids=np.array([], dtype=str),
        session_records=np.zeros((0, 2), dtype=np.uint64),
        sections={SECTION.name: SavedSection(SECTION.version, meta, arrays)},
    )
    plan = IncrementalPlan(
        how="incremental",
        reason="",
        schema=None,
        held_schema=None,
        saved=saved,
        session_ids=np.array([], dtype=str),
        session_records=np.zeros((0, 2), dtype=np.uint64),
        coverage=None,
        settings={},
        n_new=0,
    )
    path = tmp_path / "part-3.jsonl"  # the whole store, written by _summaries
    result, folded = _run_section(connection_of(path), SECTION, plan)
    assert folded is None  # nothing saved from a summary that could not be read
    assert _same(result, SECTION.finish(whole))
