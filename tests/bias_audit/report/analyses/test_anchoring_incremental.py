"""Anchoring from merged per-session summaries (ADR 0078), a section finished with the
reviewers whose level the scale fixes: merged parts finish to the whole store's
correlations bit for bit, for any ``level_fixed``; payloads round-trip, malformed payloads
are refused by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import (
    connection_of,
    independent_sessions,
    ranked_sessions,
    write_parts,
)
from llm_council.bias_audit.report.analyses.anchoring import (
    AnchoringSection,
    anchoring_by_reviewer,
)
from llm_council.bias_audit.report.analyses.anchoring_summary import AnchoringSummary
from llm_council.bias_audit.report.analyses.incremental_section import (
    SummaryNotMergeable,
    needs_inputs,
)

SECTION = AnchoringSection(0.05)


STORES = {
    "independent-3-missing": lambda: independent_sessions(
        3, 45, 1, missing_score_rate=0.1, missing_review_rate=0.1
    ),
    "independent-5-slot-effects": lambda: independent_sessions(
        5, 40, 2, slot_effects=[[1.0, 0.5, 0, 0, 0]] * 5, missing_score_rate=0.05
    ),
    "independent-9-shared-order": lambda: independent_sessions(
        9, 24, 3, shared_order=True, missing_review_rate=0.2, self_review=False
    ),
    "rank-4-integer-scores": lambda: ranked_sessions(4, 45, 4, scores=True, order="reviewer"),
    "independent-4-constant-judge": lambda: [
        [r | {"score_value": 5.0} if r["reviewer_id"] == "judge-0" else r for r in session]
        for session in independent_sessions(4, 40, 21, missing_score_rate=0.05)
    ],
}


def _summaries(name: str, directory: Path) -> tuple[list[AnchoringSummary], AnchoringSummary]:
    sessions = STORES[name]()
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], directory)
    summaries = [SECTION.summarize(connection_of(path)) for path in paths]
    return summaries[:-1], summaries[-1]


def test_the_section_is_finished_with_its_inputs() -> None:
    assert needs_inputs(SECTION)


@pytest.mark.parametrize("name", sorted(STORES))
def test_merged_parts_finish_to_the_whole_store_bit_for_bit(name: str, tmp_path: Path) -> None:
    (a, b, c), whole = _summaries(name, tmp_path)
    fixed = frozenset([whole.reviewers[0]])
    cold = SECTION.finish(whole)
    cold_fixed = SECTION.finish(whole, level_fixed=fixed)
    assert len(cold) == len(whole.reviewers) and not cold_fixed[0].identified
    for merged in (
        SECTION.merge(SECTION.merge(a, b), c),
        SECTION.merge(a, SECTION.merge(b, c)),
        SECTION.merge(c, SECTION.merge(b, a)),
    ):
        np.testing.assert_array_equal(merged.earlier, whole.earlier)
        assert repr(SECTION.finish(merged)) == repr(cold)
        assert repr(SECTION.finish(merged, level_fixed=fixed)) == repr(cold_fixed)


def test_the_connection_entry_point_is_summarize_then_finish(tmp_path: Path) -> None:
    _, whole = _summaries("independent-5-slot-effects", tmp_path)
    connection = connection_of(tmp_path / "part-3.jsonl")  # the whole store, written last
    assert repr(anchoring_by_reviewer(connection)) == repr(SECTION.finish(whole))


def test_sessions_with_more_answers_widen_the_saved_summary(tmp_path: Path) -> None:
    """A 3-member council's sessions, then 5-member ones: slots 3 and 4 appear later."""
    three = independent_sessions(3, 30, 5)
    five = [
        [r | {"session_id": f"z-{r['session_id']}"} for r in session]
        for session in independent_sessions(5, 30, 6)
    ]
    paths = write_parts([*three, *five], [range(30), range(30, 60)], tmp_path)
    first, second, whole = (SECTION.summarize(connection_of(path)) for path in paths)
    assert first.running.shape[1] == 3 and whole.running.shape[1] == 5
    for merged in (SECTION.merge(first, second), SECTION.merge(second, first)):
        np.testing.assert_array_equal(merged.running, whole.running)
        np.testing.assert_array_equal(merged.paired, whole.paired)
        assert repr(SECTION.finish(merged)) == repr(SECTION.finish(whole))


def test_the_payload_round_trips(tmp_path: Path) -> None:
    (a, b, _), _ = _summaries("independent-3-missing", tmp_path)
    merged = SECTION.merge(a, b)
    meta, arrays = SECTION.to_payload(merged)
    back = SECTION.from_payload(meta, arrays)
    assert repr(SECTION.finish(back)) == repr(SECTION.finish(merged))


def _broken(meta: dict[str, Any], arrays: dict[str, np.ndarray], how: str) -> None:
    if how == "missing array":
        del arrays["paired"]
    elif how == "unsorted names":
        meta["reviewers"] = list(reversed(meta["reviewers"]))
    elif how == "infinite value":
        arrays["earlier"] = np.full_like(arrays["earlier"], np.inf)
    elif how == "code out of range":
        arrays["review_reviewer"] = arrays["review_reviewer"] + 100
    elif how == "unsorted sessions":
        arrays["review_session"] = arrays["review_session"][::-1]
        arrays["review_reviewer"] = np.zeros_like(arrays["review_reviewer"])
    elif how == "wrong width":
        arrays["paired"] = arrays["paired"][:, :-1]
    elif how == "too many slots":
        for field in ("running", "earlier", "paired"):
            arrays[field] = np.full((arrays[field].shape[0], 300), np.nan)


_FIELDS = {
    "missing array": "paired",
    "unsorted names": "reviewers",
    "infinite value": "earlier",
    "code out of range": "review_reviewer",
    "unsorted sessions": "review_session",
    "wrong width": "paired",
    "too many slots": "running",
}


@pytest.mark.parametrize("how", sorted(_FIELDS))
def test_a_malformed_payload_raises_naming_the_field(how: str, tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("independent-3-missing", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    meta, arrays = dict(meta), dict(arrays)
    _broken(meta, arrays, how)
    with pytest.raises(ValueError, match=f"anchoring summary: field '{_FIELDS[how]}'"):
        SECTION.from_payload(meta, arrays)


def test_summaries_sharing_a_session_do_not_merge(tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("independent-3-missing", tmp_path)
    with pytest.raises(SummaryNotMergeable, match="in both summaries"):
        SECTION.merge(a, a)


def test_a_store_without_scores_gives_no_reviewer(tmp_path: Path) -> None:
    sessions = [
        [r | {"score_value": None} for r in session] for session in independent_sessions(3, 4, 9)
    ]
    path = write_parts(sessions, [], tmp_path)[-1]
    empty = SECTION.summarize(connection_of(path))
    assert SECTION.finish(empty) == []
    (a, _, _), _ = _summaries("independent-3-missing", tmp_path)
    assert repr(SECTION.finish(SECTION.merge(empty, a))) == repr(SECTION.finish(a))
