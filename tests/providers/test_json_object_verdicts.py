"""llama.cpp's ``json_object`` structured output (ADR 0041), against a loopback fake of its API.

The verdict schema goes out as ``response_format={"type": "json_object", "schema": ...}``
with each score an ``enum`` of the scale and no ranking; the reply's scores come back on
the structured channel and the parser derives the ranking from them, strictly.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fakes.loopback_http import LoopbackJsonServer, ReceivedRequest, Reply, openai_completion_body
from fakes.provider_calls import complete_once
from llm_council import run_full_council
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import ConfigError, MissingDependencyError
from llm_council.prompts import REVIEW_SCHEMA_NAME, review_verdict_schema
from llm_council.providers.base import CompletionRequest
from llm_council.providers.calling import RetryPolicy
from llm_council.providers.json_object_schema import (
    PAIRWISE_VERDICT_GRAMMAR,
    RATIONALE_MAX_CHARS,
    json_object_schema,
    rationale_schema,
    score_enum,
)
from llm_council.providers.registry import create_provider
from llm_council.ranking_parser import parse_review

LABELS = ["Response A", "Response B", "Response C"]


def _review_request(labels: list[str] = LABELS) -> CompletionRequest:
    return CompletionRequest.from_prompt(
        "Rank these.",
        system="You are a judge.",
        task="review",
        seed=7,
        response_schema=review_verdict_schema(labels),
        response_schema_name=REVIEW_SCHEMA_NAME,
    )


# --- the schema llama.cpp's grammar gets -------------------------------------------------


def test_the_verdict_schema_becomes_enum_scores_without_a_ranking():
    sent = json_object_schema(review_verdict_schema(LABELS), score_enum([1, 10]))
    assert set(sent["properties"]) == {"scores", "rationale"}
    assert sent["required"] == ["scores", "rationale"]
    scores = sent["properties"]["scores"]
    assert scores["required"] == LABELS and scores["additionalProperties"] is False
    for label in LABELS:
        assert scores["properties"][label] == {"enum": list(range(1, 11))}
    assert sent["properties"]["rationale"] == rationale_schema(RATIONALE_MAX_CHARS)
    assert sent["properties"]["rationale"]["maxLength"] == RATIONALE_MAX_CHARS


@given(st.text(max_size=70))
def test_a_rationale_the_grammar_admits_is_a_valid_json_string_as_written(text):
    """llama-cpp-python's own string rule let raw newlines through, which ``json.loads``
    rejects ("Invalid control character"): the pattern admits only text that needs no
    escape, at most the cap's characters long (RFC 8259, section 7)."""
    pattern = re.compile(rationale_schema(60)["pattern"])
    if pattern.fullmatch(text):
        assert json.loads(f'"{text}"') == text and len(text) <= 60
    else:
        assert len(text) > 60 or any(c in '"\\' or ord(c) < 0x20 for c in text)


def test_the_rationale_pattern_refuses_what_json_would():
    pattern = re.compile(rationale_schema(20)["pattern"])
    for bad in ("two\nlines", "a\ttab", 'a "quote"', "back\\slash", "x" * 21):
        assert not pattern.fullmatch(bad), bad
    for good in ("", "one or two sentences", "café, naïve \x7f"):
        assert pattern.fullmatch(good), good


def test_any_other_schema_is_sent_as_it_is():
    other = {"type": "object", "properties": {"winner": {"enum": ["A", "B"]}}}
    assert json_object_schema(other, [1, 2]) is other


@pytest.mark.parametrize(
    ("scale", "message"),
    [
        ([1, 10.5], "whole numbers, got '[1, 10.5]'"),
        ([10, 1], "low < high"),
        ([0, 1000], "at most 101 steps"),
        (["1", "10"], "whole numbers"),
        ([True, 10], "whole numbers"),
        ([1, float("inf")], "whole numbers"),
        ([1, float("nan")], "whole numbers"),
        ("1-10", "whole numbers, got '1-10'"),
    ],
)
def test_a_scale_that_cannot_be_an_enum_is_a_one_line_config_error(scale, message):
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        score_enum(scale)
    assert "\n" not in str(caught.value)


# --- the parser's scores-only path -------------------------------------------------------


def _structured(obj: Any, labels: list[str] = LABELS):
    return parse_review(json.dumps(obj), labels, (1, 10), structured=True)


def test_distinct_scores_give_the_ranking_best_first():
    parsed = _structured(
        {"scores": {"Response A": 4, "Response B": 9, "Response C": 6}, "rationale": "B"}
    )
    assert parsed.status == "json" and parsed.channel == "structured"
    assert parsed.ranking == ("Response B", "Response C", "Response A")
    assert parsed.rationale == "B" and parsed.notes == ()


