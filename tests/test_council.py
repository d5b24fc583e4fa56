from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from llm_council import run_full_council
from llm_council.config import CouncilConfig, CouncilMember
from llm_council.errors import CouncilError, ProviderError
from llm_council.middleware import (
    Middleware,
    SessionCompleted,
    SessionStarted,
    Stage1Completed,
    Stage2Completed,
)

QUERY = "How do I reduce tail latency in a web service?"


def fake_council(*names: str) -> CouncilConfig:
    """Members and a chairman ("chair") played by the scripted fake provider."""
    return CouncilConfig(
        members=tuple(CouncilMember(name=name, spec=f"fake:{name}") for name in names),
        chairman=CouncilMember(name="chair", spec="fake:chair"),
    )


def run(query: str = QUERY, **kwargs: Any) -> Any:
    kwargs.setdefault("middleware", [])
    return asyncio.run(run_full_council(query, **kwargs))


def test_the_result_indexes_and_measures_like_the_reference_tuple(
    make_simulated_config: Any,
) -> None:
    # the reference council returns a 4-tuple; its users write result[3] and len(result)
    result = run(seed=1)
    assert len(result) == 4
    assert result[3] is result.metadata and result[0] is result.stage1
    assert result[-1] is result.metadata and list(result[:2]) == [result.stage1, result.stage2]
    assert tuple(result) == (result.stage1, result.stage2, result.stage3, result.metadata)


def test_default_council_runs_offline_and_unpacks(make_simulated_config: Any) -> None:
    stage1, stage2, stage3, metadata = run(seed=1)
    assert len(stage1) == 5 and all(a.ok for a in stage1)
    assert len(stage2) == 5 and all(r.parse_status == "json" for r in stage2)
    assert stage3.text and not stage3.is_fallback
    json.dumps(metadata)  # plain JSON
    for labels in metadata["label_to_model"].values():
        assert [v["display_index"] for v in labels.values()] == list(range(5))
        assert [label[-1] for label in labels] == list("ABCDE")
    assert metadata["degraded"] == [] and metadata["middleware_errors"] == []


def test_same_seed_same_session(make_simulated_config: Any) -> None:
    first, second = run(seed=42), run(seed=42)
    assert [a.text for a in first.stage1] == [a.text for a in second.stage1]
    assert first.metadata["label_to_model"] == second.metadata["label_to_model"]
    assert first.metadata["aggregate_rankings"] == second.metadata["aggregate_rankings"]
    assert run(seed=43).metadata["label_to_model"] != first.metadata["label_to_model"]


def test_reviewers_see_their_own_order(make_simulated_config: Any) -> None:
    orders = {
        tuple(v["model"] for v in labels.values())
        for labels in run(seed=5).metadata["label_to_model"].values()
    }
    assert len(orders) > 1


def test_self_review_is_scored_flagged_and_excluded(make_simulated_config: Any) -> None:
    result = run(seed=2)
    for review in result.stage2:
        own = [c for c in review.candidates if c.is_self_review]
        assert len(own) == 1 and own[0].candidate == review.reviewer and own[0].score is not None
    assert all(
        s["excluded_self_votes"] == 1 and s["rank_votes"] == 4
        for s in result.metadata["aggregate_rankings"]
    )


def test_recuse_hides_a_reviewers_own_answer(make_simulated_config: Any) -> None:
    config = make_simulated_config(
        *[(f"m{i}", "unbiased", {}) for i in range(4)], self_review="recuse"
    )
    result = run(config=config, seed=3)
    for review in result.stage2:
        shown = {a.model for a in review.label_to_model.values()}
        assert review.reviewer not in shown and len(shown) == 3


def test_member_failing_in_stage1_is_left_out_and_reported(make_simulated_config: Any) -> None:
    config = make_simulated_config(
        ("ok1", "unbiased", {}),
        ("ok2", "unbiased", {}),
        ("down", "unbiased", {"fail_tasks": ["answer"]}),
    )
    result = run(config=config, seed=4)
    assert [a.member for a in result.stage1 if not a.ok] == ["down"]
    assert [r.reviewer for r in result.stage2] == ["ok1", "ok2"]
    assert all("down" not in {a.model for a in r.label_to_model.values()} for r in result.stage2)
    assert (
        result.metadata["degraded"][0]["member"] == "down"
        and result.metadata["degraded"][0]["stage"] == "answer"
    )
    assert "configured to fail" in result.metadata["degraded"][0]["error"]


