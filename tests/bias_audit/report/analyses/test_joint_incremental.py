"""The joint model from merged per-session summaries (ADR 0077): merged parts finish to
the whole store's full fit (:func:`fit_joint_model`) within rounding, in any merge order,
with reviewers, models and slots missing from some parts; payloads round-trip; malformed
payloads are refused by field."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import connection_of, varied_lengths, write_parts
from llm_council.bias_audit.report.analyses.joint import JointFit, fit_joint_model
from llm_council.bias_audit.report.analyses.joint_summary import JOINT_MODEL, JointSummary

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators import independent_council, rank_council  # noqa: E402

#: sums added in another order differ by rounding only: relative to the largest |value|
#: of the same kind (a standard error of 1e-17 next to others of 0.1 is a zero)
RELATIVE = 1e-9


def _independent(n_members: int, n_sessions: int, seed: int, **spec: Any) -> list[list[dict]]:
    council = independent_council.CouncilSpec(n_members=n_members, **spec)
    sessions = independent_council.generate_sessions(council, n_sessions, seed)
    return [varied_lengths(session.records()) for session in sessions]


def _ranked(n_members: int, n_sessions: int, seed: int, **spec: Any) -> list[list[dict]]:
    council = rank_council.RankCouncilSpec(n_members=n_members, **spec)
    sessions = rank_council.generate_sessions(council, n_sessions, seed)
    return [varied_lengths(session.records()) for session in sessions]


def _degenerate() -> list[list[dict]]:
    """judge-0 always gives 5, judge-1 puts slot A on top, integer scores, missing cells."""
    sessions = _independent(4, 30, 9, missing_score_rate=0.1, missing_review_rate=0.1)
    for session in sessions:
        for record in session:
            if record.get("score_value") is None:
                continue
            if record["reviewer_id"] == "judge-0":
                record["score_value"] = 5.0
            elif record["reviewer_id"] == "judge-1":
                record["score_value"] = 10.0 if record["position"] == 0 else 1.0
            else:
                record["score_value"] = float(round(record["score_value"]))
    return sessions


STORES = {
    "independent-3": lambda: _independent(3, 30, 1, self_bias=[1.0, 0, 0]),
    "independent-5-missing": lambda: _independent(
        5, 36, 2, missing_score_rate=0.1, missing_review_rate=0.1, leniency=[1, 0, 0, 0, -1]
    ),
    "independent-9-shared-order": lambda: _independent(
        9, 20, 3, shared_order=True, verbosity=np.linspace(-1, 1, 9).tolist()
    ),
    "independent-4-no-self": lambda: _independent(4, 30, 4, self_review=False),
    "rank-5-points": lambda: _ranked(5, 36, 5, order="reviewer", truncate_rate=0.2),
    "degenerate-judges": _degenerate,
}


def _fits(name: str, directory: Path) -> tuple[list[JointSummary], JointSummary, JointFit | None]:
    sessions = STORES[name]()
    n = len(sessions)
    # interleaved parts, and the first part also lacks the last reviewer's sessions' tail
    parts = [range(0, n, 3), range(1, n, 3), range(2, n, 3)]
    paths = write_parts(sessions, parts, directory)
    summaries = [JOINT_MODEL.summarize(connection_of(path)) for path in paths]
    whole = connection_of(paths[-1])
    reference = _reference(whole)
    full = fit_joint_model(whole, reference, forced_choice=False)
    return summaries[:-1], summaries[-1], full


def _reference(connection: Any) -> list[str]:
    names = [row[0] for row in connection.execute("SELECT reviewer FROM reviewers").fetchall()]
    return names[1:]  # a reference that is not every reviewer


def _assert_close(actual: JointFit | None, expected: JointFit | None) -> None:
    """Equal counts, names and flags; numbers within :data:`RELATIVE` of their kind's scale."""
    assert (actual is None) == (expected is None)
    if actual is None or expected is None:
        return
    a, e = actual.model, expected.model
    assert (a.n_records, a.n_answers, a.n_sessions) == (e.n_records, e.n_answers, e.n_sessions)
    assert a.position_identified == e.position_identified
    assert [(x.term, x.group, x.identified) for x in a.effects] == [
        (x.term, x.group, x.identified) for x in e.effects
    ]
    for field in ("estimate", "ci_low", "ci_high", "standard_error"):
        got = np.array([getattr(x, field) for x in a.effects])
        want = np.array([getattr(x, field) for x in e.effects])
        scale = np.nanmax(np.abs(want), initial=1.0)
        np.testing.assert_allclose(got, want, rtol=0, atol=RELATIVE * scale, err_msg=field)
    for got, want in (
        (a.residual_sd, e.residual_sd),
        (a.position_wald_f, e.position_wald_f),
        (a.position_wald_p, e.position_wald_p),
    ):
        assert (math.isnan(got) and math.isnan(want)) or got == pytest.approx(want, rel=1e-7)
    assert actual.adjusted_mean_by_model.keys() == expected.adjusted_mean_by_model.keys()
    for model, value in expected.adjusted_mean_by_model.items():
        assert actual.adjusted_mean_by_model[model] == pytest.approx(value, rel=RELATIVE)


@pytest.mark.parametrize("name", sorted(STORES))
def test_merged_parts_finish_to_the_full_fit(name: str, tmp_path: Path) -> None:
    (a, b, c), whole, full = _fits(name, tmp_path)
    reference = _reference(connection_of(tmp_path / "part-3.jsonl"))
    cold = JOINT_MODEL.finish(whole, reference=reference, forced_choice=False)
    _assert_close(cold, full)
    for merged in (
        JOINT_MODEL.merge(JOINT_MODEL.merge(a, b), c),
        JOINT_MODEL.merge(a, JOINT_MODEL.merge(b, c)),
        JOINT_MODEL.merge(c, JOINT_MODEL.merge(b, a)),
    ):
        _assert_close(JOINT_MODEL.finish(merged, reference=reference, forced_choice=False), full)


