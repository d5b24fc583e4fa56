"""karpathy/llm-council's stage 2 asked once per reviewer, each in its own shuffled order.

The app labels the answers in stage-1 order for every reviewer ("Response A" is always
``stage1_results[0]``), so slot and model are confounded and the per-session position and
self-preference tests cannot run (ADR 0039). Here the app's own ``stage2_collect_rankings``
(its prompt, its parser) is called once per reviewer with the answers in that reviewer's
seeded order (:func:`~llm_council.bias_audit.plugin.display_order.shuffled_display_order`),
and its ``query_models_parallel`` is narrowed to that one reviewer for the call, so the
number of model calls is unchanged (one per reviewer).

What goes back to the app is relabelled to the app's usual labels (label i = stage-1 entry
i): ``parsed_ranking`` and the "Response X" mentions in ``ranking`` are mapped label to
model to label, so ``calculate_aggregate_rankings``, the chairman's prompt and the
frontend's de-anonymization read one consistent map. What the audit gets is what each
reviewer saw: its own labels and its own ``{label: model}`` map.
"""

from __future__ import annotations

import asyncio
import contextvars
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from llm_council.bias_audit.plugin.display_order import shuffled_display_order

#: the reviewer whose stage-2 call is running in this task (None: the app's own calls)
ASKED_REVIEWER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "llm_council_karpathy_asked_reviewer", default=None
)

_LABEL = re.compile(r"\bResponse ([A-Z])\b")

Stage2 = Callable[[str, list[dict[str, Any]]], Awaitable[tuple[list[Any], dict[str, str]]]]


def app_labels(stage1_results: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """The app's usual map: ``{"Response A": stage1_results[0]["model"], ...}``."""
    return {
        f"Response {chr(65 + index)}": entry["model"] for index, entry in enumerate(stage1_results)
    }


def relabel_text(text: str, old_to_new: Mapping[str, str]) -> str:
    """Every "Response X" in ``text`` mapped at once (A->C and C->A never collide)."""

    def swap(match: re.Match[str]) -> str:
        return old_to_new.get(match.group(0), match.group(0))

    return _LABEL.sub(swap, text)


def relabelled_entry(entry: Mapping[str, Any], old_to_new: Mapping[str, str]) -> dict[str, Any]:
    """One stage-2 entry with its labels mapped to the app's usual ones."""
    out = dict(entry)
    if isinstance(entry.get("ranking"), str):
        out["ranking"] = relabel_text(entry["ranking"], old_to_new)
    parsed = entry.get("parsed_ranking")
    if isinstance(parsed, list):
        out["parsed_ranking"] = [
            old_to_new.get(label, label) if isinstance(label, str) else label for label in parsed
        ]
    return out


@dataclass
class ShuffledStage2:
    """The outcome of one shuffled stage 2: what the app reads and what the audit reads."""

    seed: int
    app_results: list[dict[str, Any]]  # relabelled to app_label_to_model
    app_label_to_model: dict[str, str]
    audit_results: list[dict[str, Any]]  # each reviewer's own labels; a missing reply too
    audit_label_to_model: dict[str, dict[str, str]]  # {reviewer: {label: model}}
    display_orders: dict[str, list[str]] = field(default_factory=dict)  # reviewer -> models


def narrowed_query(query_models_parallel: Callable[..., Any]) -> Callable[..., Any]:
    """The app's ``query_models_parallel``, asking only :data:`ASKED_REVIEWER` when it is set."""

    async def query_asked_reviewer(models: Sequence[str], *args: Any, **kwargs: Any) -> Any:
        reviewer = ASKED_REVIEWER.get()
        if reviewer is not None:
            models = [model for model in models if model == reviewer]
        return await query_models_parallel(models, *args, **kwargs)

    query_asked_reviewer.__wrapped__ = query_models_parallel  # type: ignore[attr-defined]
    return query_asked_reviewer


async def shuffled_stage2(
    stage2: Stage2,
    user_query: str,
    stage1_results: list[dict[str, Any]],
    reviewers: Sequence[str],
    seed: int,
) -> ShuffledStage2:
    """Ask each reviewer through the app's ``stage2`` with the answers in its own order."""
    app_map = app_labels(stage1_results)
    model_to_app_label = {model: label for label, model in app_map.items()}

    async def ask(reviewer: str) -> tuple[str, list[Any], dict[str, str], list[str]]:
        order = shuffled_display_order(stage1_results, seed=seed, reviewer=reviewer)
        ASKED_REVIEWER.set(reviewer)  # this task's own context: the other reviewers' unaffected
        results, shown_map = await stage2(user_query, list(order.shown))
        return reviewer, results, dict(shown_map), [entry["model"] for entry in order.shown]

    asked = await asyncio.gather(*(ask(reviewer) for reviewer in reviewers))
    outcome = ShuffledStage2(
        seed=seed,
        app_results=[],
        app_label_to_model=app_map,
        audit_results=[],
        audit_label_to_model={},
    )
    for reviewer, results, shown_map, order in asked:
        outcome.audit_label_to_model[reviewer] = shown_map
        outcome.display_orders[reviewer] = order
        own = [r for r in results if isinstance(r, Mapping) and r.get("model") == reviewer]
        if not own:  # the app drops a failed reply; the audit counts it as missing
            outcome.audit_results.append(
                {"model": reviewer, "ranking": None, "parsed_ranking": None}
            )
        to_app = {label: model_to_app_label[model] for label, model in shown_map.items()}
        for entry in own:
            outcome.audit_results.append(dict(entry))
            outcome.app_results.append(relabelled_entry(entry, to_app))
    return outcome