def test_failing_reviewer_is_recorded_missing_and_chairman_falls_back(
    make_simulated_config: Any,
) -> None:
    config = make_simulated_config(
        ("a", "unbiased", {}), ("b", "unbiased", {"fail_tasks": ["review"]}), ("c", "unbiased", {})
    )
    config = config.model_copy(
        update={"chairman": config.chairman.model_copy(update={"spec": "simulated:unbiased"})}
    )
    chair_down = config.model_copy(
        update={
            "chairman": config.chairman.model_copy(
                update={"options": {"fail_tasks": ["synthesize"]}}
            )
        }
    )
    result = run(config=chair_down, seed=5)
    review_b = next(r for r in result.stage2 if r.reviewer == "b")
    assert review_b.parse_status == "missing" and review_b.error and review_b.candidates == ()
    assert result.stage3.is_fallback
    top = result.metadata["aggregate_rankings"][0]["model"]
    assert result.stage3.text == next(a.text for a in result.stage1 if a.member == top)
    stages = sorted(f["stage"] for f in result.metadata["degraded"])
    assert stages == ["review", "synthesize"]


def test_every_member_failing_is_a_council_error_with_reasons(make_simulated_config: Any) -> None:
    config = make_simulated_config(
        ("a", "unbiased", {"fail_tasks": ["answer"]}), ("b", "unbiased", {"fail_tasks": ["answer"]})
    )
    with pytest.raises(CouncilError, match="every council member failed to answer: a: .*; b: "):
        run(config=config, seed=6)


def test_unparseable_review_is_recorded_with_reason(
    scripted_provider: Any, make_simulated_config: Any
) -> None:
    scripted_provider.scripts = {
        "good": {
            "answer": lambda r, n: "an answer",
            "review": lambda r, n: '{"ranking": ["Response A", "Response B"]}',
        },
        "rambler": {
            "answer": lambda r, n: "another answer",
            "review": lambda r, n: "They are both fine.",
        },
        "chair": {"synthesize": lambda r, n: "final"},
    }
    config = fake_council("good", "rambler")
    result = run(config=config, seed=1)
    rambler = next(r for r in result.stage2 if r.reviewer == "rambler")
    assert rambler.parse_status == "unparseable" and rambler.raw_text == "They are both fine."
    assert any(
        f["member"] == "rambler" and "unparseable" in f["error"]
        for f in result.metadata["degraded"]
    )
    good = next(r for r in result.stage2 if r.reviewer == "good")
    assert all(c.score is None for c in good.candidates)  # no scores given: missing, never 0


def test_a_retried_call_counts_once(scripted_provider: Any) -> None:
    def flaky(request: Any, call_number: int) -> str:
        if call_number == 1:
            raise ProviderError("429", provider="fake", retryable=True, retry_after=0.01)
        return "answer after retry"

    scripted_provider.scripts = {
        "flaky": {
            "answer": flaky,
            "review": lambda r, n: (
                '{"ranking": ["Response A", "Response B"], "scores": {"Response A": 5, "Response B": 6}}'
            ),
        },
        "steady": {
            "answer": lambda r, n: "steady answer",
            "review": lambda r, n: '{"ranking": ["Response B", "Response A"]}',
        },
        "chair": {"synthesize": lambda r, n: "final"},
    }
    config = fake_council("flaky", "steady")
    result = run(config=config, seed=1)
    flaky_answer = next(a for a in result.stage1 if a.member == "flaky")
    assert flaky_answer.text == "answer after retry" and flaky_answer.attempts == 2
    assert len(result.stage1) == 2 and result.metadata["degraded"] == []
    assert all(len(r.candidates) == 2 for r in result.stage2)


