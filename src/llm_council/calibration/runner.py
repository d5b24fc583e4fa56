"""Run a judge over pairs in both display orders: bounded concurrency, retries, checkpoint.

Every call goes through :func:`llm_council.providers.calling.call_with_retries` (the core's
retry policy) under an :class:`asyncio.Semaphore`; finished calls are written to the
:class:`~llm_council.calibration.call_cache.CallCache` at once, so a rerun after an
interruption pays only for the calls that had not finished.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_council.calibration.call_cache import CallCache, call_key
from llm_council.calibration.judge_prompt import (
    JUDGE_PROMPT_VERSION,
    JUDGE_SYSTEM,
    build_judge_prompt,
    parse_verdict,
)
from llm_council.calibration.pairs import (
    ORDERS,
    Judgment,
    Order,
    Pair,
    shown_order,
    slot_to_original,
)
from llm_council.calibration.reasoning import reply_rationale_chars
from llm_council.calibration.report import PairOutcome, judgments_to_outcome
from llm_council.prompts import new_nonce
from llm_council.providers.base import CompletionRequest, Provider
from llm_council.providers.calling import RetryPolicy, call_with_retries


@dataclass(frozen=True)
class JudgeCall:
    """One comparison to make: ``variant`` names the texts (``original`` or a probe)."""

    pair: Pair
    order: Order
    repetition: int
    response_a: str
    response_b: str
    variant: str = "original"

    def texts_in_display_order(self) -> tuple[str, str]:
        first, _ = shown_order(self.order)
        return (
            (self.response_a, self.response_b)
            if first == "a"
            else (self.response_b, self.response_a)
        )


@dataclass(frozen=True)
class CallResult:
    call: JudgeCall
    winner: str | None  # original labels, or None
    problem: str | None
    from_cache: bool
    rationale_chars: int | None = None  # the reply's reasoning before its verdict (ADR 0027)


def judge_key(spec: str, options: Mapping[str, Any]) -> str:
    """What identifies a judge for caching: spec, options and prompt version."""
    return json.dumps([spec, sorted(options.items()), JUDGE_PROMPT_VERSION], default=str)


def call_seed(base_seed: int, call: JudgeCall) -> int:
    """The sampling seed of one call; the variant is left out on purpose, so a probe and its
    baseline share random draws and differ only by the perturbation (common random numbers)."""
    material = f"{base_seed}\x00{call.pair.pair_id}\x00{call.order}\x00{call.repetition}"
    return int.from_bytes(hashlib.sha256(material.encode()).digest()[:4], "big")


class JudgeRunner:
    """Runs :class:`JudgeCall` s against one provider, through the cache."""

    def __init__(
        self,
        provider: Provider,
        judge_identity: str,
        cache: CallCache,
        *,
        concurrency: int = 8,
        retry_policy: RetryPolicy | None = None,
        seed: int = 0,
        temperature: float | None = None,
        on_call_done: Callable[[CallResult], None] | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency must be >= 1, got {concurrency}")
        self.provider = provider
        self.judge_identity = judge_identity
        self.cache = cache
        self.concurrency = concurrency
        self.retry_policy = retry_policy or RetryPolicy()
        self.seed = seed
        self.temperature = temperature
        self.on_call_done = on_call_done
        self.calls_made = 0
        # reuses of a stored verdict, position-swap and probe calls alike (issue 10.9):
        # from the checkpoint of an earlier run, or from earlier in this run (a probe's
        # unperturbed baseline is the position-swap call itself)
        self.calls_from_checkpoint = 0
        self.calls_reused_in_run = 0

    def _key(self, call: JudgeCall) -> str:
        first, second = call.texts_in_display_order()
        content = "\x00".join((call.pair.prompt, first, second, call.pair.reference_answer or ""))
        return call_key(
            self.judge_identity,
            call.pair.pair_id,
            call.variant,
            call.order,
            call.repetition,
            content,
        )

    async def _one(self, call: JudgeCall, semaphore: asyncio.Semaphore) -> CallResult:
        key = self._key(call)
        text = self.cache.get(key)
        from_cache = text is not None
        if from_cache:
            if self.cache.was_loaded(key):
                self.calls_from_checkpoint += 1
            else:
                self.calls_reused_in_run += 1
        problem = None
        if text is None:
            first, second = call.texts_in_display_order()
            request = CompletionRequest.from_prompt(
                build_judge_prompt(
                    call.pair.prompt, first, second, new_nonce(), call.pair.reference_answer
                ),
                system=JUDGE_SYSTEM,
                task="pairwise_judge",
                seed=call_seed(self.seed, call),
                temperature=self.temperature,
                max_tokens=1024,
            )
            async with semaphore:
                outcome = await call_with_retries(self.provider, request, self.retry_policy)
            self.calls_made += 1
            if outcome.completion is None:
                problem = f"call failed after {outcome.attempts} attempt(s): {outcome.error}"
            else:
                text = outcome.completion.text
                self.cache.put(
                    key,
                    text,
                    pair_id=call.pair.pair_id,
                    variant=call.variant,
                    order=call.order,
                    repetition=call.repetition,
                )
        winner = None
        if text is not None:
            slot = parse_verdict(text)
            if slot is None:
                problem = f"no verdict line in the judge's reply (order {call.order})"
            else:
                winner = slot_to_original(call.order, slot)
        chars = reply_rationale_chars(text) if winner is not None and text is not None else None
        result = CallResult(call, winner, problem, from_cache, chars)
        if self.on_call_done is not None:
            self.on_call_done(result)
        return result

    async def run(self, calls: Sequence[JudgeCall]) -> list[CallResult]:
        semaphore = asyncio.Semaphore(self.concurrency)
        return list(await asyncio.gather(*(self._one(call, semaphore) for call in calls)))


def position_swap_calls(pairs: Sequence[Pair], repetitions: int) -> list[JudgeCall]:
    """Every pair in both orders, ``repetitions`` times each."""
    return [
        JudgeCall(pair, order, repetition, pair.response_a, pair.response_b)
        for pair in pairs
        for repetition in range(repetitions)
        for order in ORDERS
    ]


def outcomes_from_results(
    pairs: Sequence[Pair], results: Sequence[CallResult], variant: str = "original"
) -> list[PairOutcome]:
    """Group call results into one :class:`PairOutcome` per pair (failures become problems)."""
    by_pair: dict[str, list[CallResult]] = {}
    for result in results:
        if result.call.variant == variant:
            by_pair.setdefault(result.call.pair.pair_id, []).append(result)
    outcomes = []
    for pair in pairs:
        judgments = []
        problems = []
        for result in by_pair.get(pair.pair_id, []):
            if result.winner is None:
                problems.append(result.problem or "no verdict")
            else:
                judgments.append(
                    Judgment(
                        result.call.order,  # type: ignore[arg-type]
                        result.winner,  # type: ignore[arg-type]
                        result.call.repetition,
                        result.rationale_chars,
                    )
                )
        outcomes.append(judgments_to_outcome(pair, judgments, "; ".join(problems) or None))
    return outcomes
