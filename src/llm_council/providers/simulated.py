"""The simulated provider: offline council members with configured, known biases.

Deterministic for a seed: every call draws from a generator seeded by the request's
``seed`` (the council derives one per member and stage from the session seed). A
member recognises its own answers by the author tags it wrote in stage 1, the way a
real model recognises its own style. See ADR 0003.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
from typing import Any

import numpy as np

from llm_council.errors import ProviderError
from llm_council.providers.base import Completion, CompletionRequest, Provider, Usage
from llm_council.simulation.answers import draw_answer
from llm_council.simulation.profiles import resolve_profile
from llm_council.simulation.reviewer import write_review
from llm_council.simulation.synthesis import write_synthesis


class SimulatedProvider(Provider):
    provider_name = "simulated"
    structured_output = "native"  # reviews come back on the structured channel, as from an SDK

    def __init__(self, model_name: str, **options: Any) -> None:
        super().__init__(model_name)
        self.profile = resolve_profile(model_name, options)
        self._own_tags: set[str] = set()

    def _rng(self, request: CompletionRequest) -> np.random.Generator:
        if request.seed is not None:
            material = f"{request.seed}\x00{self.model_name}\x00{request.task}"
        else:
            material = f"{self.model_name}\x00{request.task}\x00{request.prompt_text}"
        return np.random.default_rng(
            int.from_bytes(hashlib.sha256(material.encode()).digest()[:8], "big")
        )

    async def complete(self, request: CompletionRequest) -> Completion:
        if self.profile.latency_s:
            await asyncio.sleep(self.profile.latency_s)
        if request.task in self.profile.fail_tasks:
            raise ProviderError(
                f"simulated:{self.model_name} is configured to fail on '{request.task}'",
                provider=self.provider_name,
                retryable=False,
            )
        rng = self._rng(request)
        prompt = request.prompt_text
        if request.task == "answer":
            tag = f"{self.model_name}:{rng.integers(1 << 32):08x}"
            self._own_tags.add(tag)
            text = draw_answer(prompt, self.profile, tag, rng)
        elif request.task == "review":
            structured = request.response_schema is not None
            text = write_review(
                prompt, self.profile, self._own_tags, rng, structured, self.model_name
            )
        elif request.task == "synthesize":
            text = write_synthesis(prompt)
        elif request.task == "canary_score":
            scorer = importlib.import_module("llm_council.simulation.canary_scorer")
            text = scorer.score_canary_item(prompt, self.profile, rng)
        elif request.task == "pairwise_judge":
            judge_pair = importlib.import_module("llm_council.simulation.pairwise_judge").judge_pair
            text = judge_pair(self.profile, request, rng, judge_name=self.model_name)
        else:
            text = draw_answer(prompt, self.profile, f"{self.model_name}:generic", rng)
        return Completion(
            text=text,
            model=f"simulated:{self.model_name}",
            usage=Usage(input_tokens=len(prompt.split()), output_tokens=len(text.split())),
            finish_reason="stop",
            channel="structured"
            if request.task == "review" and request.response_schema is not None
            else "text",
        )