class Recorder(Middleware):
    name = "recorder"

    def __init__(self) -> None:
        self.events: list[str] = []

    async def on_session_start(self, event: SessionStarted) -> None:
        self.events.append("start")

    async def on_stage1_complete(self, event: Stage1Completed) -> None:
        self.events.append("stage1")

    async def on_stage2_complete(self, event: Stage2Completed) -> None:
        self.events.append("stage2")

    async def on_session_end(self, event: SessionCompleted) -> dict[str, Any]:
        self.events.append("end")
        return {"reviews": len(event.reviews)}


class Broken(Middleware):
    name = "broken"

    async def on_stage2_complete(self, event: Stage2Completed) -> None:
        raise RuntimeError("boom")


def test_middleware_gets_events_adds_one_key_and_a_broken_one_is_isolated() -> None:
    recorder = Recorder()
    result = run(seed=1, middleware=[Broken(), recorder])
    assert recorder.events == ["start", "stage1", "stage2", "end"]
    assert result.metadata["recorder"] == {"reviews": 5}
    assert result.metadata["middleware_errors"] == [
        {"middleware": "broken", "hook": "on_stage2_complete", "error": "RuntimeError: boom"}
    ]
    assert result.stage3.text


def test_empty_query_is_refused() -> None:
    with pytest.raises(CouncilError, match="query is empty"):
        run("   ")


def test_the_core_never_imports_the_audit() -> None:
    package = Path(__file__).parents[1] / "src" / "llm_council"
    # the audit's own modules outside bias_audit/ (tests/test_layout.py lists the same): the
    # simulated record store, and the reference design's three facades (ADR 0039)
    audit_modules = {
        "simulation/simulated_records.py",
        "bias_persistence.py",
        "bias_aggregation.py",
        "bias_amplification.py",
    }
    core_files = [
        p
        for p in package.rglob("*.py")
        if not {"bias_audit", "cli", "calibration"} & set(p.relative_to(package).parts)
        and p.relative_to(package).as_posix() not in audit_modules
    ]
    assert len(core_files) > 15
    for path in core_files:
        for node in ast.walk(ast.parse(path.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            assert not any(n.startswith("llm_council.bias_audit") for n in names), (
                f"{path} imports the audit"
            )


def test_a_member_without_its_api_key_is_named_in_one_config_error(
    make_simulated_config: Any,
) -> None:
    from llm_council.errors import ConfigError

    config = make_simulated_config(("a", "unbiased", {}), ("b", "unbiased", {}))
    config = config.model_copy(
        update={"members": (*config.members, CouncilMember(name="gpt", spec="openai:gpt-5.5"))}
    )
    with pytest.raises(
        ConfigError, match=r"^member 'gpt' \(openai:gpt-5.5\): .*set OPENAI_API_KEY$"
    ):
        run(config=config, seed=1)


def test_token_usage_is_summed_and_calls_without_counts_are_counted(
    scripted_provider: Any,
) -> None:
    from llm_council.providers.base import Completion, CompletionRequest, Provider, Usage
    from llm_council.providers.registry import register_provider, unregister_provider

    class Counted(Provider):
        provider_name = "counted"

        async def complete(self, request: CompletionRequest) -> Completion:
            text = '{"ranking": ["Response A", "Response B"]}' if request.task == "review" else "ok"
            return Completion(text=text, model="m", usage=Usage(input_tokens=10, output_tokens=3))

    register_provider("counted", lambda name, options: Counted(name))
    scripted_provider.scripts = {
        "b": {
            "answer": lambda r, n: "b's answer",
            "review": lambda r, n: '{"ranking": ["Response A", "Response B"]}',
        }
    }
    try:
        config = CouncilConfig(
            members=(
                CouncilMember(name="a", spec="counted:a"),
                CouncilMember(name="b", spec="fake:b"),
            ),
            chairman=CouncilMember(name="chair", spec="counted:chair"),
        )
        metadata = run(config=config, seed=1).metadata
    finally:
        unregister_provider("counted")
    # counted: a's answer and review, the synthesis (3 calls x 10 in, 3 out); fake: 2 calls, no counts
    assert metadata["token_usage"] == {
        "input_tokens": 30,
        "output_tokens": 9,
        "calls_without_usage": 2,
    }
