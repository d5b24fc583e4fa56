"""overall_bias_risk is "not_tested" when no risk test could run; "low" means tested, clean.

Before this level existed a 3-member council (1 residual df: every leniency and
self-preference test refused, slot effects not identified) and a session whose reviews
were all unparsed both reported "low", i.e. "checked and found nothing".
"""

from __future__ import annotations

import numpy as np

from llm_council.bias_audit import run_bias_audit
from llm_council.bias_audit.session.thresholds import AuditThresholds

#: the pooled tests without a noise prior, where 1 residual df means "not tested"
EQUAL_NOISE = AuditThresholds(equal_reviewer_noise=True)

TEXTS = {"a": "short answer " * 10, "b": "a longer answer " * 40, "c": "medium " * 60}
#: a complete 3-member council: each reviewer scores all three answers, its own included
SCORES = {
    "a": {"a": 10, "b": 5, "c": 7},
    "b": {"a": 6, "b": 10, "c": 8},
    "c": {"a": 4, "b": 6, "c": 10},
}
#: each reviewer saw its own display order
ORDERS = {
    "a": {"b": 0, "c": 1, "a": 2},
    "b": {"c": 0, "a": 1, "b": 2},
    "c": {"a": 0, "b": 1, "c": 2},
}


def test_a_three_member_council_is_tested_against_moderated_noise() -> None:
    # 1 residual df: each reviewer's variance is moderated toward the default prior
    # (ADR 0045), so leniency and self-preference run; every member gave itself 10, which
    # the pooled self-preference test now sees
    audit = run_bias_audit(TEXTS, SCORES)
    assert audit.sample_sizes["residual_df"] == 1
    assert audit.risk_tests_run == ["leniency", "self_preference"]
    assert audit.overall_bias_risk != "not_tested"
    assert "moderated" in audit.indicator_only["reviewers"]


def test_a_three_member_council_without_orders_is_not_tested() -> None:
    audit = run_bias_audit(TEXTS, SCORES, thresholds=EQUAL_NOISE)
    # under equal noise (no prior): 3 reviewers x 2 others' answers = 6 scores, 3 + 3 - 1 =
    # 5 parameters: 1 residual df, below minimum_test_df = 2, so leniency and
    # self-preference do not run; no display orders, so no position test either
    assert audit.sample_sizes["residual_df"] == 1
    assert audit.risk_tests_run == []
    assert audit.overall_bias_risk == "not_tested"
    assert "reviewers" in audit.indicator_only and "position" in audit.indicator_only


def test_a_three_member_council_with_orders_is_not_tested_either() -> None:
    # each reviewer scored two others' answers: re-drawing each one's order gives 2!^3 = 8
    # orderings, so the randomization p-value is at least 1/8 and cannot fire; it read
    # p = 1 here, which turned "not_tested" into "low" (ADR 0050). Now position is not
    # tested, and says why.
    audit = run_bias_audit(TEXTS, SCORES, ORDERS, thresholds=EQUAL_NOISE)
    assert audit.position_score_p_value is None and audit.position_bias_detected is None
    assert "too few distinct orderings" in audit.indicator_only["position"]
    assert audit.risk_tests_run == []
    assert audit.overall_bias_risk == "not_tested"


def test_every_review_unparsed_is_not_tested() -> None:
    audit = run_bias_audit(TEXTS, {"a": {}, "b": {}, "c": {}})
    assert audit.sample_sizes["n_scores"] == 0
    assert (audit.overall_bias_risk, audit.risk_tests_run) == ("not_tested", [])


def _five_member_scores(seed: int) -> tuple[dict, dict, dict]:
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(5)]
    texts = {name: "word " * (20 + 10 * i) for i, name in enumerate(names)}
    quality = rng.normal(6.0, 1.0, 5)
    scores = {
        r: {c: float(quality[j] + rng.normal(0, 1.0)) for j, c in enumerate(names)} for r in names
    }
    orders = {r: {c: int(s) for c, s in zip(names, rng.permutation(5), strict=True)} for r in names}
    return texts, scores, orders


def test_low_means_tested_and_nothing_found() -> None:
    texts, scores, orders = _five_member_scores(3)
    audit = run_bias_audit(texts, scores, orders)
    # 5 x 4 others' scores, 5 + 5 - 1 parameters: 11 residual df, every risk test runs
    assert audit.risk_tests_run == ["position", "leniency", "self_preference"]
    assert audit.risk_flags == [] and audit.overall_bias_risk == "low"
    # without display orders only leniency and self-preference ran: still "low", and
    # risk_tests_run says on what it rests
    audit = run_bias_audit(texts, scores)
    assert audit.risk_tests_run == ["leniency", "self_preference"]
    assert audit.overall_bias_risk == "low"


def test_a_flag_is_never_hidden_behind_not_tested() -> None:
    texts, scores, orders = _five_member_scores(4)
    for candidate in scores["m0"]:
        scores["m0"][candidate] -= 4.0  # a harsh reviewer
    audit = run_bias_audit(texts, scores, orders)
    assert audit.harsh_reviewers == ["m0"]
    assert audit.overall_bias_risk in ("medium", "high") and "leniency" in audit.risk_tests_run
