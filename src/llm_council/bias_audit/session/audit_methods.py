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
        "variance, re-drawing each reviewer's own display order (not tested when the model "
        "with slot effects leaves nothing to re-draw); with every reviewer's history, a "
        "weighted Wald test against its noise (ADR 0047); flag when p < the family's level "
        "(see session_risk) and variance >= position_variance_threshold"
    ),
    "leniency": (
        "reviewer effect minus the mean of the reference reviewers' effects in the additive "
        "model (same answers); two-sided t test, Holm step-down removing each flagged "
        "reviewer from the reference before re-testing the rest, so one outlier does not "
        "make the others look harsh or generous; harsh/generous when adjusted p < the "
        "family's level (see session_risk) and |offset| >= reviewer_offset_floor points. "
        "Not tested below "
        "minimum_test_df residual df under equal or session-only noise; with moderated "
        "noise (the default, ADR 0045) each reviewer's variance is moderated toward a prior "
        "(its past sessions, the store's reviewers, or prior_noise_sd; Smyth 2004) and "
        "tested at any residual df, the last two reviewers once against each other (the "
        "one farther from the median named). reviewer_offsets_vs_median: effect minus the median "
        "reviewer effect (breakdown point 50%), an estimate only"
    ),
    "self_preference": (
        "raw: own score minus the others' mean for that answer; adjusted: own score minus "
        "the additive model's prediction (with display-slot effects, at the slot the "
        "self-review was shown at, when the orders identify them); one-sided t test with "
        "the reviewer's own noise "
        "variance and Satterthwaite df (pooled with equal_reviewer_noise), Bonferroni over "
        "self-reviews; "
        "flag when adjusted p < the family's level (see session_risk) and adjusted >= "
        "self_preference_floor. "
        "With moderated noise (the default, ADR 0045): each reviewer's noise variance is "
        "moderated toward a prior (its past sessions, the store's reviewers, or "
        "prior_noise_sd; Smyth 2004), t with Welch-Satterthwaite df; the self-review "
        "p-values are Bonferroni-adjusted by 2m and the pooled mean of the self-reviews "
        "(precision-weighted: each self-review by its inverse variance, Cochran 1954) "
        "also flags when its one-sided p < half the family's level and it is >= "
        "self_preference_floor"
    ),
    "overall_bias_risk": (
        "not_tested: no risk test could run (risk_tests_run is empty: too few reviewers "
        "or residual df, no known display orders, no parsed reviews); low: at least one "
        "risk test ran and no risk flag fired; medium: one; high: two or more. Risk flags "
        "(risk_flags) are "
        "position, harsh/generous and self-preference: tests of a judge behaviour with a "
        "known false-positive rate, which share one error rate for the session (see "
        "session_risk). The length flag is reported in flags_raised but is not "
        "a risk flag: its null ('length unrelated to consensus score') is false whenever "
        "answer quality varies with length, which is not a judge bias"
    ),
    "session_risk": (
        "each tested risk family (position, leniency, self_preference) gives a gate "
        "p-value, the smallest of its own family-adjusted p-values among tests whose effect "
        "reaches its floor (risk_p_values); Holm (1979) over the k tested families gives "
        "risk_p_values_adjusted, and a family is flagged when that is below "
        "session_error_rate (= significance_level); the flagged family's own tests (which "
        "reviewers, which self-reviews) then run at Holm's level for it, alpha / (k - i + "
        "1) at rank i. Holm is the closed test (Marcus, Peritz & Gabriel 1976) of the "
        "families with Bonferroni local tests: an honest council reads overall_bias_risk "
        "above 'low' in at most session_error_rate of sessions, and a family without bias "
        "is flagged with at most that chance whatever the others hold (ADR 0050)"
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
    n_risk_families: int = 1,
) -> str | None:
    """Why a small pooled p-value with no self-preference flag is not a flag.

    ``pooled_self_preference_p_value`` tests the mean adjusted self-preference over all
    of the session's self-reviews. With session-only noise it is one unadjusted test with no
    points floor, information only; with moderated noise (ADR 0045) it is also a flag, but
    only below ``pooled_flag_level`` (half the family's level: it shares the level with the
    reviewers' own tests) and with a mean of at least ``self_preference_floor`` points.
    ``self_preference_detected`` otherwise needs one reviewer's own test, Bonferroni-adjusted,
    below the family's level and at least the floor. The family's level is
    ``significance_level`` when it is the only risk family tested; with
    ``n_risk_families`` k > 1 the session's procedure (ADR 0050) gives it Holm's level,
    between alpha / k and alpha. A pooled 0.0497 beside ``self_preference_detected: false``
    is therefore consistent, and puzzled users (issue 28): the note says so where it
    happens and is absent otherwise.
    """
    if p_value is None or detected or p_value >= significance_level:
        return None
    if n_risk_families > 1:
        family_level = (
            f"the level the session's procedure gives the family (Holm over "
            f"{n_risk_families} risk families: between {significance_level / n_risk_families:.3g} "
            f"and {significance_level:g}, see risk_p_values_adjusted)"
        )
    else:
        family_level = f"{significance_level:g}"
    if pooled_flag_level is None:
        pooled_rule = (
            f"(one test over all {n_self_reviews} self-reviews, no points floor) and is "
            "information, not a flag"
        )
    else:
        pooled_level = (
            f"half of {family_level}" if n_risk_families > 1 else f"{pooled_flag_level:g}"
        )
        pooled_rule = (
            f"(one test over all {n_self_reviews} self-reviews); it flags only below "
            f"{pooled_level} with a mean of at least {self_preference_floor:g} "
            "point(s), since it shares the level with the reviewers' own tests"
        )
    return (
        f"pooled_self_preference_p_value {p_value:.3g} is below {significance_level:g}, yet "
        "no reviewer is flagged: the pooled test asks whether the council as a whole scores "
        f"its own answers higher {pooled_rule}; a reviewer is flagged by its own test, "
        f"Bonferroni-adjusted over the self-reviews, below {family_level} with at "
        f"least {self_preference_floor:g} point(s). Pool sessions with llm-council "
        "bias-report to test each reviewer on more data"
    )
