"""run_bias_audit: the keys users read, input forms, self-review handling, detection."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.bias_audit import AuditThresholds, BiasAuditResult, run_bias_audit
from llm_council.bias_audit.session.thresholds import load_thresholds
from llm_council.errors import ConfigError, InputError

#: the seed design's keys, exactly as the issue shows them (users' scripts read these)
ISSUE_KEYS = {
    "length_score_correlation",
    "length_score_p_value",
    "length_bias_detected",
    "position_score_variance",
    "position_bias_detected",
    "reviewer_mean_scores",
    "reviewer_score_variance",
    "harsh_reviewers",
    "generous_reviewers",
    "overall_bias_risk",
}
ADDED_KEYS = {
    "flags_raised",
    "length_score_pairs",
    "position_score_p_value",
    "position_slot_means",
    "reviewer_offsets",
    "reviewer_offset_p_values",
    "self_preference",
    "self_preference_adjusted",
    "self_preference_p_values",
    "self_preferring_reviewers",
    "self_preference_detected",
    "pooled_self_preference",
    "pooled_self_preference_p_value",
    "sample_sizes",
    "thresholds",
    "significance_level",
    "indicator_only",
    "methods",
    "risk_flags",
    "reviewer_offsets_vs_median",
    "risk_tests_run",
    "risk_p_values",
    "risk_p_values_adjusted",
    "session_error_rate",
}

TEXTS = {"a": "short answer " * 10, "b": "a longer answer " * 40, "c": "medium " * 60}
SCORES = {
    "a": {"a": 10, "b": 5, "c": 7},
    "b": {"a": 6, "b": 10, "c": 8},
    "c": {"a": 4, "b": 6, "c": 10},
}


def test_json_keys_exactly() -> None:
    audit = run_bias_audit(TEXTS, SCORES).model_dump(mode="json")
    assert set(audit) == ISSUE_KEYS | ADDED_KEYS
    assert isinstance(audit["length_bias_detected"], bool)
    assert audit["overall_bias_risk"] in {"not_tested", "low", "medium", "high"}
    assert set(audit["reviewer_mean_scores"]) == {"a", "b", "c"}
    assert audit["thresholds"]["length_correlation_threshold"] == 0.3
    assert audit["thresholds"]["position_variance_threshold"] == 0.5
    assert audit["significance_level"] == 0.05


def test_self_reviews_feed_only_self_preference() -> None:
    audit = run_bias_audit(TEXTS, SCORES)
    # non-self scores given: a -> (5, 7), b -> (6, 8), c -> (4, 6)
    assert audit.reviewer_mean_scores == {"a": 6.0, "b": 7.0, "c": 5.0}
    assert audit.reviewer_score_variance == {"a": 2.0, "b": 2.0, "c": 2.0}
    # own score minus the others' mean for that answer: a: 10 - (6+4)/2, b: 10 - (5+6)/2,
    # c: 10 - (7+8)/2
    assert audit.self_preference == {"a": 5.0, "b": 4.5, "c": 2.5}
    assert audit.sample_sizes["n_scores"] == 6
    assert audit.sample_sizes["n_self_reviews"] == 3
    # length uses the others' mean per answer: a 5, b 5.5, c 7.5 vs log(words)
    assert audit.length_score_pairs == 3


def test_list_form_of_stage1_gives_the_same_audit() -> None:
    as_list = [{"model": model, "response": text} for model, text in TEXTS.items()]
    assert run_bias_audit(as_list, SCORES) == run_bias_audit(TEXTS, SCORES)


def _council(
    seed: int, n_members: int, **biases: float
) -> tuple[dict[str, str], dict[str, dict[str, float]], dict[str, dict[str, int]]]:
    """A synthetic council: latent quality, known biases, per-reviewer shuffles."""
    rng = np.random.default_rng(seed)
    names = [f"m{i}" for i in range(n_members)]
    quality = rng.normal(6.5, 1.0, n_members)
    words = np.exp(rng.normal(np.log(200), 0.6, n_members)).astype(int) + 1
    texts = {name: "word " * int(count) for name, count in zip(names, words, strict=True)}
    scores: dict[str, dict[str, float]] = {}
    positions: dict[str, dict[str, int]] = {}
    for r, reviewer in enumerate(names):
        order = rng.permutation(n_members)
        positions[reviewer] = {
            names[c]: int(np.flatnonzero(order == c)[0]) for c in range(n_members)
        }
        scores[reviewer] = {}
        for c, candidate in enumerate(names):
            score = quality[c] + rng.normal(0, biases.get("noise", 0.3))
            score += biases.get("harsh", 0.0) * (r == 0)
            score += biases.get("slot_a", 0.0) * (positions[reviewer][candidate] == 0)
            score += biases.get("verbosity", 0.0) * np.log(words[c] / 200)
            score += biases.get("self", 0.0) * (r == c)
            scores[reviewer][candidate] = float(score)
    return texts, scores, positions


def test_detects_each_injected_bias_and_only_it() -> None:
    texts, scores, positions = _council(1, 8, harsh=-3.0)
    audit = run_bias_audit(texts, scores, positions)
    assert audit.harsh_reviewers == ["m0"] and audit.generous_reviewers == []
    assert audit.reviewer_offsets["m0"] == pytest.approx(-3.0, abs=0.5)

    texts, scores, positions = _council(2, 8, slot_a=3.0)
    audit = run_bias_audit(texts, scores, positions)
    assert audit.position_bias_detected
    assert audit.position_slot_means["Response A"] > 1.0
    assert audit.harsh_reviewers == [] and audit.generous_reviewers == []

    texts, scores, positions = _council(3, 12, verbosity=2.0, noise=0.2)
    audit = run_bias_audit(texts, scores, positions)
    assert audit.length_bias_detected
    assert audit.length_score_correlation is not None and audit.length_score_correlation > 0.5
    assert "little power" not in audit.indicator_only["length"]  # 12 pairs
    assert audit.overall_bias_risk == "low"  # length alone is never a risk flag

    texts, scores, positions = _council(4, 8, self=3.0)
    audit = run_bias_audit(texts, scores, positions)
    assert audit.self_preference_detected and len(audit.self_preferring_reviewers) >= 4
    assert audit.pooled_self_preference == pytest.approx(3.0, abs=0.5)
    assert audit.overall_bias_risk != "low"


def test_unbiased_council_is_low_risk_and_five_members_are_indicator_only() -> None:
    texts, scores, positions = _council(5, 5)
    audit = run_bias_audit(texts, scores, positions)
    assert audit.flags_raised == [] and audit.overall_bias_risk == "low"
    assert "length" in audit.indicator_only
    assert "5 length-score pairs" in audit.indicator_only["length"]


def test_position_mapping_accepts_label_to_model_forms() -> None:
    texts, scores, positions = _council(6, 5, slot_a=1.0)
    labels = {
        reviewer: {
            f"Response {'ABCDE'[index]}": {"model": model, "display_index": index}
            for model, index in mapping.items()
        }
        for reviewer, mapping in positions.items()
    }
    legacy = {
        reviewer: {f"Response {'ABCDE'[index]}": model for model, index in mapping.items()}
        for reviewer, mapping in positions.items()
    }
    reference = run_bias_audit(texts, scores, positions)
    assert reference.position_score_variance is not None
    assert run_bias_audit(texts, scores, labels) == reference
    assert run_bias_audit(texts, scores, legacy) == reference


def test_without_positions_position_is_not_tested() -> None:
    texts, scores, _ = _council(7, 5)
    audit = run_bias_audit(texts, scores)
    assert audit.position_score_variance is None and not audit.position_bias_detected
    assert "position" in audit.indicator_only


def test_thresholds_gate_the_flags() -> None:
    texts, scores, positions = _council(1, 8, harsh=-3.0)
    strict = AuditThresholds(reviewer_offset_floor=5.0)
    assert run_bias_audit(texts, scores, positions, thresholds=strict).harsh_reviewers == []


def test_threshold_env_override_reaches_the_audit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_COUNCIL_SIGNIFICANCE_LEVEL", "0.001")
    monkeypatch.setenv("LLM_COUNCIL_LENGTH_CORRELATION_THRESHOLD", "0.9")
    audit = run_bias_audit(TEXTS, SCORES)
    assert audit.significance_level == 0.001
    assert audit.thresholds["length_correlation_threshold"] == 0.9


def test_the_prior_noise_sd_is_a_checked_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLM_COUNCIL_PRIOR_NOISE_SD", "1.0")
    assert load_thresholds().prior_noise_sd == 1.0
    for bad in ("0", "-1", "nan", "12", "quiet"):
        monkeypatch.setenv("LLM_COUNCIL_PRIOR_NOISE_SD", bad)
        with pytest.raises(ConfigError, match="LLM_COUNCIL_PRIOR_NOISE_SD"):
            load_thresholds()
    monkeypatch.delenv("LLM_COUNCIL_PRIOR_NOISE_SD")
    assert load_thresholds().prior_noise_sd == 1.5  # the packaged default


def test_missing_scores_are_left_out_not_zero() -> None:
    scores = {name: dict(given) for name, given in SCORES.items()}
    scores["a"]["b"] = None  # type: ignore[assignment]
    audit = run_bias_audit(TEXTS, scores)
    assert audit.reviewer_mean_scores["a"] == 7.0
    assert audit.sample_sizes["n_scores"] == 5


def test_degenerate_input_gives_no_claims() -> None:
    audit = run_bias_audit({"a": "x", "b": "y"}, {"a": {"b": 5}, "b": {"a": 6}})
    assert isinstance(audit, BiasAuditResult)
    # nothing could be tested: "low" would claim a clean bill of health
    assert audit.length_score_correlation is None and audit.overall_bias_risk == "not_tested"
    assert audit.risk_tests_run == []
    assert "reviewers" in audit.indicator_only


@pytest.mark.parametrize(
    ("stage1", "scores", "message"),
    [
        ("text", {}, "stage1_responses must be"),
        ([{"model": "a"}], {}, r"stage1_responses\[0\]"),
        ({"a": 3}, {}, r"stage1_responses\['a'\] must be text"),
        ({"a": "x"}, {"a": 5}, r"stage2_scores\['a'\] must be a mapping"),
        (
            {"a": "x"},
            {"b": {"a": "high"}},
            r"stage2_scores\['b'\]\['a'\] must be a number, got 'high'",
        ),
    ],
)
def test_bad_input_is_a_one_line_input_error(stage1: object, scores: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        run_bias_audit(stage1, scores)  # type: ignore[arg-type]


@pytest.mark.parametrize("n_answers", [5, 10])
def test_length_flag_is_reported_but_never_raises_risk(n_answers: int) -> None:
    # three outside judges (no self-reviews), scores rising exactly with log length: the
    # flag fires, but a length-score correlation cannot tell judges rewarding length from
    # longer answers being better, so it is not a risk flag at any number of answers
    texts = {f"c{i}": "w " * (50 * 2**i) for i in range(n_answers)}
    offsets = {"j1": 0.0, "j2": 0.1, "j3": -0.1}
    scores = {
        judge: {f"c{i}": 2.0 + 0.5 * i + offset * (-1) ** i for i in range(n_answers)}
        for judge, offset in offsets.items()
    }
    audit = run_bias_audit(texts, scores)
    assert audit.length_bias_detected and audit.flags_raised == ["length_bias_detected"]
    assert audit.risk_flags == []
    assert audit.overall_bias_risk == "low"
    note = audit.indicator_only["length"]
    assert "consensus score" in note and "padding probe" in note and "reviewer x length" in note
    assert ("little power" in note) is (n_answers < 10)


@pytest.mark.parametrize("scale", [1.0, 1e6])  # scores beyond ±1e9 are refused as input
def test_scores_fitting_exactly_are_not_tested(scale: float) -> None:
    # score = reviewer + answer exactly: the residuals are rounding error (~1e-15 of the
    # scores), and a t test on them gave p ~ 1e-40 and "harsh" flags before the fix
    names = [f"m{i}" for i in range(5)]
    texts = {name: "w " * (10 * (i + 1)) for i, name in enumerate(names)}
    scores = {
        reviewer: {candidate: scale * (i + 1) + j for j, candidate in enumerate(names)}
        for i, reviewer in enumerate(names)
    }
    audit = run_bias_audit(texts, scores)
    assert audit.harsh_reviewers == [] and audit.generous_reviewers == []
    assert not audit.self_preference_detected
    assert set(audit.reviewer_offset_p_values.values()) == {None}
    assert "exactly" in audit.indicator_only["reviewers"]


def test_median_reference_offsets_reach_the_result() -> None:
    # m0 is 1.5 points harsh on every answer, the others agree up to +-0.05: against the
    # median reviewer m0 sits at -1.5 and the rest near 0; against the others' mean
    # (including m0) a neutral reviewer would sit at +1.5/4 = +0.375.
    names = [f"m{i}" for i in range(5)]
    texts = {name: "w " * (20 * (i + 1)) for i, name in enumerate(names)}
    wobble = [0.05, -0.05, 0.0, 0.05, -0.05]
    scores = {
        reviewer: {
            candidate: 3.0 + j - 1.5 * (i == 0) + wobble[(i + j) % 5]
            for j, candidate in enumerate(names)
        }
        for i, reviewer in enumerate(names)
    }
    audit = run_bias_audit(texts, scores)
    robust = audit.reviewer_offsets_vs_median
    assert robust["m0"] == pytest.approx(-1.5, abs=0.1)
    assert all(abs(robust[name] or 0.0) <= 0.1 for name in names[1:])
