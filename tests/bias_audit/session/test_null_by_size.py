"""Fast regression guards on the per-session null at small councils (the slow test is exact).

Independent generator (integer scores clipped to 1-10, missing cells, a missing review);
200 sessions per case, so the bound (10%) catches a gross regression such as the 12%
self-preference rate of 3-member councils before issue 9 (t tests on the rounding-level
residuals of exact fits), not a small drift.
"""

from __future__ import annotations

from generators.independent_council import CouncilSpec, generate_sessions
from llm_council.bias_audit import run_bias_audit
from llm_council.bias_audit.session.result import BiasAuditResult
from llm_council.bias_audit.session.thresholds import AuditThresholds


def _audits(spec: CouncilSpec, n_sessions: int, seed: int) -> list[BiasAuditResult]:
    return [
        run_bias_audit(s.stage1_responses, s.stage2_scores, s.position_mapping)
        for s in generate_sessions(spec, n_sessions, seed)
    ]


def _rate(audits: list[BiasAuditResult], flag: str) -> float:
    fired = {
        "self": lambda a: a.self_preference_detected,
        "lenient": lambda a: bool(a.harsh_reviewers or a.generous_reviewers),
        "position": lambda a: bool(a.position_bias_detected),  # None: not tested
    }[flag]
    return sum(fired(a) for a in audits) / len(audits)


def test_three_member_council_without_missing_cells_keeps_its_level() -> None:
    # 3 x 3 with self-reviews out: 6 cells, 5 parameters, 1 residual df. Session-only t
    # tests fired in 12% (self-preference) and 10.8% (harsh or generous) of null sessions:
    # in 19% of them integer scores fit exactly and the residual was rounding error. With
    # moderated noise (ADR 0045) the prior carries the noise, so the tests run and keep
    # their level; the session-only path still refuses them.
    audits = _audits(CouncilSpec(n_members=3), 200, seed=91)
    for flag in ("self", "lenient", "position"):
        assert _rate(audits, flag) < 0.10
    one_df = [a for a in audits if a.sample_sizes["residual_df"] == 1]
    assert len(one_df) > 150
    tested = [a for a in one_df if "moderated" in a.indicator_only["reviewers"]]
    assert len(tested) > 0.7 * len(one_df)  # the rest fit exactly: no noise, not tested
    for audit in tested:
        assert None not in audit.reviewer_offset_p_values.values()
    session_only = AuditThresholds(moderate_reviewer_noise=False)
    for session in generate_sessions(CouncilSpec(n_members=3), 20, seed=91):
        audit = run_bias_audit(
            session.stage1_responses, session.stage2_scores, thresholds=session_only
        )
        if audit.sample_sizes["residual_df"] == 1:
            assert "not tested" in audit.indicator_only["reviewers"]
            assert set(audit.reviewer_offset_p_values.values()) <= {None}


def test_unequal_reviewer_noise_does_not_make_flags_fire() -> None:
    # reviewer noise SDs 0.5 .. 2.0 at 7 members: the pooled tests fired in ~9%
    # (self-preference) and ~10% (harsh or generous); per-reviewer noise keeps them down.
    spec = CouncilSpec(
        n_members=7,
        noise_sds=[0.5 + 0.25 * i for i in range(7)],
        missing_score_rate=0.1,
        missing_review_rate=0.3,
    )
    audits = _audits(spec, 150, seed=92)
    for flag in ("self", "lenient", "position"):
        assert _rate(audits, flag) < 0.10


def test_shared_order_reports_no_position_variance() -> None:
    # every reviewer saw the same order: slots are the answers, nothing is identified
    spec = CouncilSpec(n_members=5, shared_order=True, missing_score_rate=0.1)
    for audit in _audits(spec, 40, seed=93):
        assert audit.position_score_variance is None
        assert audit.position_score_p_value is None
        assert not audit.position_bias_detected
        assert "not identified" in audit.indicator_only["position"]


def test_reported_position_variance_stays_inside_the_scale() -> None:
    # per-reviewer orders with missing cells and a missing review: identified or not, a
    # reported variance never exceeds (10 - 1)^2 / 4 on the 1-10 scale
    spec = CouncilSpec(n_members=4, missing_score_rate=0.1, missing_review_rate=0.3)
    variances = [
        a.position_score_variance
        for a in _audits(spec, 100, seed=94)
        if a.position_score_variance is not None
    ]
    assert variances and max(variances) <= 81 / 4
