"""Anonymization: a pure, seeded function from (candidates, reviewer, seed) to labels.

Each reviewer gets its own shuffled order, so display position and model are not
confounded across reviewers. Labels are assigned in display order: the label letter is
the ``display_index`` (A = 0, B = 1, ...); ADR 0001 records this invariant.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from collections.abc import Mapping, Sequence
from typing import Any

from llm_council.errors import InputError
from llm_council.prompts import display_index_for, label_for
from llm_council.results import LabelAssignment


def _order_seed(seed: int, reviewer: str) -> int:
    digest = hashlib.sha256(f"{seed}\x00{reviewer}".encode()).digest()
    return int.from_bytes(digest[:8], "big")


@functools.lru_cache(maxsize=4096)
def _assignment(model: str, display_index: int) -> LabelAssignment:
    """One frozen instance per (model, position), shared by every reviewer and session:
    building a dozen per reviewer is CPU spent before its review request can leave."""
    return LabelAssignment(model=model, display_index=display_index)


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
        label_for(display_index): _assignment(model, display_index)
        for display_index, model in enumerate(order)
    }


def reversed_labels(label_to_model: Mapping[str, LabelAssignment]) -> dict[str, LabelAssignment]:
    """The same answers in the reverse display order, labelled in display order (the second
    review of ``review_orders = 2``: every answer moves, and the slot effects of a reviewer
    average out over its two reviews when they are linear in the slot)."""
    order = [a.model for a in sorted(label_to_model.values(), key=lambda a: a.display_index)]
    order.reverse()
    return {
        label_for(display_index): _assignment(model, display_index)
        for display_index, model in enumerate(order)
    }


def _position_of(label: Any, assignment: Any, where: str) -> tuple[str, int]:
    """``(model, display_index)`` of one label-map entry, or a one-line InputError."""
    if isinstance(assignment, LabelAssignment):
        return assignment.model, assignment.display_index
    if isinstance(assignment, Mapping):
        model = assignment.get("model")
        if not isinstance(model, str) or not model:
            raise InputError(f"{where}[{label!r}]['model'] must be a model name, got {model!r:.60}")
        index = assignment.get("display_index")
        if index is None:  # the reference's enhanced form without display_index
            return model, _index_from_label(label, where)
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise InputError(
                f"{where}[{label!r}]['display_index'] must be an integer >= 0, got {index!r:.60}"
            )
        return model, index
    if isinstance(assignment, str) and assignment:
        return assignment, _index_from_label(label, where)
    raise InputError(
        f"{where}[{label!r}] must be a model name or {{'model', 'display_index'}}, "
        f"got {type(assignment).__name__}"
    )


#: a label as users write it: "Response A", "response a", "RESPONSE  B" (ADR 0039)
_LABEL_ANY_CASE = re.compile(r"response\s+([a-z]+)", re.IGNORECASE)


def _index_from_label(label: Any, where: str) -> int:
    """The label letter's position (A = 0): the invariant of ADR 0001. Case is ignored,
    as the reference design ignores it ("response a" is "Response A")."""
    if isinstance(label, str):
        match = _LABEL_ANY_CASE.fullmatch(label.strip())
        if match is not None:
            return display_index_for(f"Response {match.group(1).upper()}")
    raise InputError(f"{where}: key {label!r} is not a label like 'Response A'")


def is_label_key(label: Any) -> bool:
    """``label`` names a display position by its letter (``Response A``, any case)."""
    return isinstance(label, str) and _LABEL_ANY_CASE.fullmatch(label.strip()) is not None


def _needs_label_letter(assignment: Any) -> bool:
    """The entry's position comes from its key's letter (no ``display_index`` given)."""
    return isinstance(assignment, str) or (
        isinstance(assignment, Mapping) and assignment.get("display_index") is None
    )


def is_label_map_entry(value: Any) -> bool:
    """A label map's entry (not a nested per-reviewer label map)."""
    return isinstance(value, LabelAssignment | str) or (
        isinstance(value, Mapping) and "model" in value
    )


