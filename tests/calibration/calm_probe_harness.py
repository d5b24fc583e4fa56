"""Run the CALM and injection probes on a simulated judge and read off their flags.

The null is measured two ways. With the runner's common random numbers (a probe, its
control and the original share the judge's noise draws) an unbiased simulated judge
gives identical verdicts to all three, so no flag can fire: true, but it says nothing
about noise. :class:`IndependentNoise` therefore re-seeds every call from its prompt
(nonce removed), as a real judge sampled at temperature > 0 answers each prompt afresh:
the probe and its control then differ by noise alone, which is the null the sign test
must hold at 5%.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Sequence
from typing import Any

from llm_council.calibration.call_cache import CallCache
from llm_council.calibration.pairs import parse_pairs_lines
from llm_council.calibration.probes import run_probes
from llm_council.calibration.runner import JudgeRunner
from llm_council.providers.base import Completion, CompletionRequest, Provider
from llm_council.providers.simulated import SimulatedProvider

from .conftest import simulated_pair_records

_NONCE = re.compile(r"id=([0-9a-f]{8,32})")


def _without_nonce(prompt: str) -> str:
    """The prompt with its per-call nonce removed everywhere it appears (the block markers
    and the sentence that names it), so a prompt's noise depends only on what it says."""
    match = _NONCE.search(prompt)
    return prompt.replace(match.group(1), "") if match else prompt


class IndependentNoise(Provider):
    """A simulated judge whose noise is drawn afresh for every distinct prompt."""

    provider_name = "simulated"

    def __init__(self, inner: SimulatedProvider) -> None:
        super().__init__(inner.model_name)
        self.inner = inner

    async def complete(self, request: CompletionRequest) -> Completion:
        material = f"{request.seed}\x00{_without_nonce(request.prompt_text)}"
        seed = int.from_bytes(hashlib.sha256(material.encode()).digest()[:4], "big")
        return await self.inner.complete(request.model_copy(update={"seed": seed}))


def probe_summaries(
    options: dict[str, Any],
    *,
    n_pairs: int,
    seed: int,
    probes: Sequence[str],
    independent_noise: bool = True,
    profile: str = "unbiased",
) -> dict[str, Any]:
    """The probes' summaries for one simulated judge on ``n_pairs`` fresh pairs."""
    records = simulated_pair_records(n_pairs, seed=seed)
    pairs = parse_pairs_lines([json.dumps(r) for r in records], f"seed-{seed}")
    judge = SimulatedProvider(profile, **options)
    provider: Provider = IndependentNoise(judge) if independent_noise else judge
    runner = JudgeRunner(provider, "harness", CallCache(None), concurrency=64, seed=seed)
    return asyncio.run(run_probes(runner, pairs, probes, profile))
