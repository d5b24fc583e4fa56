"""Invariants of the per-session audit on arbitrary small councils (Hypothesis).

Whatever the scores, gaps and display orders: the audit does not raise, a reported slot
variance is inside what the scores allow, every p-value is a probability, a flag always
has a p-value behind it, and the length flag never raises the risk level.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_council.bias_audit import run_bias_audit


@st.composite
def councils(
    draw: st.DrawFn,
) -> tuple[dict[str, str], dict[str, dict[str, float | None]], dict[str, dict[str, int]]]:
    n_members = draw(st.integers(min_value=2, max_value=6))
    names = [f"m{i}" for i in range(n_members)]
    texts = {
        name: "w " * draw(st.integers(min_value=1, max_value=400), label=f"words {name}")
        for name in names
    }
    shared = draw(st.booleans())
    seed = draw(st.integers(min_value=0, max_value=2**32 - 1))
    rng = np.random.default_rng(seed)
    shared_order = rng.permutation(n_members)
    scores: dict[str, dict[str, float | None]] = {}
    positions: dict[str, dict[str, int]] = {}
    for reviewer in names:
        order = shared_order if shared else rng.permutation(n_members)
        positions[reviewer] = {names[c]: slot for slot, c in enumerate(order.tolist())}
        scores[reviewer] = {
            candidate: draw(
                st.one_of(st.none(), st.integers(min_value=1, max_value=10).map(float)),
                label=f"{reviewer}->{candidate}",
            )
            for candidate in names
        }
    return texts, scores, positions


@settings(max_examples=150, deadline=None)
@given(councils())
def test_audit_invariants(
    council: tuple[dict[str, str], dict[str, dict[str, float | None]], dict[str, dict[str, int]]],
) -> None:
    texts, scores, positions = council
    audit = run_bias_audit(texts, scores, positions)
    given_scores = [v for row in scores.values() for v in row.values() if v is not None]
    if audit.position_score_variance is not None:
        spread = max(given_scores) - min(given_scores)
        assert 0.0 <= audit.position_score_variance <= spread**2 / 4 + 1e-9
    p_values = [
        audit.length_score_p_value,
        audit.position_score_p_value,
        audit.pooled_self_preference_p_value,
        *audit.reviewer_offset_p_values.values(),
        *audit.self_preference_p_values.values(),
    ]
    for p_value in p_values:
        assert p_value is None or (math.isfinite(p_value) and 0.0 <= p_value <= 1.0)
    for name in audit.harsh_reviewers + audit.generous_reviewers:
        assert audit.reviewer_offset_p_values[name] is not None
    for name in audit.self_preferring_reviewers:
        assert audit.self_preference_p_values[name] is not None
    if audit.position_bias_detected:
        assert audit.position_score_variance is not None
    assert "length_bias_detected" not in audit.risk_flags
    expected_risk = {0: "low" if audit.risk_tests_run else "not_tested", 1: "medium"}.get(
        len(audit.risk_flags), "high"
    )
    if audit.risk_flags:  # a flag only fires from a test that ran
        assert audit.risk_tests_run
    assert audit.overall_bias_risk == expected_risk
    assert set(audit.risk_flags) <= set(audit.flags_raised)
