"""Anonymization: a pure, seeded function from (candidates, reviewer, seed) to labels.

Each reviewer gets its own shuffled order, so display position and model are not
confounded across reviewers. Labels are assigned in display order: the label letter is
the ``display_index`` (A = 0, B = 1, ...); ADR 0001 records this invariant.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any

from llm_council.prompts import display_index_for, label_for
from llm_council.results import LabelAssignment


def _order_seed(seed: int, reviewer: str) -> int:
    digest = hashlib.sha256(f"{seed}\x00{reviewer}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


def assign_labels(
    candidates: Sequence[str], reviewer: str, seed: int
) -> dict[str, LabelAssignment]:
    """Shuffle ``candidates`` for ``reviewer`` and label them in display order.

    The result depends only on the candidate list, the reviewer and the seed, and maps
    ``"Response A"`` to the candidate shown first.
    """
    order = list(candidates)
    random.Random(_order_seed(seed, reviewer)).shuffle(order)
    return {
        label_for(display_index): LabelAssignment(model=model, display_index=display_index)
        for display_index, model in enumerate(order)
    }


def derive_position_mapping(label_to_model: Mapping[str, Any]) -> dict[str, int]:
    """Turn a label map into ``{model: display_index}``.

    Accepts ``{label: {"model", "display_index"}}`` and the legacy ``{label: model}``.

    In the legacy form the position is taken from the label letter (the invariant).
    """
    positions: dict[str, int] = {}
    for label, assignment in label_to_model.items():
        if isinstance(assignment, LabelAssignment):
            positions[assignment.model] = assignment.display_index
        elif isinstance(assignment, Mapping):
            positions[str(assignment["model"])] = int(assignment["display_index"])
        else:
            positions[str(assignment)] = display_index_for(label)
    return positions
