"""Issue 9 section 1: the reference design's calls, with exactly its call shapes."""

from __future__ import annotations

import asyncio
import json
import math
from dataclasses import asdict
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats

from generators.independent_council import CouncilSpec, generate_sessions
from llm_council import run_full_council
from llm_council.bias_audit import (
    BiasAuditResult,
    audit_reviewer_calibration,
    calculate_length_correlation,
    calculate_position_bias,
    derive_position_mapping,
    extract_scores_from_stage2,
    run_bias_audit,
)
from llm_council.bias_audit.records.jsonl_store import read_records, store_path
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import InputError

# karpathy's council: every reviewer is a candidate and all saw one order
STAGE1 = [
    {"model": "openai/gpt-5", "response": "short answer here"},
    {"model": "anthropic/claude", "response": " ".join(["word"] * 40)},
    {"model": "google/gemini", "response": " ".join(["word"] * 12)},
    {"model": "x-ai/grok", "response": " ".join(["word"] * 90)},
]
MODELS = [entry["model"] for entry in STAGE1]
STAGE2_SCORES: dict[str, dict[str, float | None]] = {
    "openai/gpt-5": {"openai/gpt-5": 9, "anthropic/claude": 6, "google/gemini": 5, "x-ai/grok": 8},
    "anthropic/claude": {
        "openai/gpt-5": 5,
        "anthropic/claude": 9,
        "google/gemini": 4,
        "x-ai/grok": 7,
    },
    "google/gemini": {"openai/gpt-5": 6, "anthropic/claude": 7, "google/gemini": 8, "x-ai/grok": 8},
    "x-ai/grok": {"openai/gpt-5": 4, "anthropic/claude": 6, "google/gemini": 5, "x-ai/grok": 9},
}
LABEL_TO_MODEL = {
    "Response A": "anthropic/claude",
    "Response B": "x-ai/grok",
    "Response C": "openai/gpt-5",
    "Response D": "google/gemini",
}


def one_line_input_error(excinfo: pytest.ExceptionInfo[InputError], *names: str) -> None:
    message = str(excinfo.value)
    assert "\n" not in message
    for name in names:
        assert name in message, message


# --- run_bias_audit(stage1_responses, stage2_scores, position_mapping) ---------------


def test_flat_position_mapping_with_reviewers_that_are_candidates() -> None:
    position_mapping = derive_position_mapping(LABEL_TO_MODEL)
    assert position_mapping == {
        "anthropic/claude": 0,
        "x-ai/grok": 1,
        "openai/gpt-5": 2,
        "google/gemini": 3,
    }
    stage1_responses, stage2_scores = STAGE1, STAGE2_SCORES
    flat = run_bias_audit(stage1_responses, stage2_scores, position_mapping)
    per_reviewer = run_bias_audit(
        stage1_responses, stage2_scores, {reviewer: position_mapping for reviewer in MODELS}
    )
    assert flat == per_reviewer
    # karpathy's label_to_model itself is a flat order too
    assert run_bias_audit(stage1_responses, stage2_scores, LABEL_TO_MODEL) == flat
    # one order for everybody: every slot is one answer, so the audit saw the positions
    # (4 labels) but cannot separate them from the answers
    assert flat.sample_sizes["n_reviewers"] == 4


def test_flat_position_mapping_with_external_judges_is_applied_not_ignored() -> None:
    rng = np.random.default_rng(4)
    candidates = [f"cand-{i}" for i in range(5)]
    judges = [f"judge-{i}" for i in range(6)]
    stage1_responses = {name: " ".join(["w"] * (10 + 7 * i)) for i, name in enumerate(candidates)}
    position_mapping = {name: slot for slot, name in enumerate(candidates)}
    stage2_scores = {
        judge: {name: float(rng.integers(3, 9)) for name in candidates} for judge in judges
    }
    with_positions = run_bias_audit(stage1_responses, stage2_scores, position_mapping)
    without = run_bias_audit(stage1_responses, stage2_scores)
    assert without.position_slot_means == {}
    assert "fewer than two known display positions" in without.indicator_only["position"]
    # applied: every judge saw this one order, so the slots are the answers and the audit
    # says position is not identified (it must not estimate confounded slot effects)
    assert "not identified" in with_positions.indicator_only["position"]
    assert with_positions.position_score_variance is None
    assert with_positions.position_slot_means == {}
    # the same as giving every judge that order explicitly
    explicit = run_bias_audit(
        stage1_responses, stage2_scores, dict.fromkeys(judges, position_mapping)
    )
    assert with_positions == explicit


