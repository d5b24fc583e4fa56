"""Live runs through a fake provider: both orders, bounded concurrency, checkpoint and resume."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from llm_council.calibration.call_cache import CallCache
from llm_council.calibration.pairs import read_pairs
from llm_council.calibration.runner import JudgeRunner, outcomes_from_results, position_swap_calls
from llm_council.calibration.session import LiveSettings, run_live
from llm_council.errors import ProviderError
from llm_council.prompts import extract_candidate_blocks
from llm_council.providers.base import Completion, CompletionRequest, Provider
from llm_council.providers.calling import RetryPolicy
from llm_council.providers.registry import register_provider, unregister_provider


def _always_first(request: CompletionRequest, number: int) -> str:
    return "The first one is better.\nVerdict: Response A"


def test_both_orders_are_judged_and_swapped_verdicts_map_back(
    scripted_provider, pairs_file
) -> None:
    scripted_provider.scripts = {"judge": {"pairwise_judge": _always_first}}
    path = pairs_file(8)
    report = run_live(read_pairs(path), LiveSettings(spec="fake:judge"))
    # a judge that always picks the first slot says "a" in order ab and "b" in order ba
    assert report["pairs_evaluated"] == 8
    assert all(row["ab"] == ["a"] and row["ba"] == ["b"] for row in report["pairs"])
    assert report["position_bias"]["flip_rate"] == 1.0
    # 8 of 8 flips lean first: sign test p = 2 / 2**8 = 0.0078, so a direction is named
    assert report["position_bias"]["direction"] == "favors_first"
    assert report["model_calls"] == 16
    assert [task for _, task in scripted_provider.calls] == ["pairwise_judge"] * 16


def test_prompt_shows_response_b_first_in_swapped_order(scripted_provider, pairs_file) -> None:
    seen: list[tuple[str, str]] = []

    def record(request: CompletionRequest, number: int) -> str:
        blocks = extract_candidate_blocks(request.prompt_text)
        seen.append((blocks[0][1][:20], blocks[1][1][:20]))
        return "Verdict: tie"

    scripted_provider.scripts = {"judge": {"pairwise_judge": record}}
    (pair,) = read_pairs(pairs_file(1))
    run_live([pair], LiveSettings(spec="fake:judge", concurrency=1))
    assert sorted(seen) == sorted(
        [(pair.response_a[:20], pair.response_b[:20]), (pair.response_b[:20], pair.response_a[:20])]
    )


class _Counting(Provider):
    """Tracks how many calls are in flight at once; fails pair-3 permanently."""

    provider_name = "counting"
    in_flight = 0
    peak = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        type(self).in_flight += 1
        type(self).peak = max(type(self).peak, type(self).in_flight)
        try:
            await asyncio.sleep(0.01)
            if "Question 3:" in request.prompt_text:
                raise ProviderError("boom", provider="counting", retryable=False)
            return Completion(text="Verdict: Response B", model="counting")
        finally:
            type(self).in_flight -= 1


def test_concurrency_is_bounded_and_failures_leave_pairs_unevaluated(
    pairs_file, tmp_path: Path
) -> None:
    register_provider("counting", lambda name, options: _Counting(name))
    try:
        _Counting.peak = 0
        pairs = read_pairs(pairs_file(12))
        report = run_live(
            pairs, LiveSettings(spec="counting:x", concurrency=3, cache_path=tmp_path / "c.jsonl")
        )
    finally:
        unregister_provider("counting")
    assert _Counting.peak == 3
    assert report["pairs_unevaluated"] == 1
    (missing,) = report["unevaluated"]
    assert missing["id"] == "pair-3" and "call failed" in missing["reason"]
    # the failure is not cached: 22 successful calls stored, the 2 failed ones will be retried
    assert len(CallCache(tmp_path / "c.jsonl")) == 22


def test_interrupted_run_resumes_without_repeating_finished_calls(
    scripted_provider, pairs_file, tmp_path: Path
) -> None:
    cache_path = tmp_path / "calls.jsonl"
    path = pairs_file(6)

    def flaky(request: CompletionRequest, number: int) -> str:
        if number > 7:  # the "process" dies after 7 calls: everything after fails
            raise ProviderError("connection lost", provider="fake", retryable=False)
        return "Verdict: Response A"

    scripted_provider.scripts = {"judge": {"pairwise_judge": flaky}}
    first = run_live(
        read_pairs(path), LiveSettings(spec="fake:judge", concurrency=1, cache_path=cache_path)
    )
    assert first["model_calls"] == 12 and first["pairs_unevaluated"] > 0
    assert len(cache_path.read_text().splitlines()) == 7
    scripted_provider.calls.clear()
    scripted_provider.scripts = {"judge": {"pairwise_judge": _always_first}}
    second = run_live(
        read_pairs(path), LiveSettings(spec="fake:judge", concurrency=1, cache_path=cache_path)
    )
    assert second["model_calls"] == 5  # only the 5 unfinished calls were paid for again
    assert second["cached_calls"] == 7
    assert second["pairs_evaluated"] == 6
    assert len(scripted_provider.calls) == 5


def test_cache_skips_a_torn_last_line_and_keeps_appending(tmp_path: Path) -> None:
    path = tmp_path / "calls.jsonl"
    cache = CallCache(path)
    cache.put("k1", "Verdict: tie", order="ab")
    cache.close()
    with path.open("a") as handle:
        handle.write('{"key": "k2", "te')  # crash mid-write
    with pytest.warns(UserWarning, match="torn line"):
        reopened = CallCache(path)
    assert reopened.get("k1") == "Verdict: tie" and reopened.get("k2") is None
    reopened.put("k3", "Verdict: Response A")
    reopened.close()
    with pytest.warns(UserWarning):
        again = CallCache(path)
    assert again.get("k3") == "Verdict: Response A"
    assert json.loads(path.read_text().splitlines()[-1])["key"] == "k3"


def test_unparseable_reply_is_reported_not_guessed(scripted_provider, pairs_file) -> None:
    scripted_provider.scripts = {
        "judge": {"pairwise_judge": lambda request, number: "Both are nice."}
    }
    pairs = read_pairs(pairs_file(2))
    runner = JudgeRunner(
        __import__("llm_council.providers.registry", fromlist=["x"]).create_provider("fake:judge"),
        "fake",
        CallCache(None),
        retry_policy=RetryPolicy(max_attempts=1),
    )
    results = asyncio.run(runner.run(position_swap_calls(pairs, 1)))
    outcomes = outcomes_from_results(pairs, results)
    assert not any(o.evaluated for o in outcomes)
    assert all("no verdict line" in (o.problem or "") for o in outcomes)


def test_live_repetitions_give_repetition_stability(pairs_file) -> None:
    pairs = read_pairs(pairs_file(20))
    noisy = run_live(pairs, LiveSettings(spec="simulated:unbiased", repetitions=3))
    stability = noisy["repetition_stability"]
    assert stability["orders_with_repetitions"] == 40
    assert stability["repetitions_per_order"] == {"3": 40}
    assert noisy["model_calls"] == 120
    # with no noise every repetition of an order agrees
    exact = run_live(
        pairs, LiveSettings(spec="simulated:custom", options={"noise_sd": 0.0}, repetitions=2)
    )
    assert exact["repetition_stability"]["all_repetitions_agree"]["rate"] == 1.0
    assert noisy["repetition_stability"]["all_repetitions_agree"]["rate"] < 1.0


def test_cached_calls_count_probe_calls_too(pairs_file, tmp_path: Path) -> None:
    # issue 10.9: a rerun of a finished run with probes reported only the position-swap
    # cache hits (120 reported vs 417 reused; here main reported 24 with 158 checkpointed)
    pairs = read_pairs(pairs_file(12))
    settings = LiveSettings(spec="simulated:primacy", cache_path=tmp_path / "calls.jsonl")
    first = run_live(pairs, settings, bias_check_probability=1.0)
    checkpointed = (tmp_path / "calls.jsonl").read_text().count("\n")
    again = run_live(pairs, settings, bias_check_probability=1.0)
    assert again["model_calls"] == 0
    # every checkpointed call (position-swap and probe) is served again at least once
    assert again["cached_calls"] >= checkpointed > 2 * len(pairs)
    # requests = paid + reused within the run (a probe's unperturbed baseline IS the
    # position-swap call); on the rerun all of them come from the checkpoint
    assert first["cached_calls"] == 0 and first["model_calls"] == checkpointed
    assert first["reused_calls_in_run"] > 0
    assert again["cached_calls"] == first["model_calls"] + first["reused_calls_in_run"]
    assert again["reused_calls_in_run"] == 0
