"""Style mimicry from merged per-session summaries (ADR 0077): merged parts finish to the
whole store's :func:`style_mimicry` within rounding (counts, names and flags exactly), in
any merge order and across parts with other reviewers; payloads round-trip; malformed
payloads are refused by field."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import connection_of, write_parts
from llm_council.bias_audit.report.analyses.style_mimicry import StyleMimicry, style_mimicry
from llm_council.bias_audit.report.analyses.style_mimicry_summary import StyleMimicrySection

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402
from generators.style_similarity import StyleSpec, add_similarity, styled_records  # noqa: E402

SECTION = StyleMimicrySection(0.05)


def _styled(n_members: int, n_sessions: int, seed: int, mimicry: float, **spec: Any) -> list:
    council = CouncilSpec(n_members=n_members, **spec)
    styled = add_similarity(
        generate_sessions(council, n_sessions, seed),
        StyleSpec(style_quality=0.15, mimicry=[mimicry] + [0.0] * (n_members - 1)),
        seed=seed + 1,
    )
    return [styled_records(session) for session in styled]


STORES = {
    "independent-4-mimic": lambda: _styled(4, 80, 1, 6.0, missing_score_rate=0.05),
    "independent-5-missing": lambda: _styled(
        5, 40, 2, 0.0, missing_score_rate=0.15, missing_review_rate=0.1
    ),
    "independent-9": lambda: _styled(9, 24, 3, 1.0),
    "independent-3-unidentified": lambda: _styled(3, 40, 4, 1.0),
}


def _assert_close(got: StyleMimicry | None, want: StyleMimicry | None) -> None:
    assert (got is None) == (want is None)
    if got is None or want is None:
        return
    assert (got.n_scores_with_similarity, got.n_sessions) == (
        want.n_scores_with_similarity,
        want.n_sessions,
    )
    assert [(r.reviewer, r.n_sessions, r.n_scores, r.detected) for r in got.reviewers] == [
        (r.reviewer, r.n_sessions, r.n_scores, r.detected) for r in want.reviewers
    ]
    for a, b in zip(got.reviewers, want.reviewers, strict=True):
        pairs = [
            (a.slope.estimate, b.slope.estimate),
            (a.slope.ci_low, b.slope.ci_low),
            (a.slope.ci_high, b.slope.ci_high),
            (a.slope.p_value, b.slope.p_value),
            (a.holm_p, b.holm_p),
            (a.within_answer_sd, b.within_answer_sd),
            (a.points_per_sd, b.points_per_sd),
        ]
        for x, y in pairs:
            assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-8, abs=1e-12)


@pytest.mark.parametrize("name", sorted(STORES))
def test_merged_parts_finish_to_the_full_fit(name: str, tmp_path: Path) -> None:
    sessions = STORES[name]()
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], tmp_path)
    a, b, c, whole = (SECTION.summarize(connection_of(path)) for path in paths)
    full = style_mimicry(connection_of(paths[-1]))
    assert full is not None
    if name == "independent-4-mimic":
        assert any(r.detected for r in full.reviewers)  # the comparison is not of NaNs
    _assert_close(SECTION.finish(whole), full)
    for merged in (SECTION.merge(SECTION.merge(a, b), c), SECTION.merge(c, SECTION.merge(b, a))):
        np.testing.assert_array_equal(merged.session_id, whole.session_id)
        _assert_close(SECTION.finish(merged), full)


def test_parts_of_other_reviewers_widen_before_merging(tmp_path: Path) -> None:
    small, large = _styled(3, 20, 5, 1.0), _styled(5, 30, 6, 1.0)
    for number, session in enumerate(large):
        for record in session:
            record["session_id"] = f"large-{number}"
    paths = write_parts([*small, *large], [range(20), range(20, 50)], tmp_path)
    first, second, _ = (SECTION.summarize(connection_of(path)) for path in paths)
    assert len(first.reviewers) < len(second.reviewers)
    full = style_mimicry(connection_of(paths[-1]))
    for merged in (SECTION.merge(first, second), SECTION.merge(second, first)):
        _assert_close(SECTION.finish(merged), full)


def test_no_similarity_gives_none(tmp_path: Path) -> None:
    sessions = [
        [{k: v for k, v in r.items() if k != "similarity_to_own"} for r in session]
        for session in _styled(4, 6, 7, 0.0)
    ]
    (path,) = write_parts(sessions, [], tmp_path)
    assert style_mimicry(connection_of(path)) is None
    assert SECTION.finish(SECTION.summarize(connection_of(path))) is None


def test_the_payload_round_trips_and_a_malformed_one_is_refused(tmp_path: Path) -> None:
    (path,) = write_parts(STORES["independent-4-mimic"](), [], tmp_path)
    summary = SECTION.summarize(connection_of(path))
    meta, arrays = SECTION.to_payload(summary)
    assert repr(SECTION.finish(SECTION.from_payload(meta, arrays))) == repr(SECTION.finish(summary))
    infinite = arrays["products"].copy()
    infinite[0, 0] = np.inf
    for field, broken_meta, broken in (
        ("reviewers", {"reviewers": meta["reviewers"][::-1]}, arrays),
        ("products", meta, {**arrays, "products": arrays["products"][:, 1:]}),
        ("products", meta, {**arrays, "products": infinite}),
        ("counts", meta, {**arrays, "counts": arrays["counts"].astype(np.int64)}),
        ("session_id", meta, {**arrays, "session_id": np.zeros(3)}),
        ("per_reviewer", meta, {k: v for k, v in arrays.items() if k != "per_reviewer"}),
    ):
        with pytest.raises(ValueError, match=repr(field)):
            SECTION.from_payload(broken_meta, broken)