def test_per_reviewer_label_maps_from_our_metadata_are_accepted() -> None:
    nested = {
        reviewer: {
            "Response A": {"model": MODELS[(i + 1) % 4], "display_index": 0},
            "Response B": {"model": MODELS[(i + 2) % 4], "display_index": 1},
            "Response C": {"model": MODELS[(i + 3) % 4], "display_index": 2},
            "Response D": {"model": MODELS[i], "display_index": 3},
        }
        for i, reviewer in enumerate(MODELS)
    }
    as_label_maps = run_bias_audit(STAGE1, STAGE2_SCORES, nested)
    as_indexes = run_bias_audit(STAGE1, STAGE2_SCORES, derive_position_mapping(nested))
    assert as_label_maps == as_indexes
    assert as_label_maps.position_slot_means


def test_asdict_of_the_result_is_json_and_equals_model_dump() -> None:
    position_mapping = derive_position_mapping(LABEL_TO_MODEL)
    metadata: dict[str, Any] = {}
    metadata["bias_audit"] = asdict(run_bias_audit(STAGE1, STAGE2_SCORES, position_mapping))
    text = json.dumps(metadata["bias_audit"], allow_nan=False)
    result = run_bias_audit(STAGE1, STAGE2_SCORES, position_mapping)
    assert json.loads(text) == result.model_dump(mode="json") == asdict(result)
    assert json.loads(result.model_dump_json()) == asdict(result)
    assert list(metadata["bias_audit"])[:10] == [
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
    ]
    assert list(BiasAuditResult.model_fields) == list(metadata["bias_audit"])
    assert BiasAuditResult.model_validate(asdict(result)) == result


def test_result_stays_frozen_and_rejects_unknown_fields() -> None:
    result = run_bias_audit(STAGE1, STAGE2_SCORES)
    with pytest.raises(AttributeError):
        result.overall_bias_risk = "low"  # type: ignore[misc]
    with pytest.raises(ValueError, match="unexpected"):
        BiasAuditResult.model_validate({**asdict(result), "surprise": 1})


BAD_SHAPES = [
    # (stage1_responses, stage2_scores, position_mapping, words the message must name)
    (STAGE1, [["openai/gpt-5", 7]], None, ("stage2_scores", "list")),
    (STAGE1, None, None, ("stage2_scores", "NoneType")),
    (STAGE1, {"openai/gpt-5": None}, None, ("stage2_scores['openai/gpt-5']",)),
    (STAGE1, {"openai/gpt-5": [7, 8]}, None, ("stage2_scores['openai/gpt-5']",)),
    (STAGE1, {"openai/gpt-5": {"x-ai/grok": "7"}}, None, ("['x-ai/grok']", "'7'")),
    (STAGE1, {"openai/gpt-5": {"x-ai/grok": True}}, None, ("['x-ai/grok']",)),
    (STAGE1, {"openai/gpt-5": {"x-ai/grok": 2e154}}, None, ("['x-ai/grok']", "within")),
    (STAGE1, {"openai/gpt-5": {"x-ai/grok": 10**400}}, None, ("['x-ai/grok']", "within")),
    (STAGE1, STAGE2_SCORES, {"x-ai/grok": "1"}, ("position_mapping['x-ai/grok']", "'1'")),
    (STAGE1, STAGE2_SCORES, {"x-ai/grok": -1}, ("position_mapping['x-ai/grok']",)),
    (STAGE1, STAGE2_SCORES, {"x-ai/grok": 1.5}, ("position_mapping['x-ai/grok']",)),
    (STAGE1, STAGE2_SCORES, {"x-ai/grok": None}, ("position_mapping['x-ai/grok']",)),
    (STAGE1, STAGE2_SCORES, [("x-ai/grok", 1)], ("position_mapping", "list")),
    (STAGE1, STAGE2_SCORES, {"x-ai/grok": 1, "openai/gpt-5": 1}, ("position 1",)),
    (
        STAGE1,
        STAGE2_SCORES,
        {"x-ai/grok": 1, "google/gemini": {"x-ai/grok": 0}},
        ("position_mapping['x-ai/grok']", "per-reviewer"),
    ),
    (STAGE1, STAGE2_SCORES, {"openai/gpt-5": {"x-ai/grok": "A"}}, ("['x-ai/grok']",)),
    ([{"model": "a"}], STAGE2_SCORES, None, ("stage1_responses[0]",)),
    ([{"model": ["a"], "response": "x"}], STAGE2_SCORES, None, ("stage1_responses[0]['model']",)),
    ({"a": None}, STAGE2_SCORES, None, ("stage1_responses['a']",)),
    ("text", STAGE2_SCORES, None, ("stage1_responses", "str")),
    (None, STAGE2_SCORES, None, ("stage1_responses", "NoneType")),
]


