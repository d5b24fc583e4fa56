"""Reasoning-chain bias from merged per-session summaries (ADR 0078): merged parts finish to
the whole store's slopes bit for bit (per-session sums concatenated in session-id order;
the median from exact length counts), payloads round-trip, malformed payloads are refused
by field."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import connection_of, write_parts
from llm_council.bias_audit.report.analyses.incremental_section import SummaryNotMergeable
from llm_council.bias_audit.report.analyses.reasoning import (
    ReasoningSection,
    ReasoningSummary,
    _median_of_counts,
    reasoning_by_reviewer,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators.independent_council import CouncilSpec  # noqa: E402
from generators.reasoning_council import ReasoningSpec, write_reasoning_store  # noqa: E402

SECTION = ReasoningSection(0.05)


def _sessions(directory: Path, n_members: int, n_sessions: int, seed: int) -> list[list[dict]]:
    spec = ReasoningSpec(
        council=CouncilSpec(n_members=n_members, missing_score_rate=0.1),
        reasoning_bias=[0.6] + [0.0] * (n_members - 1),
    )
    path = directory / f"source-{n_members}.jsonl"
    write_reasoning_store(path, spec, n_sessions, seed)
    by_session: dict[str, list[dict]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        by_session.setdefault(record["session_id"], []).append(record)
    return list(by_session.values())


def _summaries(
    directory: Path, n_members: int = 3, n_sessions: int = 45, seed: int = 1
) -> tuple[list[ReasoningSummary], ReasoningSummary]:
    sessions = _sessions(directory, n_members, n_sessions, seed)
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], directory)
    summaries = [SECTION.summarize(connection_of(path)) for path in paths]
    return summaries[:-1], summaries[-1]


@pytest.mark.parametrize(("n_members", "n_sessions"), [(3, 45), (9, 24)])
def test_merged_parts_finish_to_the_whole_store_bit_for_bit(
    n_members: int, n_sessions: int, tmp_path: Path
) -> None:
    (a, b, c), whole = _summaries(tmp_path, n_members, n_sessions)
    cold = SECTION.finish(whole)
    assert len(cold) == n_members
    for merged in (
        SECTION.merge(SECTION.merge(a, b), c),
        SECTION.merge(a, SECTION.merge(b, c)),
        SECTION.merge(c, SECTION.merge(b, a)),
    ):
        np.testing.assert_array_equal(merged.row_sums, whole.row_sums)
        np.testing.assert_array_equal(merged.length_count, whole.length_count)
        assert repr(SECTION.finish(merged)) == repr(cold)


def test_the_planted_reasoning_bias_is_found_and_the_median_is_numpys(tmp_path: Path) -> None:
    sessions = _sessions(tmp_path, 4, 80, 2)
    path = write_parts(sessions, [], tmp_path)[-1]
    connection = connection_of(path)
    result = reasoning_by_reviewer(connection)
    assert result[0].detected and result[0].points_per_doubling.estimate > 0.3
    chars = connection.execute(
        """SELECT r.rationale_chars FROM scored s JOIN records r USING (session, reviewer, model)
           WHERE NOT s.is_self AND s.deviation IS NOT NULL AND r.rationale_chars > 0
                 AND s.reviewer = ?""",
        [result[0].reviewer],
    ).fetchall()
    assert result[0].median_rationale_chars == float(np.median([c for (c,) in chars]))


def test_the_median_of_counts_by_hand() -> None:
    # 1, 1, 4, 9, 9, 9 -> (4 + 9) / 2; 1, 4, 4 -> 4
    assert _median_of_counts(np.array([1, 4, 9]), np.array([2, 1, 3])) == 6.5
    assert _median_of_counts(np.array([1, 4]), np.array([1, 2])) == 4.0


def test_the_payload_round_trips(tmp_path: Path) -> None:
    (a, b, _), _ = _summaries(tmp_path)
    merged = SECTION.merge(a, b)
    meta, arrays = SECTION.to_payload(merged)
    back = SECTION.from_payload(meta, arrays)
    assert repr(SECTION.finish(back)) == repr(SECTION.finish(merged))


def _broken(meta: dict[str, Any], arrays: dict[str, np.ndarray], how: str) -> None:
    if how == "missing array":
        del arrays["row_sums"]
    elif how == "unsorted names":
        meta["reviewers"] = list(reversed(meta["reviewers"]))
    elif how == "nan sums":
        arrays["row_sums"] = np.full_like(arrays["row_sums"], np.nan)
    elif how == "code out of range":
        arrays["row_reviewer"] = arrays["row_reviewer"] + 100
    elif how == "unsorted sessions":
        arrays["row_session"] = arrays["row_session"][::-1]
        arrays["row_reviewer"] = np.zeros_like(arrays["row_reviewer"])
    elif how == "zero length":
        arrays["length_chars"] = arrays["length_chars"] * 0
    elif how == "negative count":
        arrays["length_count"] = arrays["length_count"] - 10**6


_FIELDS = {
    "missing array": "row_sums",
    "unsorted names": "reviewers",
    "nan sums": "row_sums",
    "code out of range": "row_reviewer",
    "unsorted sessions": "row_session",
    "zero length": "length_chars",
    "negative count": "length_count",
}


@pytest.mark.parametrize("how", sorted(_FIELDS))
def test_a_malformed_payload_raises_naming_the_field(how: str, tmp_path: Path) -> None:
    (a, _, _), _ = _summaries(tmp_path)
    meta, arrays = SECTION.to_payload(a)
    meta, arrays = dict(meta), dict(arrays)
    _broken(meta, arrays, how)
    with pytest.raises(ValueError, match=f"reasoning summary: field '{_FIELDS[how]}'"):
        SECTION.from_payload(meta, arrays)


def test_summaries_sharing_a_session_do_not_merge(tmp_path: Path) -> None:
    (a, _, _), _ = _summaries(tmp_path)
    with pytest.raises(SummaryNotMergeable, match="in both summaries"):
        SECTION.merge(a, a)


def test_a_store_without_rationales_gives_no_reviewer(tmp_path: Path) -> None:
    sessions = [
        [r | {"rationale_chars": None} for r in session] for session in _sessions(tmp_path, 3, 6, 3)
    ]
    path = write_parts(sessions, [], tmp_path)[-1]
    empty = SECTION.summarize(connection_of(path))
    assert SECTION.finish(empty) == []
    (a, _, _), _ = _summaries(tmp_path)
    assert repr(SECTION.finish(SECTION.merge(empty, a))) == repr(SECTION.finish(a))