def test_tied_scores_keep_the_scores_and_derive_no_ranking():
    parsed = _structured({"scores": {"Response A": 7, "Response B": 7, "Response C": 2}})
    assert parsed.status == "json" and parsed.ranking == ()
    assert parsed.scores == {"Response A": 7, "Response B": 7, "Response C": 2}
    assert parsed.notes == ("tied scores: no ranking derived",)


@pytest.mark.parametrize(
    ("scores", "reason"),
    [
        ({"Response A": 4, "Response B": 9}, "no score for Response C"),
        ({"Response A": 11, "Response B": 9, "Response C": 1}, "'11' for Response A is invalid"),
        ({"Response A": 0, "Response B": 9, "Response C": 1}, "not a number from 1 to 10"),
        ({"Response A": "4/5", "Response B": 9, "Response C": 1}, "denominator 5"),
        ({"Response A": None, "Response B": 9, "Response C": 1}, "'None' for Response A"),
        ({"Response A": 1, "Response D": 9, "Response C": 1}, "unknown label 'Response D'"),
        ({"A": 1, "Response A": 2, "B": 3, "C": 4}, "scores Response A twice"),
        ([4, 9, 1], "'scores' is list, not an object"),
    ],
)
def test_a_scores_only_verdict_that_fails_validation_is_unparseable_with_the_reason(scores, reason):
    parsed = _structured({"scores": scores, "rationale": "x"})
    assert parsed.status == "unparseable" and parsed.channel == "structured"
    assert reason in (parsed.error or "")
    assert parsed.ranking == () and parsed.scores == {}


def test_a_truncated_reply_is_unparseable_never_guessed():
    parsed = parse_review('{"scores": {"Response A": 4, "Response B"', LABELS, structured=True)
    assert (parsed.status, parsed.error) == ("unparseable", "structured verdict is not valid JSON")


def test_scores_only_text_off_the_structured_channel_is_not_a_verdict():
    # untagged text is a candidate's as much as the reviewer's: no derivation there
    text = json.dumps({"scores": {"Response A": 4, "Response B": 9, "Response C": 1}})
    assert parse_review(text, LABELS).status == "unparseable"


# the first draw pays for Hypothesis's start-up, slow on a loaded 2-core machine
@settings(suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(LABELS + ["Response Z", "B", "x"]),
        st.one_of(st.integers(-3, 14), st.floats(allow_nan=True), st.text(max_size=4), st.none()),
        max_size=5,
    )
)
def test_the_scores_only_path_never_raises_and_its_ranking_follows_the_scores(scores):
    parsed = _structured({"scores": scores, "rationale": "r"})
    assert parsed.status in ("json", "unparseable")
    if parsed.status == "json":
        assert set(parsed.scores) == set(LABELS)
        assert all(1 <= value <= 10 for value in parsed.scores.values())
        if parsed.ranking:
            ranked = [parsed.scores[label] for label in parsed.ranking]
            assert ranked == sorted(ranked, reverse=True) and len(set(ranked)) == len(ranked)


# --- the provider on the wire ------------------------------------------------------------


def test_json_object_goes_out_with_the_enum_schema_and_comes_back_structured(
    fake_vendor, no_vendor_env
):
    verdict = {"scores": {"Response A": 3, "Response B": 8, "Response C": 5}, "rationale": "B"}
    fake_vendor.reply(openai_completion_body(json.dumps(verdict), "smollm2"))
    provider = create_provider(
        "openai:smollm2",
        {
            "base_url": f"{fake_vendor.url}/v1",
            "structured_output": "json_object",
            "score_scale": [1, 5],
        },
    )
    assert provider.structured_output == "native"  # to the council, a structured channel
    completion = complete_once(provider, _review_request())
    assert completion.channel == "structured" and json.loads(completion.text) == verdict
    response_format = fake_vendor.requests[0].body["response_format"]
    assert response_format["type"] == "json_object"
    assert response_format["schema"]["properties"]["scores"]["properties"]["Response A"] == {
        "enum": [1, 2, 3, 4, 5]
    }


def test_member_sampling_options_reach_the_wire(fake_vendor, no_vendor_env):
    fake_vendor.reply(openai_completion_body("hi", "m"))
    provider = create_provider(
        "openai:m",
        {
            "base_url": f"{fake_vendor.url}/v1",
            "persona": "You are a skeptic.",
            "temperature": 0.9,
            "seed": 100,
            "max_tokens": 64,
        },
    )
    complete_once(provider, _review_request())
    sent = fake_vendor.requests[0].body
    assert sent["messages"][0] == {
        "role": "system",
        "content": "You are a skeptic.\n\nYou are a judge.",
    }
    assert (sent["temperature"], sent["seed"], sent["max_tokens"]) == (0.9, 107, 64)