def test_forced_choice_leaves_every_leniency_unidentified(tmp_path: Path) -> None:
    (_, _, _), whole, _ = _fits("independent-5-missing", tmp_path)
    fit = JOINT_MODEL.finish(whole, reference=None, forced_choice=True)
    assert fit is not None
    leniencies = [e for e in fit.model.effects if e.group == "reviewer_leniency"]
    assert leniencies and not any(e.identified for e in leniencies)
    assert all(math.isnan(e.estimate) for e in leniencies)


def test_a_part_missing_reviewers_and_slots_widens_before_adding(tmp_path: Path) -> None:
    """Sessions of 3 members merged with sessions of 5 (other reviewers, more slots)."""
    small = _independent(3, 20, 7, member_prefix="judge")
    large = _independent(5, 20, 8, member_prefix="judge")
    for number, session in enumerate(large):  # distinct session ids from the small part
        for record in session:
            record["session_id"] = f"large-{number}"
    paths = write_parts([*small, *large], [range(20), range(20, 40)], tmp_path)
    first, second, whole = (JOINT_MODEL.summarize(connection_of(path)) for path in paths)
    assert first.n_slots < second.n_slots and len(first.reviewers) < len(second.reviewers)
    full = fit_joint_model(connection_of(paths[-1]), None, forced_choice=False)
    for merged in (JOINT_MODEL.merge(first, second), JOINT_MODEL.merge(second, first)):
        _assert_close(JOINT_MODEL.finish(merged, reference=None, forced_choice=False), full)
    _assert_close(JOINT_MODEL.finish(whole, reference=None, forced_choice=False), full)


def test_too_little_data_gives_none_like_the_full_fit(tmp_path: Path) -> None:
    sessions = _independent(3, 1, 1)  # a single session: nothing to infer
    (path,) = write_parts(sessions, [], tmp_path)
    summary = JOINT_MODEL.summarize(connection_of(path))
    assert fit_joint_model(connection_of(path), None, forced_choice=False) is None
    assert JOINT_MODEL.finish(summary, reference=None, forced_choice=False) is None


def test_the_payload_round_trips(tmp_path: Path) -> None:
    (a, _, _), _, _ = _fits("independent-3", tmp_path)
    meta, arrays = JOINT_MODEL.to_payload(a)
    back = JOINT_MODEL.from_payload(meta, arrays)
    assert back.reviewers == a.reviewers and back.n_slots == a.n_slots
    assert back.sums.n_clusters == a.sums.n_clusters
    np.testing.assert_array_equal(back.sums.gram_outer, a.sums.gram_outer)
    assert repr(JOINT_MODEL.finish(back)) == repr(JOINT_MODEL.finish(a))


def _broken(field: str, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
    if field == "reviewers":
        meta["reviewers"] = ["b", "a"]
    elif field == "n_slots":
        meta["n_slots"] = 0
    elif field == "n_clusters":
        meta["n_clusters"] = "7"
    elif field == "gram":
        arrays["gram"] = arrays["gram"][:-1]
    elif field == "cross":
        arrays["cross"] = arrays["cross"].copy()
        arrays["cross"][0] = np.inf
    elif field == "gram_outer":
        arrays["gram_outer"] = arrays["gram_outer"].astype(np.float32)
    else:
        del arrays[field]


@pytest.mark.parametrize(
    "field",
    ["reviewers", "n_slots", "n_clusters", "gram", "cross", "gram_outer", "model_mean_design"],
)
def test_a_malformed_payload_raises_naming_the_field(field: str, tmp_path: Path) -> None:
    (a, _, _), _, _ = _fits("independent-3", tmp_path)
    meta, arrays = JOINT_MODEL.to_payload(a)
    meta, arrays = dict(meta), dict(arrays)
    _broken(field, meta, arrays)
    with pytest.raises(ValueError, match=repr(field)):
        JOINT_MODEL.from_payload(meta, arrays)


def test_hostile_reviewer_and_model_names_merge_to_the_full_fit(tmp_path: Path) -> None:
    """Names that sort differently as bytes and as text in some collations, with quotes,
    newlines and non-ASCII: the codes follow DuckDB's order and the merge keeps it."""
    hostile = {
        "judge-0": 'Zeta "quoted"\n',
        "judge-1": "ärger'; DROP TABLE x",
        "judge-2": "a b",
        "judge-3": "Ω",
    }
    sessions = _independent(4, 24, 12)
    for session in sessions:
        for record in session:
            for field in ("reviewer_id", "model_id"):
                if record.get(field) in hostile:
                    record[field] = hostile[record[field]]
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 2), range(1, n, 2)], tmp_path)
    first, second, whole = (JOINT_MODEL.summarize(connection_of(path)) for path in paths)
    assert set(whole.reviewers) >= set(hostile.values())
    full = fit_joint_model(connection_of(paths[-1]), None, forced_choice=False)
    assert full is not None
    for merged in (JOINT_MODEL.merge(first, second), JOINT_MODEL.merge(second, first)):
        assert merged.reviewers == whole.reviewers
        _assert_close(JOINT_MODEL.finish(merged, reference=None, forced_choice=False), full)
    meta, arrays = JOINT_MODEL.to_payload(whole)
    assert JOINT_MODEL.from_payload(meta, arrays).reviewers == whole.reviewers