@pytest.mark.parametrize(("stage1", "scores", "positions", "names"), BAD_SHAPES)
def test_bad_shapes_are_one_line_input_errors_naming_the_key(
    stage1: Any, scores: Any, positions: Any, names: tuple[str, ...]
) -> None:
    with pytest.raises(InputError) as excinfo:
        run_bias_audit(stage1, scores, positions)
    one_line_input_error(excinfo, *names)


names = st.sampled_from(["a", "b", "c", "Response A", "Response B", "", "model"])
json_leaves = (
    st.none()
    | st.booleans()
    | st.integers(-3, 12)
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6)
)
json_ish = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
    max_leaves=12,
)
scores_shapes = st.dictionaries(
    names, st.dictionaries(names, json_leaves, max_size=4) | json_ish, max_size=4
)
position_shapes = (
    st.none()
    | st.dictionaries(names, st.integers(-1, 5) | json_ish, max_size=4)
    | st.dictionaries(names, st.dictionaries(names, st.integers(-1, 5) | json_ish, max_size=4))
    | json_ish
)
stage1_shapes = (
    st.dictionaries(names, st.text(max_size=20) | json_ish, max_size=4)
    | st.lists(st.fixed_dictionaries({"model": names, "response": st.text(max_size=20)}))
    | json_ish
)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stage1=stage1_shapes, scores=scores_shapes | json_ish, positions=position_shapes)
def test_random_json_shapes_raise_only_input_error(
    stage1: Any, scores: Any, positions: Any
) -> None:
    only_input_error_escapes(stage1, scores, positions)


@pytest.mark.longfuzz
@settings(max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stage1=stage1_shapes, scores=scores_shapes | json_ish, positions=position_shapes)
def test_random_json_shapes_raise_only_input_error_long(
    stage1: Any, scores: Any, positions: Any
) -> None:
    only_input_error_escapes(stage1, scores, positions)


def only_input_error_escapes(stage1: Any, scores: Any, positions: Any) -> None:
    """run_bias_audit on any shape: a result that is JSON without NaN, or an InputError."""
    try:
        result = run_bias_audit(stage1, scores, positions)
    except InputError as error:
        assert "\n" not in str(error)
        return
    json.dumps(asdict(result), allow_nan=False)


# --- derive_position_mapping(metadata["label_to_model"]) ------------------------------


def simulated_council() -> CouncilConfig:
    return CouncilConfig(
        members=tuple(CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(4)),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )


def test_derive_position_mapping_on_run_full_council_metadata() -> None:
    result = asyncio.run(
        run_full_council("Which sort is stable?", config=simulated_council(), seed=7)
    )
    metadata = result.metadata
    position_mapping = derive_position_mapping(metadata["label_to_model"])
    assert set(position_mapping) == {"m0", "m1", "m2", "m3"}
    for review in result.stage2:
        shown = position_mapping[review.reviewer]
        assert shown == {entry.candidate: entry.display_index for entry in review.candidates}
        # one reviewer's map gives the flat form
        assert derive_position_mapping(metadata["label_to_model"][review.reviewer]) == shown
    # and the per-reviewer result goes straight into run_bias_audit
    stage1_responses = [{"model": a.member, "response": a.text} for a in result.stage1]
    stage2_scores = {
        review.reviewer: {entry.candidate: entry.score for entry in review.candidates}
        for review in result.stage2
    }
    audit = run_bias_audit(stage1_responses, stage2_scores, position_mapping)
    assert audit.position_slot_means


