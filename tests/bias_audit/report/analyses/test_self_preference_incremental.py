"""Self-preference from merged per-session summaries (ADR 0077): merged parts finish to
the whole store's result (the raw contrast's sd within rounding of DuckDB's
``stddev_samp``; counts, slots and labels exactly); payloads round-trip; malformed
payloads are refused by field."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from scipy import stats

from bias_audit.report.analyses.split_stores import connection_of, varied_lengths, write_parts
from llm_council.bias_audit.report.analyses.joint import fit_joint_model
from llm_council.bias_audit.report.analyses.self_preference import (
    SELF_PREFERENCE,
    self_preferences,
)
from llm_council.bias_audit.report.estimates import SelfPreference
from llm_council.bias_audit.report.load.tables import fixed_slot_pairs

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from generators import independent_council, rank_council  # noqa: E402


def _independent(n_members: int, n_sessions: int, seed: int, **spec: Any) -> list[list[dict]]:
    council = independent_council.CouncilSpec(n_members=n_members, **spec)
    sessions = independent_council.generate_sessions(council, n_sessions, seed)
    return [varied_lengths(session.records()) for session in sessions]


STORES = {
    "independent-3-self": lambda: _independent(3, 30, 1, self_bias=[2.0, 0, 0]),
    "independent-5-missing": lambda: _independent(
        5, 36, 2, missing_score_rate=0.15, missing_review_rate=0.1, self_bias=[0, 1, 0, 0, 0]
    ),
    "independent-9-shared-order": lambda: _independent(9, 20, 3, shared_order=True),
    "rank-4": lambda: [
        varied_lengths(s.records())
        for s in rank_council.generate_sessions(rank_council.RankCouncilSpec(n_members=4), 30, 4)
    ],
}


def _raw_reference(connection: Any) -> dict[str, tuple[int, float, float]]:
    """The raw contrast's count, mean and sd as DuckDB computes them (the old query)."""
    rows = connection.execute(
        """SELECT reviewer, count(deviation), avg(deviation), stddev_samp(deviation)
           FROM scored WHERE is_self GROUP BY reviewer"""
    ).fetchall()
    nan = float("nan")
    return {r: (n, nan if m is None else m, nan if s is None else s) for r, n, m, s in rows}


def _assert_close(got: list[SelfPreference], want: list[SelfPreference]) -> None:
    assert [(p.reviewer, p.n_sessions, p.detected, p.fixed_slot) for p in got] == [
        (p.reviewer, p.n_sessions, p.detected, p.fixed_slot) for p in want
    ]
    for a, b in zip(got, want, strict=True):
        assert a.adjusted == b.adjusted  # the same joint effects in: the same interval out
        for x, y in zip(
            (a.raw.estimate, a.raw.ci_low, a.raw.ci_high, a.raw.p_value),
            (b.raw.estimate, b.raw.ci_low, b.raw.ci_high, b.raw.p_value),
            strict=True,
        ):
            assert (math.isnan(x) and math.isnan(y)) or x == pytest.approx(y, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name", sorted(STORES))
def test_merged_parts_finish_to_the_whole_store(name: str, tmp_path: Path) -> None:
    sessions = STORES[name]()
    n = len(sessions)
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], tmp_path)
    a, b, c, whole = (SELF_PREFERENCE.summarize(connection_of(path)) for path in paths)
    connection = connection_of(paths[-1])
    joint = fit_joint_model(connection, None, forced_choice=False)
    inputs = {
        "joint_effects": joint.model.effects if joint else [],
        "n_joint_sessions": joint.model.n_sessions if joint else 0,
    }
    full = self_preferences(connection, **inputs)
    # the raw contrast against DuckDB's own count, avg and stddev_samp
    reference = _raw_reference(connection)
    assert {p.reviewer for p in full} == set(reference)
    for preference in full:
        count, mean, sd = reference[preference.reviewer]
        assert preference.n_sessions == count
        if count >= 2:
            assert preference.raw.estimate == pytest.approx(mean, rel=1e-12)
            t = (preference.raw.ci_high - preference.raw.estimate) / (sd / math.sqrt(count))
            assert t == pytest.approx(float(stats.t.ppf(0.975, count - 1)), rel=1e-9)
    # fixed slots exactly as the full query finds them, for each reviewer's own model
    fixed = fixed_slot_pairs(connection)
    own = dict(
        connection.execute(
            "SELECT reviewer, min(model) FROM scored WHERE is_self GROUP BY 1"
        ).fetchall()
    )
    for preference in full:
        assert preference.fixed_slot == fixed.get((preference.reviewer, own[preference.reviewer]))
    if name == "rank-4":  # karpathy's fixed order: every own answer at one slot
        assert full and all(p.confounded_with_slot and not p.detected for p in full)
    for merged in (
        SELF_PREFERENCE.merge(SELF_PREFERENCE.merge(a, b), c),
        SELF_PREFERENCE.merge(c, SELF_PREFERENCE.merge(b, a)),
    ):
        _assert_close(SELF_PREFERENCE.finish(merged, **inputs), full)
    _assert_close(SELF_PREFERENCE.finish(whole, **inputs), full)


def test_the_payload_round_trips_and_a_malformed_one_is_refused(tmp_path: Path) -> None:
    (path,) = write_parts(STORES["independent-3-self"](), [], tmp_path)
    summary = SELF_PREFERENCE.summarize(connection_of(path))
    meta, arrays = SELF_PREFERENCE.to_payload(summary)
    back = SELF_PREFERENCE.from_payload(meta, arrays)
    assert repr(SELF_PREFERENCE.finish(back)) == repr(SELF_PREFERENCE.finish(summary))
    for field, broken_meta, broken_arrays in (
        ("reviewers", {**meta, "reviewers": meta["reviewers"][::-1]}, arrays),
        ("pair_models", {**meta, "pair_models": meta["pair_models"][:-1]}, arrays),
        ("moments", meta, {**arrays, "moments": arrays["moments"][:, :2]}),
        ("pair_slots", meta, {**arrays, "pair_slots": arrays["pair_slots"].astype(np.int64)}),
    ):
        with pytest.raises(ValueError, match=repr(field)):
            SELF_PREFERENCE.from_payload(broken_meta, broken_arrays)
    infinite = arrays["moments"].copy()
    infinite[0, 0] = np.inf
    with pytest.raises(ValueError, match="'moments'"):
        SELF_PREFERENCE.from_payload(meta, {**arrays, "moments": infinite})
