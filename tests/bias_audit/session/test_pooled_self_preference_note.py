"""Issue 28: a small pooled self-preference p-value beside no flag says why in the output.

``pooled_self_preference_p_value`` 0.0497 with ``self_preference_detected: false`` puzzled
a user. The pooled test is one test over all self-reviews with no Bonferroni adjustment and
no points floor; the flag needs one reviewer's own adjusted test and 1 point. The audit now
adds ``indicator_only["pooled_self_preference"]`` exactly then; no statistic changes (the
golden audits still agree to 1e-12, test_audit_golden.py).
"""

from __future__ import annotations

from generators.independent_council import CouncilSpec, generate_sessions
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.audit_methods import pooled_self_preference_note
from llm_council.bias_audit.session.score_table import score_table_from_mappings
from llm_council.bias_audit.session.thresholds import AuditThresholds


def _note(p_value: float | None, detected: bool = False) -> str | None:
    return pooled_self_preference_note(
        p_value, detected, n_self_reviews=5, significance_level=0.05, self_preference_floor=1.0
    )


def test_the_note_appears_only_for_a_small_pooled_p_without_a_flag() -> None:
    note = _note(0.0497)
    assert note is not None
    assert note.startswith("pooled_self_preference_p_value 0.0497 is below 0.05, yet no")
    assert "information, not a flag" in note and "all 5 self-reviews" in note
    assert "Bonferroni" in note and "at least 1 point(s)" in note
    assert _note(0.05) is None  # not below the level
    assert _note(0.2) is None
    assert _note(None) is None  # not tested
    assert _note(0.001, detected=True) is None  # a reviewer is flagged: nothing to explain


def test_a_seeded_session_carries_the_note_and_the_same_numbers() -> None:
    # the golden case "biased-5" session 8 (tests/bias_audit/session/audit_golden_cases.py): pooled
    # p = 0.0093, no reviewer flagged for self-preference
    spec = CouncilSpec(
        n_members=5,
        leniency=[-2.5, 0.0, 0.0, 0.0, 1.5],
        self_bias=[2.0, 0.0, 2.0, 0.0, 0.0],
        slot_effects=[[1.5, 0.0, 0.0, 0.0, -1.5]] * 5,
        noise_sds=[0.5, 1.0, 1.5, 0.7, 1.2],
        quality_length_correlation=0.6,
    )
    session = list(generate_sessions(spec, 20, 20))[8]
    table = score_table_from_mappings(
        session.stage1_responses, session.stage2_scores, session.position_mapping
    )
    # the golden cases pin the session-only noise path (ADR 0045 keeps it as an option)
    result = audit_score_table(table, AuditThresholds(moderate_reviewer_noise=False))
    assert result.pooled_self_preference_p_value is not None
    assert result.pooled_self_preference_p_value < 0.05
    assert not result.self_preference_detected
    note = result.indicator_only["pooled_self_preference"]
    assert note.startswith(
        f"pooled_self_preference_p_value {result.pooled_self_preference_p_value:.3g} is below"
    )
    assert "pooled_self_preference" not in result.flags_raised
    assert "self_preference_detected" not in result.risk_flags


def test_with_moderated_noise_the_note_gives_the_pooled_flag_rule() -> None:
    # moderated noise (ADR 0045): the pooled test is a flag too, at half the level and with
    # the points floor, so a pooled p between the half level and the level is not a flag
    note = pooled_self_preference_note(
        0.03,
        False,
        n_self_reviews=4,
        significance_level=0.05,
        self_preference_floor=1.0,
        pooled_flag_level=0.025,
    )
    assert note is not None
    assert "flags only below 0.025 with a mean of at least 1 point(s)" in note
    assert "information, not a flag" not in note


def test_a_council_wide_flag_without_named_reviewers_says_why() -> None:
    # issue 37 C.5: `flags_raised: ['self_preference_detected']` beside
    # `self_preferring_reviewers: []` read as a contradiction; every judge +1.2 for its
    # own answer at 5 members: the pooled test passes where no single reviewer's does
    import numpy as np

    from generators.independent_council import CouncilSpec, generate_session
    from llm_council.bias_audit.session.audit import audit_score_table
    from llm_council.bias_audit.session.score_table import score_table_from_mappings
    from llm_council.bias_audit.session.thresholds import AuditThresholds

    spec = CouncilSpec(n_members=5, noise_sd=0.7, self_bias=[1.2] * 5)
    rng = np.random.default_rng(0)
    seen = 0
    for _ in range(60):
        session = generate_session(spec, rng)
        table = score_table_from_mappings(
            session.stage1_responses, session.stage2_scores, session.position_mapping
        )
        audit = audit_score_table(table, AuditThresholds())
        note = audit.indicator_only.get("council_self_preference", "")
        if audit.self_preference_detected and not audit.self_preferring_reviewers:
            seen += 1
            assert "council-wide test" in note and "self_preferring_reviewers is empty" in note
        else:
            assert "council-wide test" not in note
    assert seen >= 1
