"""How each per-session number is computed, in words: the result's ``methods`` field.

Kept apart from the computation in :mod:`llm_council.bias_audit.session.audit` so the text users
read can be reviewed on its own; each entry must match what the code does.
"""

from __future__ import annotations

METHODS: dict[str, str] = {
    "length": (
        "Pearson r between log(word count) and the mean score the other members gave each "
        "answer (unit: one answer per candidate); exact two-sided t test with n-2 df; flag "
        "when p < significance_level and |r| >= length_correlation_threshold. What it "
        "measures: whether longer answers got higher consensus scores in this session. It "
        "cannot separate 'judges reward length' from 'longer answers were better' (with no "
        "judge bias and quality correlated 0.5 / 0.8 with log length it fires in about 10% / "
        "28% of sessions), so it never raises overall_bias_risk. What separates the two: the "
        "padding probe (same answer, padded) and bias-report's reviewer x length term"
    ),
    "position": (
        "additive model score = mean + reviewer + candidate (self-reviews excluded); "
        "position_score_variance: count-weighted variance over display slots of slot effects "
        "fitted jointly with it; p: randomization test of the residuals' between-slot "
        "variance, re-drawing each reviewer's own display order; flag when p < "
        "significance_level and variance >= position_variance_threshold"
    ),
    "leniency": (
        "reviewer effect minus the mean of the reference reviewers' effects in the additive "
        "model (same answers); two-sided t test, Holm step-down removing each flagged "
        "reviewer from the reference before re-testing the rest, so one outlier does not "
        "make the others look harsh or generous; harsh/generous when adjusted p < "
        "significance_level and |offset| >= reviewer_offset_floor points. Not tested below "
        "minimum_test_df residual df under equal or session-only noise; with moderated "
        "noise (the default, ADR 0045) each reviewer's variance is moderated toward a prior "
        "(its past sessions, the store's reviewers, or prior_noise_sd; Smyth 2004) and "
        "tested at any residual df, the last two reviewers once against each other (the "
        "one farther from the median named). reviewer_offsets_vs_median: effect minus the median "
        "reviewer effect (breakdown point 50%), an estimate only"
    ),
    "self_preference": (
        "raw: own score minus the others' mean for that answer; adjusted: own score minus "
        "the additive model's prediction; one-sided t test with the reviewer's own noise "
        "variance and Satterthwaite df (pooled with equal_reviewer_noise), Bonferroni over "
        "self-reviews; "
        "flag when adjusted p < significance_level and adjusted >= self_preference_floor. "
        "With moderated noise (the default, ADR 0045): each reviewer's noise variance is "
        "moderated toward a prior (its past sessions, the store's reviewers, or "
        "prior_noise_sd; Smyth 2004), t with Welch-Satterthwaite df; the self-review "
        "p-values are Bonferroni-adjusted by 2m and the pooled mean of the self-reviews "
        "(precision-weighted: each self-review by its inverse variance, Cochran 1954) "
        "also flags when its one-sided p < significance_level / 2 and it is >= "
        "self_preference_floor"
    ),
    "overall_bias_risk": (
        "not_tested: no risk test could run (risk_tests_run is empty: too few reviewers "
        "or residual df, no known display orders, no parsed reviews); low: at least one "
        "risk test ran and no risk flag fired; medium: one; high: two or more. Risk flags "
        "(risk_flags) are "
        "position, harsh/generous and self-preference: tests of a judge behaviour with a "
        "known false-positive rate. The length flag is reported in flags_raised but is not "
        "a risk flag: its null ('length unrelated to consensus score') is false whenever "
        "answer quality varies with length, which is not a judge bias"
    ),
}


def pooled_self_preference_note(
    p_value: float | None,
    detected: bool,
    *,
    n_self_reviews: int,
    significance_level: float,
    self_preference_floor: float,
    pooled_flag_level: float | None = None,
) -> str | None:
    """Why a small pooled p-value with no self-preference flag is not a flag.

    ``pooled_self_preference_p_value`` tests the mean adjusted self-preference over all
    of the session's self-reviews. With session-only noise it is one unadjusted test with no
    points floor, information only; with moderated noise (ADR 0045) it is also a flag, but
    only below ``pooled_flag_level`` (half the level: it shares the level with the
    reviewers' own tests) and with a mean of at least ``self_preference_floor`` points.
    ``self_preference_detected`` otherwise needs one reviewer's own test, Bonferroni-adjusted,
    below the level and at least the floor. A pooled 0.0497 beside
    ``self_preference_detected: false`` is therefore consistent, and puzzled users
    (issue 28): the note says so where it happens and is absent otherwise.
    """
    if p_value is None or detected or p_value >= significance_level:
        return None
    if pooled_flag_level is None:
        pooled_rule = (
            f"(one test over all {n_self_reviews} self-reviews, no points floor) and is "
            "information, not a flag"
        )
    else:
        pooled_rule = (
            f"(one test over all {n_self_reviews} self-reviews); it flags only below "
            f"{pooled_flag_level:g} with a mean of at least {self_preference_floor:g} "
            "point(s), since it shares the level with the reviewers' own tests"
        )
    return (
        f"pooled_self_preference_p_value {p_value:.3g} is below {significance_level:g}, yet "
        "no reviewer is flagged: the pooled test asks whether the council as a whole scores "
        f"its own answers higher {pooled_rule}; a reviewer is flagged by its own test, "
        f"Bonferroni-adjusted over the self-reviews, below {significance_level:g} with at "
        f"least {self_preference_floor:g} point(s). Pool sessions with llm-council "
        "bias-report to test each reviewer on more data"
    )
