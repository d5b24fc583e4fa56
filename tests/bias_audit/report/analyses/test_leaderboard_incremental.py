"""The leaderboard from merged per-session summaries (ADR 0074): merged parts finish to the
whole store's leaderboard bit for bit (Poisson tables add exactly, comparisons merge in
session-id order), payloads round-trip, malformed payloads are refused by field."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import connection_of, varied_lengths, write_parts
from llm_council.bias_audit.report.analyses.leaderboard import (
    LeaderboardSection,
    build_leaderboard,
)
from llm_council.bias_audit.report.analyses.leaderboard_summary import LeaderboardSummary
from llm_council.bias_audit.report.estimates import Leaderboard

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators import rank_council  # noqa: E402

SECTION = LeaderboardSection(n_resamples=60, seed=3)


def _ranked(n_members: int, n_sessions: int, seed: int, **spec: Any) -> list[list[dict]]:
    council = rank_council.RankCouncilSpec(n_members=n_members, **spec)
    sessions = rank_council.generate_sessions(council, n_sessions, seed)
    return [varied_lengths(session.records()) for session in sessions]


STORES = {
    "rank-3-fixed": lambda: _ranked(3, 40, 1, model_strength=[0.5, 0.0, -0.5]),
    "rank-5-truncated": lambda: _ranked(
        5, 36, 2, order="reviewer", truncate_rate=0.2, missing_review_rate=0.1
    ),
    "rank-9-session-order": lambda: _ranked(
        9, 20, 3, order="session", model_strength=np.linspace(1, -1, 9).tolist()
    ),
    "rank-4-integer-scores": lambda: _ranked(4, 40, 4, scores=True, order="reviewer"),
    "rank-4-always-first": lambda: _ranked(
        4, 40, 5, order="session", judges=["first", "first", "honest", "last"]
    ),
}


def _summaries(
    name: str, directory: Path, section: LeaderboardSection = SECTION
) -> tuple[list[LeaderboardSummary], LeaderboardSummary]:
    sessions = STORES[name]()
    n = len(sessions)
    # interleaved parts: session ids of one part sort between those of another
    parts = [range(0, n, 3), range(1, n, 3), range(2, n, 3)]
    paths = write_parts(sessions, parts, directory)
    summaries = [section.summarize(connection_of(path)) for path in paths]
    return summaries[:-1], summaries[-1]


def _same(a: Leaderboard | None, b: Leaderboard | None) -> bool:
    """Equal field for field, NaN equal to NaN (bit for bit otherwise)."""
    return repr(a) == repr(b)


@pytest.mark.parametrize("name", sorted(STORES))
def test_merged_parts_finish_to_the_whole_store_bit_for_bit(name: str, tmp_path: Path) -> None:
    (a, b, c), whole = _summaries(name, tmp_path)
    cold = SECTION.finish(whole)
    assert isinstance(cold, Leaderboard) and cold.n_resamples == 60
    for merged in (
        SECTION.merge(SECTION.merge(a, b), c),
        SECTION.merge(a, SECTION.merge(b, c)),
        SECTION.merge(c, SECTION.merge(b, a)),
    ):
        np.testing.assert_array_equal(merged.resampled_wins, whole.resampled_wins)
        for field, values in whole.comparisons.items():
            np.testing.assert_array_equal(merged.comparisons[field], values, err_msg=field)
        assert _same(SECTION.finish(merged), cold)


def test_the_connection_entry_point_is_summarize_then_finish(tmp_path: Path) -> None:
    path = write_parts(STORES["rank-3-fixed"](), [], tmp_path)[-1]
    connection = connection_of(path)
    board = build_leaderboard(connection, n_resamples=60, seed=3)
    assert _same(board, SECTION.finish(SECTION.summarize(connection)))
    assert board is not None
    # the strongest model by construction leads, its interval around its strength
    top = board.entries[0]
    assert top.model.endswith("-0")
    assert top.strength.ci_low < top.strength.estimate < top.strength.ci_high
    assert np.isfinite(board.length_slope.estimate)  # varied lengths: the slope is fitted


def test_the_payload_round_trips(tmp_path: Path) -> None:
    (a, b, _), _ = _summaries("rank-5-truncated", tmp_path)
    merged = SECTION.merge(a, b)
    meta, arrays = SECTION.to_payload(merged)
    back = SECTION.from_payload(meta, arrays)
    again_meta, again_arrays = SECTION.to_payload(back)
    assert again_meta == meta and again_arrays.keys() == arrays.keys()
    for key, value in arrays.items():
        np.testing.assert_array_equal(again_arrays[key], value)
    assert _same(SECTION.finish(back), SECTION.finish(merged))


def test_a_cold_summary_round_trips_through_the_files_bytes(tmp_path: Path) -> None:
    # summaries straight from summarize, written as the summary file writes them and read
    # back. A store without rankings has no comparison, and numpy's bincount of nothing
    # is an integer table: it was written as int64, refused on reading (doubles
    # expected), and the report then recomputed the leaderboard and never saved the file
    from llm_council.bias_audit.report.load.summary_payload import decode_arrays, encode_arrays

    unranked = [
        [r | {"rank": None} for r in session] for session in _ranked(3, 4, 9, order="reviewer")
    ]
    (tmp_path / "ranked").mkdir()
    (cold, _, _), _ = _summaries("rank-5-truncated", tmp_path / "ranked")
    empty = SECTION.summarize(connection_of(write_parts(unranked, [], tmp_path)[-1]))
    assert empty.comparisons["item_a"].size == 0
    for summary in (cold, empty):
        meta, arrays = SECTION.to_payload(summary)
        directory, raw = encode_arrays(arrays)
        back = SECTION.from_payload(json.loads(json.dumps(meta)), decode_arrays(directory, raw))
        assert _same(SECTION.finish(back), SECTION.finish(summary))


_BREAKS = {
    "comparison_item_a": lambda m, a: a.update(comparison_item_a=a["comparison_item_a"] + 99),
    "comparison_a_won": lambda m, a: a.update(comparison_a_won=a["comparison_a_won"] * 2 + 2),
    "comparison_log_ratio": lambda m, a: a.update(
        comparison_log_ratio=a["comparison_log_ratio"] * np.inf
    ),
    "comparison_session": lambda m, a: a.update(
        comparison_session=a["comparison_session"][::-1].copy()
    ),
    "resampled_wins": lambda m, a: a.update(resampled_wins=a["resampled_wins"] - 0.5),
    "total_wins": lambda m, a: a.update(total_wins=a["total_wins"][:1]),
    "score_count": lambda m, a: a.pop("score_count"),
    "models": lambda m, a: m.update(models=["b", "a"]),
    "session_ids": lambda m, a: m.update(session_ids=[1, 2]),
    "n_resamples": lambda m, a: m.update(n_resamples=-1),
}


@pytest.mark.parametrize("field", sorted(_BREAKS))
def test_a_malformed_payload_raises_naming_the_field(field: str, tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("rank-5-truncated", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    meta, arrays = dict(meta), dict(arrays)
    _BREAKS[field](meta, arrays)
    with pytest.raises(ValueError, match=f"leaderboard summary: field '{field}'"):
        SECTION.from_payload(meta, arrays)


def test_a_summary_of_another_seed_is_refused_and_not_merged(tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("rank-3-fixed", tmp_path)
    other = LeaderboardSection(n_resamples=60, seed=4)
    meta, arrays = SECTION.to_payload(a)
    with pytest.raises(ValueError, match="'n_resamples'/'seed'"):
        other.from_payload(meta, arrays)
    reseeded = LeaderboardSummary(**{**a.__dict__, "seed": 4, "session_ids": ("z",)})
    with pytest.raises(ValueError, match="differ"):
        SECTION.merge(a, reseeded)
    with pytest.raises(ValueError, match="is in both summaries"):
        SECTION.merge(a, a)


def test_no_comparison_and_unconnected_models_give_none(tmp_path: Path) -> None:
    unranked = [
        [r | {"rank": None} for r in session] for session in _ranked(3, 4, 9, order="reviewer")
    ]
    path = write_parts(unranked, [], tmp_path)[-1]
    assert SECTION.finish(SECTION.summarize(connection_of(path))) is None
    # two councils of three that never met: no common scale
    first = [[r | {"session_id": f"x{i}"} for r in s] for i, s in enumerate(_ranked(3, 5, 10))]
    second = [
        [
            r
            | {
                "session_id": f"y{i}",
                "model_id": r["model_id"].replace("model", "other"),
                "reviewer_id": r["reviewer_id"].replace("model", "other"),
            }
            for r in s
        ]
        for i, s in enumerate(_ranked(3, 5, 11))
    ]
    path = write_parts(first + second, [], tmp_path)[-1]
    summary = SECTION.summarize(connection_of(path))
    assert summary.comparisons["item_a"].size > 0
    assert SECTION.finish(summary) is None


def test_sessions_numbered_against_id_order_give_the_same_summary(tmp_path: Path) -> None:
    path = write_parts(STORES["rank-5-truncated"](), [], tmp_path)[-1]
    expected = SECTION.summarize(connection_of(path))
    connection = connection_of(path)
    for table in ("records", "scored"):  # numbered backwards: the table's order, not the ids'
        connection.execute(f"UPDATE {table} SET session = 100000 - session")
    renumbered = SECTION.summarize(connection)
    assert renumbered.session_ids == expected.session_ids
    for field, values in expected.comparisons.items():
        np.testing.assert_array_equal(renumbered.comparisons[field], values, err_msg=field)
    np.testing.assert_array_equal(renumbered.resampled_wins, expected.resampled_wins)


_HOSTILE = ['a"b', "line\nbreak", "ü-ß", "💥", "'; DROP TABLE records; --", "x" * 300]


def test_hostile_session_and_model_names_merge_to_the_whole_store(tmp_path: Path) -> None:
    renamed = []
    for index, session in enumerate(STORES["rank-4-integer-scores"]()):
        tag = _HOSTILE[index % len(_HOSTILE)]
        renamed.append(
            [
                r
                | {
                    "session_id": f"{tag}|{index}",
                    "model_id": f"{tag}:{r['model_id']}" if index % 2 else r["model_id"],
                    "reviewer_id": f"{tag}:{r['reviewer_id']}" if index % 2 else r["reviewer_id"],
                }
                for r in session
            ]
        )
    n = len(renamed)
    paths = write_parts(renamed, [range(0, n, 2), range(1, n, 2)], tmp_path)
    first, second, whole = (SECTION.summarize(connection_of(path)) for path in paths)
    meta, arrays = SECTION.to_payload(SECTION.merge(first, second))
    assert _same(SECTION.finish(SECTION.from_payload(meta, arrays)), SECTION.finish(whole))