@pytest.mark.parametrize("empty", [None, {}])
def test_derive_position_mapping_of_nothing_is_empty(empty: Any) -> None:
    assert derive_position_mapping(empty) == {}


@pytest.mark.parametrize(
    ("label_to_model", "names"),
    [
        ({"Response A": 3}, ("label_to_model['Response A']", "int")),
        ({"first": "m1"}, ("'first'", "not a label")),
        ({"Response A": {"model": "m1", "display_index": "0"}}, ("display_index", "'0'")),
        ({"Response A": "m1", "Response B": "m1"}, ("'m1'", "two labels")),
        (
            {"r1": {"Response A": "m1"}, "Response B": "m2"},
            ("label_to_model['Response B']", "mixes"),
        ),
        (["Response A"], ("label_to_model", "list")),
    ],
)
def test_derive_position_mapping_bad_maps(label_to_model: Any, names: tuple[str, ...]) -> None:
    with pytest.raises(InputError) as excinfo:
        derive_position_mapping(label_to_model)
    one_line_input_error(excinfo, *names)


def test_enhanced_entry_without_display_index_falls_back_to_the_letter() -> None:
    assert derive_position_mapping(
        {"Response B": {"model": "m2"}, "Response A": {"model": "m1"}}
    ) == {"m2": 1, "m1": 0}


# --- the helpers ----------------------------------------------------------------------


def test_calculate_length_correlation_is_pearson_of_log_words_vs_others_mean() -> None:
    responses, scores = STAGE1, STAGE2_SCORES
    r, p = calculate_length_correlation(responses, scores)
    words = [len(entry["response"].split()) for entry in STAGE1]
    others_mean = [
        np.mean([scores[reviewer][model] for reviewer in MODELS if reviewer != model])
        for model in MODELS
    ]
    expected = stats.pearsonr(np.log(words), others_mean)
    assert r == pytest.approx(expected.statistic, abs=1e-12)
    assert p == pytest.approx(expected.pvalue, abs=1e-12)
    # the same numbers the per-session audit reports
    audit = run_bias_audit(responses, scores)
    assert (audit.length_score_correlation, audit.length_score_p_value) == (r, p)


def test_calculate_length_correlation_undefined_is_none_not_zero() -> None:
    two = STAGE1[:2]
    assert calculate_length_correlation(two, {"x": {"openai/gpt-5": 5}}) == (None, None)
    assert calculate_length_correlation([], {}) == (None, None)


def test_audit_reviewer_calibration_shape_and_values() -> None:
    scores = STAGE2_SCORES
    calibration = audit_reviewer_calibration(scores)
    assert set(calibration) == set(MODELS)
    for reviewer, summary in calibration.items():
        others = [s for c, s in scores[reviewer].items() if c != reviewer]
        assert summary["mean"] == pytest.approx(np.mean(others))
        assert summary["std"] == pytest.approx(np.std(others, ddof=1))
        assert summary["count"] == 3
        assert summary["n_self_scores_excluded"] == 1
        assert {"offset", "offset_p_value", "verdict"} <= set(summary)
    # offsets are the audit's (points above the other reviewers on the same answers)
    audit = run_bias_audit(STAGE1, scores)
    assert {r: c["offset"] for r, c in calibration.items()} == audit.reviewer_offsets
    json.dumps(calibration, allow_nan=False)


def test_audit_reviewer_calibration_single_score_has_no_std() -> None:
    calibration = audit_reviewer_calibration({"j1": {"a": 7}, "j2": {}})
    assert calibration == {
        "j1": {
            "mean": 7.0,
            "std": None,
            "count": 1,
            "n_self_scores_excluded": 0,
            "offset": None,
            "offset_p_value": None,
            "verdict": None,
        }
    }