def positions_from_label_map(
    label_to_model: Mapping[str, Any],
    where: str = "label_to_model",
    *,
    skip_unlabelled: bool = False,
) -> dict[str, int]:
    """One reviewer's label map as ``{model: display_index}``; errors name ``where``.

    ``skip_unlabelled``: an entry whose position would come from a key that is not a
    label (``{"Model B": "m"}``) is left out instead of raising, as the reference design
    does (its ``derive_position_mapping``).
    """
    positions: dict[str, int] = {}
    shown_at: dict[int, str] = {}
    for label, assignment in label_to_model.items():
        if skip_unlabelled and _needs_label_letter(assignment) and not is_label_key(label):
            continue
        model, index = _position_of(label, assignment, where)
        if model in positions:
            raise InputError(f"{where}[{label!r}]: model {model!r} appears under two labels")
        if index in shown_at:
            raise InputError(
                f"{where}[{label!r}]: display position {index} is also {shown_at[index]!r}'s"
            )
        positions[model] = index
        shown_at[index] = model
    return positions


def label_assignments(
    label_to_model: Mapping[str, Any], where: str = "label_to_model"
) -> dict[str, LabelAssignment]:
    """One reviewer's label map, any of its accepted forms, as ``{label: LabelAssignment}``.

    Validated as :func:`positions_from_label_map` validates it (one model, one position
    per label); a key that is not a label and has no ``display_index`` is skipped.
    """
    positions_from_label_map(label_to_model, where, skip_unlabelled=True)  # the checks
    assignments: dict[str, LabelAssignment] = {}
    for label, assignment in label_to_model.items():
        if _needs_label_letter(assignment) and not is_label_key(label):
            continue
        model, index = _position_of(label, assignment, where)
        assignments[str(label)] = _assignment(model, index)
    return assignments


def derive_position_mapping(
    label_to_model: Mapping[str, Any] | None,
) -> dict[str, int] | dict[str, dict[str, int]]:
    """Turn a label map into ``{model: display_index}`` (per reviewer for a nested map).

    Accepts one reviewer's map, ``{label: {"model", "display_index"}}`` or the legacy
    ``{label: model}`` (position from the label letter, the invariant), and returns
    ``{model: display_index}``; labels are read in any case (``"response a"``) and an
    entry under a key that is not a label, without a ``display_index``, is skipped (the
    reference design's behaviour) unless no key is a label. Accepts the per-reviewer map
    a session's metadata holds, ``metadata["label_to_model"] = {reviewer: {label: ...}}``,
    and returns
    ``{reviewer: {model: display_index}}``. ``None`` or empty gives ``{}``. Anything
    else, and a map naming one model or one position twice, raises a one-line
    :class:`~llm_council.errors.InputError` naming the key.
    """
    if label_to_model is None:
        return {}
    if not isinstance(label_to_model, Mapping):
        raise InputError(f"label_to_model must be a mapping, got {type(label_to_model).__name__}")
    values = list(label_to_model.values())
    if all(is_label_map_entry(value) for value in values):
        positions = positions_from_label_map(label_to_model, skip_unlabelled=True)
        if values and not positions:  # not one label: a wrong map, not a stray key
            positions_from_label_map(label_to_model)  # raises naming the first key
        return positions
    per_reviewer: dict[str, dict[str, int]] = {}
    for reviewer, labels in label_to_model.items():
        if not isinstance(labels, Mapping) or is_label_map_entry(labels):
            _position_of(reviewer, labels, "label_to_model")  # an invalid entry: its error
            raise InputError(
                f"label_to_model[{reviewer!r}]: mixes a per-reviewer map with single labels"
            )
        per_reviewer[str(reviewer)] = positions_from_label_map(
            labels, f"label_to_model[{reviewer!r}]", skip_unlabelled=True
        )
    return per_reviewer