def test_a_requests_own_temperature_and_a_smaller_max_tokens_win(fake_vendor, no_vendor_env):
    fake_vendor.reply(openai_completion_body("hi", "m"))
    provider = create_provider(
        "openai:m",
        {"base_url": f"{fake_vendor.url}/v1", "temperature": 0.9, "max_tokens": 64},
    )
    complete_once(provider, CompletionRequest.from_prompt("q", temperature=0.0, max_tokens=10))
    sent = fake_vendor.requests[0].body
    assert (sent["temperature"], sent["max_tokens"]) == (0.0, 10)


def test_a_members_rationale_cap_reaches_the_grammars_schema(fake_vendor, no_vendor_env):
    verdict = {"scores": {"Response A": 3, "Response B": 8, "Response C": 5}, "rationale": "B"}
    fake_vendor.reply(openai_completion_body(json.dumps(verdict), "m"))
    provider = create_provider(
        "openai:m",
        {
            "base_url": f"{fake_vendor.url}/v1",
            "structured_output": "json_object",
            "rationale_max_chars": 60,
        },
    )
    complete_once(provider, _review_request())
    schema = fake_vendor.requests[0].body["response_format"]["schema"]
    assert schema["properties"]["rationale"] == rationale_schema(60)
    assert schema["properties"]["rationale"]["pattern"].endswith("{0,60}$")


def test_a_review_gets_the_members_review_cap_and_an_answer_its_plain_cap(
    fake_vendor, no_vendor_env
):
    verdict = {"scores": {"Response A": 3, "Response B": 8, "Response C": 5}, "rationale": "B"}
    fake_vendor.reply(openai_completion_body(json.dumps(verdict), "m"))
    fake_vendor.reply(openai_completion_body("an answer", "m"))
    provider = create_provider(
        "openai:m",
        {
            "base_url": f"{fake_vendor.url}/v1",
            "structured_output": "json_object",
            "max_tokens": 48,
            "review_max_tokens": 80,
        },
    )
    complete_once(provider, _review_request())
    complete_once(provider, CompletionRequest.from_prompt("q?", task="answer"))
    assert [r.body["max_tokens"] for r in fake_vendor.requests] == [80, 48]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"review_max_tokens": 0}, "option 'review_max_tokens' for 'openai:m' must be a whole"),
        ({"review_max_tokens": 2.5}, "option 'review_max_tokens'"),
        ({"persona": ""}, "option 'persona' for 'openai:m' must be non-empty text"),
        ({"persona": 3}, "option 'persona'"),
        ({"temperature": 3}, "option 'temperature' for 'openai:m' must be a number from 0 to 2"),
        ({"temperature": float("nan")}, "option 'temperature'"),
        ({"temperature": True}, "option 'temperature'"),
        ({"seed": 1.5}, "option 'seed' for 'openai:m' must be a whole number, got '1.5'"),
        ({"max_tokens": 0}, "option 'max_tokens'"),
        ({"structured_output": "grammar"}, "native, nonce, json_object, got 'grammar'"),
        ({"score_scale": [1, 5]}, "only read with structured_output = 'json_object'"),
        ({"rationale_max_chars": 60}, "'rationale_max_chars' for 'openai:m' is only read with"),
        (
            {"structured_output": "json_object", "rationale_max_chars": 0},
            "option 'rationale_max_chars' must be a whole number from 1 to 2000, got '0'",
        ),
        ({"structured_output": "json_object", "rationale_max_chars": True}, "got 'True'"),
        ({"structured_output": "json_object", "rationale_max_chars": 10**9}, "from 1 to 2000"),
        (
            {"local_model": "gpt-9", "base_url": None},
            "unknown local_model 'gpt-9'; known: gemma3-270m, smollm2-135m",
        ),
        ({"local_model": "smollm2-135m"}, "sets both 'local_model' and 'base_url'"),
    ],
)
def test_a_bad_member_option_is_a_one_line_config_error(options, message, no_vendor_env):
    no_vendor_env.setenv("OPENAI_API_KEY", "sk-test-000000000000")
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        create_provider("openai:m", {"base_url": "http://127.0.0.1:9/v1", **options})
    assert "\n" not in str(caught.value)


def test_local_model_without_the_extra_names_the_install_command(monkeypatch, no_vendor_env):
    monkeypatch.setitem(__import__("sys").modules, "llama_cpp", None)
    # issue 37 C.1: 'llm-council' on the public index is another project's name
    hint = "pip install -e '.[local]' (in the llm-council checkout)"
    with pytest.raises(MissingDependencyError, match=re.escape(hint)) as caught:
        create_provider("openai:smollm2-135m", {"local_model": "smollm2-135m"})
    assert "llm-council[" not in str(caught.value)