def test_calculate_position_bias_hand_example() -> None:
    # Two reviews of answers X and Y, in both orders:
    #   entry 0 shows [X, Y] and scores X = 8, Y = 6
    #   entry 1 shows [Y, X] and scores Y = 7, X = 7
    # Model score = mu_entry + q_answer + s_slot, with c = q_X - q_Y and d = s_A - s_B:
    #   entry 0: (8 - 6) = c + d = 2;  entry 1: (7 - 7) = -c + d = 0  =>  c = 1, d = 1.
    # Slot effects centred with equal counts: A = +0.5, B = -0.5, so the count-weighted
    # variance is (2 * 0.25 + 2 * 0.25) / 4 = 0.25 points^2. The naive formula (variance
    # of the raw slot means, A: (8 + 7) / 2 = 7.5, B: (6 + 7) / 2 = 6.5) gives 0.5.
    session_data = [
        {"display_order": ["X", "Y"], "scores": {"X": 8, "Y": 6}},
        {"display_order": ["Y", "X"], "scores": {"Y": 7, "X": 7}},
    ]
    variance, detected = calculate_position_bias(session_data)
    assert variance == pytest.approx(0.25, abs=1e-9)
    assert detected is False


def test_calculate_position_bias_one_shared_order_is_not_identified() -> None:
    session_data = [
        {"display_order": ["X", "Y", "Z"], "scores": {"X": 9, "Y": 6, "Z": 3}},
        {"display_order": ["X", "Y", "Z"], "scores": {"X": 8, "Y": 6, "Z": 2}},
        {"display_order": ["X", "Y", "Z"], "scores": {"X": 9, "Y": 5, "Z": 3}},
    ]
    # the naive variance of slot means would be 9 points^2 "detected"; here: unknown
    assert calculate_position_bias(session_data) == (None, None)
    # the older reference call shape with a flat mapping: same answer
    scores = {f"j{i}": entry["scores"] for i, entry in enumerate(session_data)}
    assert calculate_position_bias(scores, {"X": 0, "Y": 1, "Z": 2}) == (None, None)


def _session_data_from_generator(spec: CouncilSpec, n_sessions: int, seed: int) -> list[Any]:
    entries: list[Any] = []
    for session in generate_sessions(spec, n_sessions, seed):
        for reviewer, scores_given in session.stage2_scores.items():
            shown = session.position_mapping[reviewer]
            entries.append(
                {
                    "session_id": session.session_id,
                    "reviewer": reviewer,
                    "display_order": sorted(shown, key=shown.__getitem__),
                    "scores": scores_given,
                }
            )
    return entries


def test_calculate_position_bias_finds_a_strong_primacy_effect() -> None:
    primacy = CouncilSpec(n_members=4, slot_effects=[[2.0, 0.0, 0.0, -1.0]] * 4)
    variance, detected = calculate_position_bias(_session_data_from_generator(primacy, 12, 1))
    assert detected is True
    assert variance is not None and variance > 0.5


@pytest.mark.slow
def test_calculate_position_bias_false_positive_rate() -> None:
    """Null councils (independent generator, per-reviewer orders): flag rate <= 5% + MC."""
    null = CouncilSpec(n_members=4, missing_score_rate=0.05)
    n_runs = 400
    fired = sum(
        bool(calculate_position_bias(_session_data_from_generator(null, 3, seed))[1])
        for seed in range(n_runs)
    )
    rate = fired / n_runs
    assert rate <= 0.05 + 2.58 * math.sqrt(0.05 * 0.95 / n_runs), rate


def test_calculate_position_bias_bad_shapes() -> None:
    cases: list[tuple[Any, tuple[str, ...]]] = [
        ({"display_order": ["X"]}, ("session_data", "dict")),
        ([{"display_order": "XY", "scores": {}}], ("session_data[0]['display_order']",)),
        ([{"display_order": ["X"], "scores": {"Y": 3}}], ("['Y']", "not in display_order")),
        ([{"display_order": ["X", "X"], "scores": {}}], ("'X' twice",)),
        ([{"display_order": ["X"], "scores": {"X": "high"}}], ("['X']", "'high'")),
        ([None], ("session_data[0]",)),
    ]
    for session_data, names in cases:
        with pytest.raises(InputError) as excinfo:
            calculate_position_bias(session_data)
        one_line_input_error(excinfo, *names)


