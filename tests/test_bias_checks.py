"""Live interventional bias checks (ADR 0024): scheduling in the council core, records."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_council import run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.bias_checks import (
    PADDING_SENTENCE,
    chosen_for_check,
    draw_check_kind,
    pad_text,
    reshuffled_labels,
)
from llm_council.config import CouncilConfig, CouncilMember, load_council_config
from llm_council.errors import ConfigError
from llm_council.results import LabelAssignment

QUERY = "How do I reduce tail latency in a web service?"
REVIEW_JSON = (
    '{"ranking": ["Response A", "Response B", "Response C"], '
    '"scores": {"Response A": 7, "Response B": 6, "Response C": 5}}'
)


def fake_council(*names: str, **fields: Any) -> CouncilConfig:
    return CouncilConfig(
        members=tuple(CouncilMember(name=name, spec=f"fake:{name}") for name in names),
        chairman=CouncilMember(name="chair", spec="fake:chair"),
        **fields,
    )


def script_all(provider: Any, names: tuple[str, ...]) -> None:
    provider.scripts = {
        name: {
            "answer": lambda r, n, name=name: f"answer of {name}",
            "review": lambda r, n: REVIEW_JSON,
        }
        for name in names
    }
    provider.scripts["chair"] = {"synthesize": lambda r, n: "final"}


def run(**kwargs: Any) -> Any:
    kwargs.setdefault("middleware", [])
    return asyncio.run(run_full_council(QUERY, **kwargs))


NAMES = ("a", "b", "c")


def test_probability_zero_makes_no_extra_call_and_no_metadata(scripted_provider: Any) -> None:
    script_all(scripted_provider, NAMES)
    result = run(config=fake_council(*NAMES), seed=3)
    tasks = [task for _, task in scripted_provider.calls]
    assert tasks.count("review") == 3 and tasks.count("answer") == 3
    assert "bias_checks" not in result.metadata and result.bias_check_reviews == []
    assert "bias_check_reviews" not in result.to_json_dict()


def test_probability_one_gives_one_check_per_reviewer_counted_in_metadata(
    scripted_provider: Any,
) -> None:
    script_all(scripted_provider, NAMES)
    result = run(config=fake_council(*NAMES, bias_check_probability=1.0), seed=3)
    tasks = [task for _, task in scripted_provider.calls]
    assert tasks.count("review") == 6  # 3 reviews + 3 checks
    checks = result.bias_check_reviews
    assert sorted(c.reviewer for c in checks) == list(NAMES)
    assert all(c.check_kind in ("reshuffle", "repeat", "padding") for c in checks)
    assert all(r.check_kind is None for r in result.stage2) and len(result.stage2) == 3
    summary = result.metadata["bias_checks"]
    assert summary["calls"] == 3 and summary["parsed"] == 3 and summary["attempts"] == 3
    assert sum(kind["calls"] for kind in summary["by_kind"].values()) == 3
    assert summary["probability"] == 1.0
    assert set(summary["checked_reviewers"]) == set(NAMES)
    # the ranking the council reports still comes from the three real reviews
    assert all(s["rank_votes"] <= 3 for s in result.metadata["aggregate_rankings"])


def test_check_tokens_are_counted_by_kind() -> None:
    config = load_council_config().model_copy(update={"bias_check_probability": 1.0})
    result = run(config=config, seed=11)
    summary = result.metadata["bias_checks"]
    expected_in = sum(c.input_tokens or 0 for c in result.bias_check_reviews)
    assert summary["input_tokens"] == expected_in > 0
    assert summary["output_tokens"] == sum(c.output_tokens or 0 for c in result.bias_check_reviews)
    # the session total includes the checks' tokens
    assert result.metadata["token_usage"]["input_tokens"] > summary["input_tokens"]


def test_checks_never_change_ranking_reviews_or_synthesis() -> None:
    base = load_council_config()
    without = run(config=base, seed=21)
    with_checks = run(config=base.model_copy(update={"bias_check_probability": 1.0}), seed=21)
    assert len(with_checks.bias_check_reviews) == len(base.members)
    assert with_checks.metadata["aggregate_rankings"] == without.metadata["aggregate_rankings"]
    timeless = {"duration_s"}
    assert with_checks.stage3.model_dump(exclude=timeless) == without.stage3.model_dump(
        exclude=timeless
    )
    assert [r.model_dump(exclude=timeless) for r in with_checks.stage2] == [
        r.model_dump(exclude=timeless) for r in without.stage2
    ]
    assert with_checks.metadata["degraded"] == without.metadata["degraded"]


def test_selection_is_reproducible_and_has_the_configured_rate() -> None:
    config = load_council_config().model_copy(update={"bias_check_probability": 0.5})
    first = run(config=config, seed=5).metadata["bias_checks"]["checked_reviewers"]
    again = run(config=config, seed=5).metadata["bias_checks"]["checked_reviewers"]
    assert first == again
    # the selection rule itself: 4000 (seed, reviewer) draws at p = 0.3 land within
    # 4.4 binomial sd (sd = sqrt(4000 * 0.3 * 0.7) = 29) of 1200
    chosen = sum(chosen_for_check(seed, "r", 0.3) for seed in range(4000))
    assert abs(chosen - 1200) < 128
    assert not any(chosen_for_check(seed, "r", 0.0) for seed in range(500))


def test_kind_mix_follows_weights_and_skips_impossible_kinds() -> None:
    mix = {"reshuffle": 3.0, "repeat": 1.0, "padding": 0.0}
    kinds = [draw_check_kind(seed, "r", mix, 3) for seed in range(4000)]
    assert kinds.count("padding") == 0
    # share of reshuffle: 0.75, sd sqrt(4000 * .75 * .25) = 27.4
    assert abs(kinds.count("reshuffle") - 3000) < 120
    assert draw_check_kind(1, "r", {"reshuffle": 1.0}, 1) is None  # one answer: nothing to move
    # identity is opt-in: the default mix never draws it
    default_mix = fake_council("a", "b").bias_check_kinds
    assert default_mix["identity"] == 0.0
    assert all(draw_check_kind(seed, "r", default_mix, 3) != "identity" for seed in range(2000))


def test_reshuffle_always_changes_the_order() -> None:
    original = {
        "Response A": LabelAssignment(model="x", display_index=0),
        "Response B": LabelAssignment(model="y", display_index=1),
    }
    for seed in range(200):
        fresh = reshuffled_labels(original, seed, "r")
        assert fresh["Response A"].model == "y" and fresh["Response B"].model == "x"


def test_padding_filler_doubles_words_even_for_an_answer_at_the_cap() -> None:
    # review finding: the padded copy used to be cut to the answer cap, so an answer already
    # at the cap (stage 1 cuts to it) came back unchanged yet counted as a padding treatment
    text = "one two three four five six seven eight nine ten"
    padded = pad_text(text)
    assert padded.startswith(text) and PADDING_SENTENCE in padded
    assert len(padded.split()) >= 2 * len(text.split())
    at_cap = "word " * 200  # 1,000 characters, as if cut to max_answer_chars = 1000
    assert len(pad_text(at_cap).split()) >= 400
    # bounded: one filler sentence per sentence-length of original words, plus one
    sentences = 200 // len(PADDING_SENTENCE.split()) + 1
    assert len(pad_text(at_cap)) <= len(at_cap) + 2 + sentences * (len(PADDING_SENTENCE) + 1)


def test_config_kinds_and_probability_are_validated() -> None:
    with pytest.raises(ValueError, match="unknown bias check kind 'shout'"):
        fake_council("a", "b", bias_check_kinds={"shout": 1.0})
    with pytest.raises(ValueError, match="positive weight"):
        fake_council("a", "b", bias_check_kinds={"repeat": 0.0})
    with pytest.raises(ValueError):
        fake_council("a", "b", bias_check_probability=1.5)


def test_environment_overrides_the_probability_and_rejects_bad_values() -> None:
    config = load_council_config(environ={"LLM_COUNCIL_BIAS_CHECK_PROBABILITY": "0.25"})
    assert config.bias_check_probability == 0.25
    with pytest.raises(ConfigError, match=r"LLM_COUNCIL_BIAS_CHECK_PROBABILITY: .*'2'"):
        load_council_config(environ={"LLM_COUNCIL_BIAS_CHECK_PROBABILITY": "2"})
    with pytest.raises(ConfigError, match="not a number"):
        load_council_config(environ={"LLM_COUNCIL_BIAS_CHECK_PROBABILITY": "often"})
    with pytest.raises(ConfigError, match="'nan'"):
        load_council_config(environ={"LLM_COUNCIL_BIAS_CHECK_PROBABILITY": "nan"})


def test_a_failed_check_is_counted_but_never_degrades_the_session(
    scripted_provider: Any,
) -> None:
    from llm_council.errors import ProviderError

    script_all(scripted_provider, NAMES)

    def first_only(request: Any, call_number: int) -> str:
        if call_number > 1:  # the check review is this reviewer's second review call
            raise ProviderError("check refused", provider="fake", retryable=False)
        return REVIEW_JSON

    scripted_provider.scripts["a"]["review"] = first_only
    result = run(config=fake_council(*NAMES, bias_check_probability=1.0), seed=3)
    assert result.metadata["degraded"] == []
    assert all(r.ok for r in result.stage2)
    failed = next(c for c in result.bias_check_reviews if c.reviewer == "a")
    assert failed.parse_status == "missing" and "check refused" in (failed.error or "")
    summary = result.metadata["bias_checks"]
    assert summary["calls"] == 3 and summary["parsed"] == 2


def test_records_carry_check_kind_and_the_audit_ignores_checks(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = tmp_path / "records.jsonl"
    # each run its own store: the second would otherwise read the first's reviewer
    # history (ADR 0045) and moderate its noise differently
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(tmp_path / "plain.jsonl"))
    base = load_council_config()
    plain = run(config=base, seed=9, middleware=[BiasAuditMiddleware()])
    n_plain = plain.metadata["bias_audit"]["records_written"]
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    checked = run(
        config=base.model_copy(update={"bias_check_probability": 1.0}),
        seed=9,
        middleware=[BiasAuditMiddleware()],
    )
    audit_plain, audit_checked = plain.metadata["bias_audit"], checked.metadata["bias_audit"]
    assert audit_checked["records_written"] == 2 * n_plain
    # the per-session audit counts only the reviews that count: identical numbers
    for where in ("records_written", "record_store"):  # the two runs' own stores
        audit_plain.pop(where), audit_checked.pop(where)
    assert audit_checked == audit_plain
    assert audit_checked["sample_sizes"] == audit_plain["sample_sizes"]
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    second = [line for line in lines if line["session_id"] == checked.metadata["session_id"]]
    normal = [line for line in second if line["check_kind"] is None]
    checks = [line for line in second if line["check_kind"] is not None]
    assert len(normal) == len(checks) == n_plain
    position_of = {(r["reviewer_id"], r["model_id"]): r["position"] for r in normal}
    for line in checks:
        assert line["check_of_position"] == position_of[(line["reviewer_id"], line["model_id"])]
        if line["check_kind"] == "padding":
            assert isinstance(line["check_treated"], bool)
        else:
            assert line["check_treated"] is None
    padded = [line for line in checks if line["check_treated"]]
    for line in padded:
        original = next(
            r
            for r in normal
            if r["reviewer_id"] == line["reviewer_id"] and r["model_id"] == line["model_id"]
        )
        assert line["response_length_words"] >= 2 * original["response_length_words"]


def test_cli_ask_with_probability_half_shows_bias_checks_and_the_report_section(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_council.cli.app import main

    def cli(*args: str) -> str:
        with pytest.raises(SystemExit) as exited:
            main(list(args))
        assert int(exited.value.code or 0) == 0
        return capsys.readouterr().out

    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    monkeypatch.setenv("LLM_COUNCIL_BIAS_CHECK_PROBABILITY", "0.5")
    checked = 0
    for seed in range(6):
        out = cli(
            "ask",
            "How do I shard a queue?",
            "--seed",
            str(seed),
            "--json",
            "--bias-audit",
            "--log-level",
            "warning",
        )
        result = json.loads(out)
        summary = result["metadata"]["bias_checks"]
        assert summary["probability"] == 0.5
        assert summary["calls"] == len(result.get("bias_check_reviews", []))
        assert all(r["check_kind"] is None for r in result["stage2"])
        checked += summary["calls"]
    # 30 (session, reviewer) draws at p = 0.5 (fixed seeds): 15 expected, sd 2.7
    assert 5 < checked < 25
    text = cli("bias-report", "--store", str(store), "--bootstrap", "20")
    assert "=== Causal checks" in text and f"{checked} check reviews" in text


def test_identity_check_signs_another_answer_and_the_simulator_recognises_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    config = CouncilConfig(
        members=(
            CouncilMember(
                name="vain", spec="simulated:unbiased", options={"self_recognition": 3.0}
            ),
            CouncilMember(name="plain", spec="simulated:unbiased"),
            CouncilMember(name="other", spec="simulated:unbiased"),
        ),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
        bias_check_probability=1.0,
        bias_check_kinds={"identity": 1.0},
    )
    gains: dict[str, list[float]] = {"vain": [], "plain": []}
    for seed in range(8):
        result = run(config=config, seed=seed, middleware=[BiasAuditMiddleware()])
        for check in result.bias_check_reviews:
            assert check.check_kind == "identity" and check.check_target != check.reviewer
            original = next(r for r in result.stage2 if r.reviewer == check.reviewer)
            before = {c.candidate: c.score for c in original.candidates}
            after = {c.candidate: c.score for c in check.candidates}
            if check.reviewer in gains:
                gains[check.reviewer].append(after[check.check_target] - before[check.check_target])
    # unbiased noise sd 1 on both asks: the signed answer moves by N(0, 2); "vain" adds 3
    assert np.mean(gains["vain"]) > 1.5 and abs(np.mean(gains["plain"])) < 1.5
    lines = [json.loads(line) for line in store.read_text().splitlines()]
    signed = [line for line in lines if line["check_treated"]]
    assert signed and all(line["check_kind"] == "identity" for line in signed)
    normal = {
        (line["session_id"], line["reviewer_id"], line["model_id"]): line
        for line in lines
        if line["check_kind"] is None
    }
    for line in signed:  # "(Answer written by unbiased.)" adds 4 words
        original = normal[(line["session_id"], line["reviewer_id"], line["model_id"])]
        assert line["response_length_words"] == original["response_length_words"] + 4


@pytest.mark.slow
def test_simulated_council_causal_section_recovers_its_configured_biases(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The default simulated council at p = 1, 90 sessions (about 30 per kind per reviewer):
    primacy's +1 at slot A shows as a negative slot slope, verbose's verbosity 1.5 as a
    padding gain near 1.5 * ln 2 = 1.04, and the unbiased-in-that-respect reviewers' intervals
    hold zero (seeded, so reproducible)."""
    from llm_council.bias_audit.report import build_report

    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    config = load_council_config().model_copy(update={"bias_check_probability": 1.0})
    for seed in range(90):
        run(config=config, seed=seed, middleware=[BiasAuditMiddleware()])
    section = build_report(store, n_resamples=20).causal_checks
    assert section is not None
    by_reviewer = {r.reviewer: r for r in section.reviewers}
    primacy, verbose = by_reviewer["primacy"], by_reviewer["verbose"]
    assert primacy.slot_effect is not None and primacy.slot_effect.ci_high < 0
    assert verbose.padding_effect is not None and verbose.padding_effect.ci_low > 0
    assert verbose.padding_effect.ci_low < 1.04 < verbose.padding_effect.ci_high
    assert by_reviewer["balanced"].padding_effect is not None
    assert (
        by_reviewer["balanced"].padding_effect.ci_low
        < 0
        < by_reviewer["balanced"].padding_effect.ci_high
    )