def test_a_council_scale_the_members_enum_does_not_spell_is_a_config_error():
    member = CouncilMember(
        name="local",
        spec="openai:m",
        options={"base_url": "http://127.0.0.1:9/v1", "structured_output": "json_object"},
    )
    with pytest.raises(ValueError, match=re.escape("set score_scale = [1, 5] in its options")):
        CouncilConfig(
            members=(member, member.model_copy(update={"name": "b"})),
            chairman=member,
            score_scale=(1, 5),
        )


# --- a whole council against a fake llama.cpp server -------------------------------------


class _FakeLlamaCppServer(LoopbackJsonServer):
    """Answers like llama.cpp's server: text, or for a json_object schema the scores its
    enum allows (descending in the order the schema lists the labels)."""

    def __init__(self) -> None:
        super().__init__()
        self.response_formats: list[dict[str, Any]] = []

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        body = request.body if isinstance(request.body, dict) else {}
        response_format = body.get("response_format")
        if isinstance(response_format, dict):
            self.response_formats.append(response_format)
            scores = response_format["schema"]["properties"]["scores"]
            labels = scores["required"]
            allowed = scores["properties"][labels[0]]["enum"]
            verdict = {
                "scores": {label: allowed[-1 - i] for i, label in enumerate(labels)},
                "rationale": "first is best",
            }
            return Reply(200, openai_completion_body(json.dumps(verdict), "smollm2"))
        return Reply(200, openai_completion_body("An answer.", "smollm2"))


def test_a_council_on_json_object_gets_every_verdict_structured_with_derived_rankings(
    no_vendor_env,
):
    with _FakeLlamaCppServer().running() as server:
        options = {"base_url": f"{server.url}/v1", "structured_output": "json_object"}
        config = CouncilConfig(
            members=tuple(
                CouncilMember(name=f"m{i}", spec="openai:smollm2", options=options)
                for i in range(3)
            ),
            chairman=CouncilMember(name="chair", spec="openai:smollm2", options=options),
            retry=RetryPolicy(max_attempts=1, timeout_s=5.0),
        )
        result = asyncio.run(run_full_council("Why?", config=config, seed=2, middleware=[]))
    assert len(server.response_formats) == 3
    assert all(f["type"] == "json_object" for f in server.response_formats)
    for review in result.stage2:
        assert (review.parse_status, review.verdict_channel) == ("json", "structured")
        shown = sorted(review.candidates, key=lambda c: c.display_index)
        # the fake scored labels in display order, best first: the derived ranking follows
        assert list(review.ranking) == [c.candidate for c in shown]
        assert [c.score for c in shown] == [10, 9, 8]


# --- the pairwise judge's verdict line ---------------------------------------------------


def test_a_pairwise_judge_on_json_object_gets_llama_cpps_verdict_grammar(
    fake_vendor, no_vendor_env
):
    from llm_council.calibration.judge_prompt import format_verdict, parse_verdict

    fake_vendor.reply(openai_completion_body("A is vaguer.\nVerdict: Response B", "smollm2"))
    fake_vendor.reply(openai_completion_body("plain", "smollm2"))
    local = create_provider(
        "openai:smollm2",
        {"base_url": f"{fake_vendor.url}/v1", "structured_output": "json_object"},
    )
    judge_request = CompletionRequest.from_prompt("Compare.", task="pairwise_judge")
    completion = complete_once(local, judge_request)
    assert parse_verdict(completion.text) == "second"
    complete_once(local, CompletionRequest.from_prompt("Answer.", task="answer"))
    judged, answered = (request.body for request in fake_vendor.requests)
    assert judged["grammar"] == PAIRWISE_VERDICT_GRAMMAR and "grammar" not in answered
    # the grammar's verdict lines are exactly the ones the judge prompt asks for
    for verdict in ("first", "second", "tie"):
        line = format_verdict(verdict)  # type: ignore[arg-type]
        assert f'"{line.removeprefix("Verdict: ")}"' in PAIRWISE_VERDICT_GRAMMAR


def test_other_servers_never_get_the_grammar_field(fake_vendor, no_vendor_env):
    fake_vendor.reply(openai_completion_body("Verdict: tie", "m"))
    provider = create_provider("openai:m", {"base_url": f"{fake_vendor.url}/v1"})
    complete_once(provider, CompletionRequest.from_prompt("Compare.", task="pairwise_judge"))
    assert "grammar" not in fake_vendor.requests[0].body