KARPATHY_STAGE2 = [
    {
        "model": "openai/gpt-5",
        "ranking": "B is thorough...\n\nFINAL RANKING:\n1. Response B\n2. Response A\n"
        "3. Response D\n4. Response C",
        "parsed_ranking": ["Response B", "Response A", "Response D", "Response C"],
    },
    {
        "model": "anthropic/claude",
        "ranking": "FINAL RANKING:\n1. Response C\n2. Response B",
        "parsed_ranking": ["Response C", "Response B"],
    },
    {
        "model": "google/gemini",
        "ranking": 'Here is my verdict.\n{"ranking": ["Response A", "Response C", "Response B", '
        '"Response D"], "scores": {"Response A": 9, "Response B": 6, "Response C": 7.5, '
        '"Response D": 14}}',
        "parsed_ranking": ["Response A", "Response C", "Response B", "Response D"],
    },
]


def test_extract_scores_from_stage2_with_karpathy_results() -> None:
    stage2_results, label_to_model = KARPATHY_STAGE2, LABEL_TO_MODEL
    scores = extract_scores_from_stage2(stage2_results, label_to_model)
    assert scores == {
        # a ranking only: 1st of 4 shown gets 4 points, ... last gets 1
        "openai/gpt-5": {
            "x-ai/grok": 4.0,
            "anthropic/claude": 3.0,
            "google/gemini": 2.0,
            "openai/gpt-5": 1.0,
        },
        # a partial ranking: unranked answers get no score, not 0
        "anthropic/claude": {"openai/gpt-5": 4.0, "x-ai/grok": 3.0},
        # our JSON scores in the text win over rank points; 14 is off the 1-10 scale
        "google/gemini": {"anthropic/claude": 9.0, "x-ai/grok": 6.0, "openai/gpt-5": 7.5},
    }
    # and the result feeds run_bias_audit directly
    run_bias_audit(STAGE1, scores, derive_position_mapping(label_to_model))


def test_extract_scores_from_stage2_reference_dict_form_and_abstention() -> None:
    stage2_results = [
        {
            "model": "openai/gpt-5",
            "ranking": "...",
            "parsed_ranking": {
                "ranking": ["Response A"],
                "scores": {"Response A": 8, "Response Z": 3},
            },
        },
        {"model": "x-ai/grok", "ranking": "...", "parsed_ranking": {"abstained": True}},
        {"model": "google/gemini", "ranking": "no verdict at all", "parsed_ranking": []},
    ]
    scores = extract_scores_from_stage2(stage2_results, LABEL_TO_MODEL)
    assert scores == {"openai/gpt-5": {"anthropic/claude": 8.0}, "google/gemini": {}}


def test_extract_scores_from_stage2_drops_parsed_scores_off_the_scale() -> None:
    # review finding: {"Response A": 1000, "Response B": -5} on 1-10 reached the statistics
    stage2_results = [
        {
            "model": "openai/gpt-5",
            "ranking": "...",
            "parsed_ranking": {"scores": {"Response A": 1000, "Response B": -5, "Response C": 7}},
        }
    ]
    scores = extract_scores_from_stage2(stage2_results, LABEL_TO_MODEL)
    assert list(scores["openai/gpt-5"].values()) == [7.0]


def test_extract_scores_from_stage2_with_our_per_reviewer_label_maps() -> None:
    result = asyncio.run(
        run_full_council("Why is the sky blue?", config=simulated_council(), seed=3)
    )
    stage2_results = [
        {"model": review.reviewer, "ranking": review.raw_text, "parsed_ranking": []}
        for review in result.stage2
    ]
    scores = extract_scores_from_stage2(stage2_results, result.metadata["label_to_model"])
    for review in result.stage2:
        expected = {e.candidate: e.score for e in review.candidates if e.score is not None}
        assert scores[review.reviewer] == expected


