"""The app's three stages with its function names and shapes (written here, not copied).

Stage 2 labels the answers in stage-1 order for every reviewer, as the real app does.
"""

from __future__ import annotations

import re
from typing import Any

from .config import CHAIRMAN_MODEL, COUNCIL_MODELS
from .openrouter import query_model, query_models_parallel


async def stage1_collect_responses(user_query: str) -> list[dict[str, Any]]:
    """``[{"model", "response"}]`` for every council model that answered."""
    replies = await query_models_parallel(COUNCIL_MODELS, [{"role": "user", "content": user_query}])
    return [
        {"model": model, "response": reply.get("content", "")}
        for model, reply in replies.items()
        if reply is not None
    ]


def parse_ranking_from_text(ranking_text: str) -> list[str]:
    """The labels listed after "FINAL RANKING:", in order."""
    _, marker, tail = ranking_text.partition("FINAL RANKING:")
    return re.findall(r"Response [A-Z]", tail if marker else ranking_text)


async def stage2_collect_rankings(
    user_query: str, stage1_results: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every council model ranks the anonymized answers; labels follow the list order."""
    letters = [chr(65 + index) for index in range(len(stage1_results))]
    label_to_model = {
        f"Response {letter}": entry["model"]
        for letter, entry in zip(letters, stage1_results, strict=True)
    }
    shown = "\n\n".join(
        f"Response {letter}:\n{entry['response']}"
        for letter, entry in zip(letters, stage1_results, strict=True)
    )
    prompt = (
        f"Question: {user_query}\n\n{shown}\n\nEvaluate each response, then end with "
        "FINAL RANKING: a numbered list, best first."
    )
    replies = await query_models_parallel(COUNCIL_MODELS, [{"role": "user", "content": prompt}])
    results = []
    for model, reply in replies.items():
        if reply is None:
            continue
        text = reply.get("content", "")
        results.append(
            {"model": model, "ranking": text, "parsed_ranking": parse_ranking_from_text(text)}
        )
    return results, label_to_model


async def stage3_synthesize_final(
    user_query: str, stage1_results: list[dict[str, Any]], stage2_results: list[dict[str, Any]]
) -> dict[str, Any]:
    """The chairman's answer, from the answers and the (labelled) rankings."""
    rankings = "\n\n".join(f"{r['model']}:\n{r['ranking']}" for r in stage2_results)
    prompt = f"Synthesize an answer to {user_query!r} from:\n{rankings}"
    reply = await query_model(CHAIRMAN_MODEL, [{"role": "user", "content": prompt}])
    return {"model": CHAIRMAN_MODEL, "response": reply["content"] if reply else "(failed)"}


def calculate_aggregate_rankings(
    stage2_results: list[dict[str, Any]], label_to_model: dict[str, str]
) -> list[dict[str, Any]]:
    """Each model's average place over the reviewers who ranked it, best first."""
    places: dict[str, list[int]] = {}
    for result in stage2_results:
        for place, label in enumerate(result["parsed_ranking"], start=1):
            if label in label_to_model:
                places.setdefault(label_to_model[label], []).append(place)
    rows = [
        {"model": model, "average_rank": round(sum(p) / len(p), 2), "rankings_count": len(p)}
        for model, p in places.items()
    ]
    return sorted(rows, key=lambda row: row["average_rank"])


async def generate_conversation_title(user_query: str) -> str:
    reply = await query_model(CHAIRMAN_MODEL, [{"role": "user", "content": f"Title: {user_query}"}])
    return reply["content"] if reply else "New Conversation"


async def run_full_council(
    user_query: str,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
    """All three stages; metadata holds the label map and the aggregate ranking."""
    stage1_results = await stage1_collect_responses(user_query)
    stage2_results, label_to_model = await stage2_collect_rankings(user_query, stage1_results)
    stage3_result = await stage3_synthesize_final(user_query, stage1_results, stage2_results)
    metadata = {
        "label_to_model": label_to_model,
        "aggregate_rankings": calculate_aggregate_rankings(stage2_results, label_to_model),
    }
    return stage1_results, stage2_results, stage3_result, metadata
