"""A reference-design session's label maps with the unusable labels dropped and counted.

The reference council (0.45+) writes one record per (reviewer, label) whose display
position it can tell, and drops a label it cannot map, instead of losing the whole
session. Our session builder (:mod:`llm_council.bias_audit.plugin.external_session`)
refuses a malformed map outright, which is right for a caller who built the map, but
loses a reference user's whole session to one bad label. Here, before the builder runs,
a label is dropped (and named in the returned list) when:

- its model has no stage-1 answer ("unmappable": no answer to attach the score to);
- its display position cannot be told (no ``display_index`` and a key that is not a
  label such as "Response C"), or is past the answers (a 3-answer session has slots
  0-2; "Response Alpha" would read as slot 678912);
- its model already appears under another label in the same reviewer's map (one answer
  shown twice): the label at the lower display position is kept, the other dropped, so
  one answer is never scored twice in one review;
- its display position is another label's.

The reviewer's ranking and scores lose the dropped labels; the relative order of the
others is kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llm_council.anonymize import is_label_map_entry, label_assignments
from llm_council.errors import InputError


def _kept_labels(
    label_map: Mapping[str, Any], answered: set[str], where: str
) -> tuple[dict[str, Any], list[str]]:
    """One reviewer's map without its unusable labels, and why each dropped one went."""
    placed: list[tuple[int, str, str, Any]] = []  # (display index, label, model, entry)
    dropped: list[str] = []
    for label, entry in label_map.items():
        try:
            assignment = label_assignments({label: entry}, where).get(str(label))
        except InputError:
            assignment = None
        if assignment is None or assignment.display_index >= len(answered):
            # "Response Alpha" reads as a multi-letter label far past the answers shown
            dropped.append(f"{where}[{label!r}]: no display position")
        elif assignment.model not in answered:
            dropped.append(f"{where}[{label!r}]: model {assignment.model!r} has no answer")
        else:
            placed.append((assignment.display_index, str(label), assignment.model, entry))
    kept: dict[str, Any] = {}
    models: set[str] = set()
    slots: set[int] = set()
    for index, label, model, entry in sorted(placed, key=lambda item: item[:2]):
        if model in models:
            dropped.append(f"{where}[{label!r}]: model {model!r} is also under another label")
        elif index in slots:
            dropped.append(f"{where}[{label!r}]: display position {index} is taken")
        else:
            kept[label] = entry
            models.add(model)
            slots.add(index)
    return kept, dropped


def _without_labels(result: Any, removed: set[str]) -> Any:
    """A stage-2 entry whose ranking and scores leave out ``removed``."""
    if not removed or not isinstance(result, Mapping):
        return result
    parsed = result.get("parsed_ranking")
    out = dict(result)
    if isinstance(parsed, Mapping):
        parsed = dict(parsed)
        if isinstance(parsed.get("ranking"), list):
            parsed["ranking"] = [label for label in parsed["ranking"] if label not in removed]
        if isinstance(parsed.get("scores"), Mapping):
            parsed["scores"] = {k: v for k, v in parsed["scores"].items() if k not in removed}
        out["parsed_ranking"] = parsed
    elif isinstance(parsed, list):
        out["parsed_ranking"] = [label for label in parsed if label not in removed]
    return out


def usable_label_maps(
    stage1_results: Any, stage2_results: Any, label_to_model: Any
) -> tuple[Any, Any, list[str]]:
    """``(stage2, label_to_model, dropped)``: the session with its unusable labels removed.

    ``label_to_model`` is one shared map or one per reviewer; anything that is not a
    mapping, or a stage 1 that is not a list of ``{"model"}``, is returned unchanged for
    the session builder to refuse with its own message.
    """
    if not isinstance(label_to_model, Mapping) or not isinstance(stage1_results, list | tuple):
        return stage2_results, label_to_model, []
    answered = {
        entry["model"]
        for entry in stage1_results
        if isinstance(entry, Mapping) and isinstance(entry.get("model"), str)
    }
    if all(is_label_map_entry(value) for value in label_to_model.values()):
        kept, dropped = _kept_labels(label_to_model, answered, "label_to_model")
        removed = set(label_to_model) - set(kept)
        if isinstance(stage2_results, list):
            stage2_results = [_without_labels(result, removed) for result in stage2_results]
        return stage2_results, kept, dropped
    per_reviewer: dict[str, Any] = {}
    removed_by_reviewer: dict[str, set[str]] = {}
    dropped = []
    for reviewer, own in label_to_model.items():
        if not isinstance(own, Mapping):
            per_reviewer[reviewer] = own
            continue
        kept, reasons = _kept_labels(own, answered, f"label_to_model[{reviewer!r}]")
        per_reviewer[reviewer] = kept
        removed_by_reviewer[reviewer] = set(own) - set(kept)
        dropped += reasons
    if isinstance(stage2_results, list):
        stage2_results = [
            _without_labels(result, removed_by_reviewer.get(str(result.get("model")), set()))
            if isinstance(result, Mapping)
            else result
            for result in stage2_results
        ]
    return stage2_results, per_reviewer, dropped