@pytest.mark.parametrize(
    ("stage2_results", "names"),
    [
        ({"model": "a"}, ("stage2_results", "dict")),
        ([["a"]], ("stage2_results[0]", "list")),
        ([{"ranking": "x"}], ("stage2_results[0]['model']",)),
    ],
)
def test_extract_scores_from_stage2_bad_shapes(stage2_results: Any, names: tuple[str, ...]) -> None:
    with pytest.raises(InputError) as excinfo:
        extract_scores_from_stage2(stage2_results, LABEL_TO_MODEL)
    one_line_input_error(excinfo, *names)


# --- BIAS_AUDIT_ENABLED -----------------------------------------------------------------


def test_reference_switch_turns_the_audit_on_through_a_real_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("BIAS_AUDIT_ENABLED", "true")
    result = asyncio.run(run_full_council("Is TCP reliable?", config=simulated_council(), seed=5))
    assert result.metadata["bias_audit"]["records_written"] == 16
    assert len(list(read_records(store_path()))) == 16


@pytest.mark.parametrize(
    ("ours", "reference", "expected"),
    [
        (None, "true", True),
        (None, "1", True),
        (None, "no", False),
        ("false", "true", False),  # ours wins when both are set
        ("true", "false", True),
        ("", "true", True),  # an empty value is unset
    ],
)
def test_ours_wins_over_the_reference_switch(
    monkeypatch: pytest.MonkeyPatch, ours: str | None, reference: str, expected: bool
) -> None:
    from llm_council.bias_audit.middleware import BiasAuditMiddleware

    if ours is not None:
        monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", ours)
    monkeypatch.setenv("BIAS_AUDIT_ENABLED", reference)
    assert BiasAuditMiddleware().enabled() is expected


stage2_result_shapes = st.lists(
    st.fixed_dictionaries(
        {"model": names | json_leaves},
        optional={
            "ranking": st.text(max_size=40) | json_ish,
            "parsed_ranking": st.lists(names | json_leaves, max_size=4)
            | st.dictionaries(st.sampled_from(["scores", "abstained", "ranking"]), json_ish)
            | json_ish,
        },
    )
    | json_ish,
    max_size=4,
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stage2_results=stage2_result_shapes | json_ish, label_to_model=position_shapes)
def test_extract_scores_from_random_shapes_raises_only_input_error(
    stage2_results: Any, label_to_model: Any
) -> None:
    try:
        scores = extract_scores_from_stage2(stage2_results, label_to_model)
    except InputError as error:
        assert "\n" not in str(error)
        return
    for given_scores in scores.values():
        assert all(isinstance(v, float) and math.isfinite(v) for v in given_scores.values())


def test_calculate_position_bias_leaves_out_a_reviewers_own_answer() -> None:
    spec = CouncilSpec(n_members=4)
    with_self = _session_data_from_generator(spec, 3, 9)
    without_self = [
        {**entry, "scores": {c: s for c, s in entry["scores"].items() if c != entry["reviewer"]}}
        for entry in with_self
    ]
    # a session id built to look like "session\x00candidate" cannot forge a self-review
    hostile = [{**entry, "session_id": entry["session_id"] + "\x00judge-0"} for entry in with_self]
    variance, detected = calculate_position_bias(without_self)
    assert variance is not None
    for data in (with_self, hostile):
        other_variance, other_detected = calculate_position_bias(data)
        assert other_variance == pytest.approx(variance, rel=1e-9)
        assert other_detected is detected


def test_derive_position_mapping_reads_labels_in_any_case_and_skips_a_stray_key() -> None:
    # the reference design's behaviour (ADR 0039): "response a" is "Response A", and one
    # key that is not a label is left out; a map with no label at all still raises (above)
    assert derive_position_mapping({"response a": "m1", "RESPONSE  B": "m2"}) == {
        "m1": 0,
        "m2": 1,
    }
    assert derive_position_mapping({"Response A": "m1", "Model B": "m2", "Response C": "m3"}) == {
        "m1": 0,
        "m3": 2,
    }
    # a display_index makes the key's letter irrelevant, so such an entry is kept
    assert derive_position_mapping({"first": {"model": "m1", "display_index": 1}}) == {"m1": 1}


def test_calculate_position_bias_without_a_position_mapping_is_untested() -> None:
    scores = {"r1": {"Response A": 7, "Response B": 8}}
    assert calculate_position_bias(scores, None) == (None, None)
