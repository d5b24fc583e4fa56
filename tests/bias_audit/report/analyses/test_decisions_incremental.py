"""Decisions affected from merged per-session summaries (ADR 0074): merged parts finish to
the whole store's result, payloads round-trip, malformed payloads are refused by field."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import connection_of, varied_lengths, write_parts
from llm_council.bias_audit.report.analyses.decisions import (
    DECISIONS,
    DecisionsAffected,
    _effects_by_code,
    decisions_affected,
)
from llm_council.bias_audit.report.analyses.decisions_summary import DecisionsSummary

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators import independent_council, rank_council  # noqa: E402


def _independent(n_members: int, n_sessions: int, seed: int, **spec: Any) -> list[list[dict]]:
    council = independent_council.CouncilSpec(n_members=n_members, **spec)
    sessions = independent_council.generate_sessions(council, n_sessions, seed)
    return [session.records() for session in sessions]


def _ranked(n_members: int, n_sessions: int, seed: int, **spec: Any) -> list[list[dict]]:
    council = rank_council.RankCouncilSpec(n_members=n_members, **spec)
    sessions = rank_council.generate_sessions(council, n_sessions, seed)
    return [varied_lengths(session.records()) for session in sessions]


def _always_five(n_sessions: int) -> list[list[dict]]:
    """An independent 4-member store where judge-0 gives every answer 5 (a degenerate
    judge: no spread, no slot or length signal)."""
    stores = _independent(4, n_sessions, 21, missing_score_rate=0.05)
    return [
        [r | {"score_value": 5.0} if r["reviewer_id"] == "judge-0" else r for r in session]
        for session in stores
    ]


STORES = {
    "independent-3-missing": lambda: _independent(
        3, 45, 1, missing_score_rate=0.1, missing_review_rate=0.1, leniency=[-1.0, 0.0, 0.5]
    ),
    "independent-5-biased": lambda: _independent(
        5,
        40,
        2,
        leniency=[-1.5, 0, 0, 0, 1.0],
        slot_effects=[[1.0, 0, 0, 0, 0]] * 5,
        verbosity=[0.8, 0, 0, 0, 0],
        quality_length_correlation=0.3,
    ),
    "independent-9-shared-order": lambda: _independent(
        9, 24, 3, shared_order=True, missing_review_rate=0.2, self_review=False
    ),
    "rank-4-integer-scores": lambda: _ranked(4, 45, 4, scores=True, order="reviewer"),
    "rank-5-always-first": lambda: _ranked(
        5, 40, 5, order="session", judges=["first", "honest", "honest", "last", "honest"]
    ),
    "independent-4-constant-judge": lambda: _always_five(40),
    "independent-3-all-constant": lambda: [
        [r | {"score_value": 7.0} for r in session] for session in _independent(3, 30, 22)
    ],
}


def _summaries(name: str, directory: Path) -> tuple[list[DecisionsSummary], DecisionsSummary]:
    sessions = STORES[name]()
    n = len(sessions)
    parts = [range(0, n // 3), range(n // 3, n - 3), range(n - 3, n)]  # the last: 3 new
    paths = write_parts(sessions, parts, directory)
    summaries = [DECISIONS.summarize(connection_of(path)) for path in paths]
    return summaries[:-1], summaries[-1]


@pytest.mark.parametrize("name", sorted(STORES))
def test_merged_parts_finish_to_the_whole_store(name: str, tmp_path: Path) -> None:
    (a, b, c), whole = _summaries(name, tmp_path)
    cold = DECISIONS.finish(whole)
    assert isinstance(cold, DecisionsAffected)
    assert cold.overall.n_sessions > 0
    if name == "independent-3-all-constant":  # every score 7: nothing to adjust, all tied
        assert cold.overall.n_changed_by_adjustments == 0
        assert cold.overall.n_ties_broken == 0
    left = DECISIONS.merge(DECISIONS.merge(a, b), c)
    right = DECISIONS.merge(a, DECISIONS.merge(b, c))
    swapped = DECISIONS.merge(c, DECISIONS.merge(b, a))
    for merged in (left, right, swapped):
        assert DECISIONS.finish(merged) == cold
        # the effects are the same least squares solution: sums added in another order
        for cold_effect, merged_effect in zip(
            _effects_by_code(whole), _effects_by_code(merged), strict=True
        ):
            assert (cold_effect is None) == (merged_effect is None)
            if cold_effect is not None and merged_effect is not None:
                assert merged_effect.leniency == pytest.approx(cold_effect.leniency, abs=1e-9)
                assert merged_effect.length_slope == pytest.approx(
                    cold_effect.length_slope, abs=1e-9
                )
                assert merged_effect.slot_effects == pytest.approx(
                    cold_effect.slot_effects, abs=1e-9
                )


def test_the_connection_entry_point_is_summarize_then_finish(tmp_path: Path) -> None:
    sessions = STORES["independent-5-biased"]()
    path = write_parts(sessions, [], tmp_path)[-1]
    connection = connection_of(path)
    result = decisions_affected(connection)
    assert result == DECISIONS.finish(DECISIONS.summarize(connection))
    assert result is not None and result.n_adjusted_reviewers == 5
    assert result.overall.n_changed_by_adjustments > 0  # planted biases move some winners


def test_the_payload_round_trips(tmp_path: Path) -> None:
    (a, b, _), _ = _summaries("independent-3-missing", tmp_path)
    merged = DECISIONS.merge(a, b)
    meta, arrays = DECISIONS.to_payload(merged)
    back = DECISIONS.from_payload(meta, arrays)
    again_meta, again_arrays = DECISIONS.to_payload(back)
    assert again_meta == meta
    assert again_arrays.keys() == arrays.keys()
    for key, value in arrays.items():
        np.testing.assert_array_equal(again_arrays[key], value)
    assert DECISIONS.finish(back) == DECISIONS.finish(merged)


def _broken(meta: dict[str, Any], arrays: dict[str, np.ndarray], how: str) -> None:
    if how == "missing array":
        del arrays["vote_score"]
    elif how == "float codes":
        arrays["vote_reviewer"] = arrays["vote_reviewer"].astype(float)
    elif how == "code out of range":
        arrays["answer_model"] = arrays["answer_model"] + 100
    elif how == "nan score":
        arrays["vote_score"] = np.where(np.arange(arrays["vote_score"].size) == 0, np.nan, 1.0)
    elif how == "unsorted names":
        meta["reviewers"] = list(reversed(meta["reviewers"]))
    elif how == "bool count":
        meta["n_finite_scores"] = True
    elif how == "wrong shape":
        arrays["sums_cross"] = arrays["sums_cross"][:, :-1]
    elif how == "bad column":
        meta["sums_columns"] = [[0, 10**9]]
    elif how == "huge position":
        arrays["vote_position"] = arrays["vote_position"].astype(np.int64) + 2**40
    elif how == "negative count":
        arrays["answer_score_count"] = arrays["answer_score_count"] - 10


_FIELDS = {
    "missing array": "vote_score",
    "float codes": "vote_reviewer",
    "code out of range": "answer_model",
    "nan score": "vote_score",
    "unsorted names": "reviewers",
    "bool count": "n_finite_scores",
    "wrong shape": "sums_cross",
    "bad column": "sums_columns",
    "negative count": "answer_score_count",
    "huge position": "vote_position",
}


@pytest.mark.parametrize("how", sorted(_FIELDS))
def test_a_malformed_payload_raises_naming_the_field(how: str, tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("independent-3-missing", tmp_path)
    meta, arrays = DECISIONS.to_payload(a)
    meta, arrays = dict(meta), dict(arrays)
    _broken(meta, arrays, how)
    with pytest.raises(ValueError, match=f"decisions summary: field '{_FIELDS[how]}'"):
        DECISIONS.from_payload(meta, arrays)


def test_summaries_sharing_a_session_do_not_merge(tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("independent-3-missing", tmp_path)
    with pytest.raises(ValueError, match="is in both summaries"):
        DECISIONS.merge(a, a)


def test_a_store_without_scores_gives_none(tmp_path: Path) -> None:
    sessions = [
        [r | {"score_value": None} for r in session]
        for session in _ranked(3, 4, 9, order="reviewer")
    ]
    path = write_parts(sessions, [], tmp_path)[-1]
    summary = DECISIONS.summarize(connection_of(path))
    assert summary.n_finite_scores == 0
    assert DECISIONS.finish(summary) is None


def test_hostile_session_and_reviewer_names_merge_to_the_whole_store(tmp_path: Path) -> None:
    hostile = ['a"b', "line\nbreak", "ü-ß", "💥", "'; DROP TABLE records; --", "x" * 300]
    renamed = [
        [
            r
            | {
                "session_id": f"{hostile[index % len(hostile)]}|{index}",
                "reviewer_id": hostile[int(r["reviewer_id"][-1])],
                "model_id": hostile[int(r["model_id"][-1])],
            }
            for r in session
        ]
        for index, session in enumerate(STORES["independent-5-biased"]())
    ]
    n = len(renamed)
    paths = write_parts(renamed, [range(0, n, 2), range(1, n, 2)], tmp_path)
    first, second, whole = (DECISIONS.summarize(connection_of(path)) for path in paths)
    meta, arrays = DECISIONS.to_payload(DECISIONS.merge(first, second))
    merged = DECISIONS.from_payload(meta, arrays)
    assert DECISIONS.finish(merged) == DECISIONS.finish(whole)
    assert set(merged.reviewers) == set(hostile[:5])
