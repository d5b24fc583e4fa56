"""A seeded display order per session (or per reviewer) for councils that show one fixed order.

A council that always shows the members in the same order (karpathy/llm-council labels
``stage1_results`` in list order for every reviewer, every session) has its display slot
and its member locked together: "the judge favours the model in slot A" and "the judge
favours slot A" are the same data, and no statistic can tell them apart (slot and model
effects are *confounded*). Position bias is then untestable, and a slot preference shows
up as favouritism or self-preference instead.

:func:`shuffled_display_order` draws the order with our seeded anonymizer
(:func:`~llm_council.anonymize.assign_labels`): call it once per session and build the
stage-2 prompt from ``shown`` (label i is ``shown[i]``); pass ``label_to_model`` to
:func:`~llm_council.bias_audit.plugin.external_audit.audit_external`. One order per
session, shared by all reviewers, separates slot from model *across* sessions (the pooled
``bias-report``), not within one session; an order per reviewer (``reviewer=...``, one
prompt each) separates them within a session too.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from llm_council.anonymize import assign_labels
from llm_council.errors import InputError


@dataclass(frozen=True)
class SessionDisplayOrder:
    """The order to show and the label map to audit with; save ``seed`` to reproduce it."""

    seed: int
    label_to_model: dict[str, str]  # {"Response A": model shown first, ...}
    shown: list[Any]  # the stage-1 entries in display order: label i is shown[i]


def shuffled_display_order(
    stage1_results: Sequence[Any], *, seed: int | None = None, reviewer: str = ""
) -> SessionDisplayOrder:
    """Shuffle the members' answers for one session (or one ``reviewer`` in it).

    ``stage1_results``: ``[{"model", "response"}]``. ``seed``: any integer (a fresh
    random one when None); the same seed, members and reviewer give the same order.
    """
    models: list[str] = []
    for index, entry in enumerate(stage1_results):
        model = entry.get("model") if isinstance(entry, Mapping) else None
        if not isinstance(model, str) or not model:
            raise InputError(f"stage1_results[{index}] must be a mapping with a 'model' name")
        if model in models:
            raise InputError(f"stage1_results[{index}]: model {model!r} appears twice")
        models.append(model)
    chosen = secrets.randbits(63) if seed is None else seed
    labels = assign_labels(models, reviewer, chosen)
    by_model = {entry["model"]: entry for entry in stage1_results}
    ordered = sorted(labels.items(), key=lambda item: item[1].display_index)
    return SessionDisplayOrder(
        seed=chosen,
        label_to_model={label: shown.model for label, shown in ordered},
        shown=[by_model[shown.model] for _, shown in ordered],
    )
