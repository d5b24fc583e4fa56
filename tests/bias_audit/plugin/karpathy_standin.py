"""A stand-in for karpathy/llm-council's backend (written here, not copied): its shapes only.

The real backend asks 4 models over OpenRouter; this one answers offline, deterministically
from the query, and reproduces what the audit sees: stage 1 ``[{"model", "response"}]``,
stage 2 ``[{"model", "ranking": <full reply>, "parsed_ranking": ["Response C", ...]}]``
(a ranking only, no scores), one fixed display order (the stage-1 list order, labelled A, B,
C, D for every reviewer in every session), stage 3 ``{"model", "response"}``, and metadata
``{"label_to_model": {"Response A": model, ...}, "aggregate_rankings": [...]}``.

``always_first``: reviewers who put "Response A" first whatever they read (a slot judge).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

COUNCIL_MODELS = [
    "openai/gpt-5.1",
    "google/gemini-3-pro-preview",
    "anthropic/claude-sonnet-4.5",
    "x-ai/grok-4",
]
CHAIRMAN_MODEL = "google/gemini-3-pro-preview"


def _draw(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("\x00".join(parts).encode()).digest()[:4], "big")


async def stage1_collect_responses(user_query: str) -> list[dict[str, Any]]:
    return [
        {"model": model, "response": " ".join(["word"] * (20 + _draw(user_query, model) % 200))}
        for model in COUNCIL_MODELS
    ]


def parse_ranking_from_text(ranking_text: str) -> list[str]:
    """The labels after "FINAL RANKING:", in order (karpathy's parser does the same job)."""
    _, _, tail = ranking_text.partition("FINAL RANKING:")
    return re.findall(r"Response [A-Z]", tail)


async def stage2_collect_rankings(
    user_query: str, stage1_results: list[dict[str, Any]], always_first: frozenset[str]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    labels = [f"Response {chr(65 + i)}" for i in range(len(stage1_results))]
    label_to_model = {
        label: result["model"] for label, result in zip(labels, stage1_results, strict=True)
    }
    stage2_results = []
    for reviewer in COUNCIL_MODELS:
        if reviewer in always_first:
            order = labels
        else:
            order = sorted(labels, key=lambda label: _draw(user_query, reviewer, label))
        text = "Each response has merits.\n\nFINAL RANKING:\n" + "\n".join(
            f"{place}. {label}" for place, label in enumerate(order, start=1)
        )
        stage2_results.append(
            {"model": reviewer, "ranking": text, "parsed_ranking": parse_ranking_from_text(text)}
        )
    return stage2_results, label_to_model


async def stage3_synthesize_final(
    user_query: str, stage1: list[dict[str, Any]], stage2: list[dict[str, Any]]
) -> dict[str, Any]:
    return {"model": CHAIRMAN_MODEL, "response": f"Synthesis of {len(stage1)} answers."}


def calculate_aggregate_rankings(
    stage2_results: list[dict[str, Any]], label_to_model: dict[str, str]
) -> list[dict[str, Any]]:
    positions: dict[str, list[int]] = {}
    for result in stage2_results:
        for place, label in enumerate(result["parsed_ranking"], start=1):
            positions.setdefault(label_to_model[label], []).append(place)
    return sorted(
        (
            {"model": model, "average_rank": sum(p) / len(p), "rankings_count": len(p)}
            for model, p in positions.items()
        ),
        key=lambda row: row["average_rank"],
    )


async def run_full_council(
    user_query: str, always_first: frozenset[str] = frozenset()
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    stage1_results = await stage1_collect_responses(user_query)
    stage2_results, label_to_model = await stage2_collect_rankings(
        user_query, stage1_results, always_first
    )
    stage3_result = await stage3_synthesize_final(user_query, stage1_results, stage2_results)
    metadata = {
        "label_to_model": label_to_model,
        "aggregate_rankings": calculate_aggregate_rankings(stage2_results, label_to_model),
    }
    return stage1_results, stage2_results, stage3_result, metadata
