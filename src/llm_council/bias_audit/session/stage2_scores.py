"""``extract_scores_from_stage2``: the reference council's stage-2 results as score tables.

Stage-2 results of the reference (karpathy's) council are
``[{"model": reviewer, "ranking": "<full reply>", "parsed_ranking": ["Response B", ...]}]``;
the reference design's later versions put ``{"ranking": [...], "scores": {label: score},
"abstained": bool}`` in ``parsed_ranking``. Both, and our own JSON verdict inside the
``ranking`` text, are read. Which source gives a reviewer's scores, first that applies:

1. ``parsed_ranking["scores"]``: the reviewer's own numbers (an abstaining reviewer is
   left out);
2. the JSON verdict in the ``ranking`` text (our reviewers' ``{"ranking", "scores"}``),
   through :func:`~llm_council.ranking_parser.parse_review`; scores outside
   ``score_scale`` are dropped, never clipped;
3. rank points from the ranking alone (``parsed_ranking`` as a list, else the parsed
   text): of N labels shown to the reviewer, the 1st gets N points, the 2nd N - 1, ...
   (a Borda count, the reference design's convention). A shown label the reviewer did
   not rank gets no score (missing, never 0).

Rank points are ordinal: every reviewer who ranks all N gives the same multiset of
points, so their mean is (N + 1) / 2 and a leniency test on them finds nothing by
construction; the position and length statistics on them are about ranks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from llm_council.anonymize import derive_position_mapping, is_label_map_entry
from llm_council.errors import InputError
from llm_council.ranking_parser import parse_review


def _label_models(label_to_model: Mapping[str, Any], where: str) -> dict[str, str]:
    """``{label: model}`` from a legacy or an enhanced label map."""
    models: dict[str, str] = {}
    for label, value in label_to_model.items():
        if not isinstance(label, str):
            raise InputError(f"{where} key {label!r} must be a label like 'Response A'")
        if isinstance(value, str):
            models[label] = value
        elif isinstance(value, Mapping) and isinstance(value.get("model"), str):
            models[label] = value["model"]
        else:
            raise InputError(f"{where}[{label!r}] must be a model name or {{'model', ...}}")
    return models


def _labels_for(reviewer: str, label_to_model: Any) -> dict[str, str]:
    """This reviewer's ``{label: model}``: the shared map, or its own in a nested map."""
    if label_to_model is None:
        return {}
    if not isinstance(label_to_model, Mapping):
        raise InputError(f"label_to_model must be a mapping, got {type(label_to_model).__name__}")
    values = list(label_to_model.values())
    if all(is_label_map_entry(value) for value in values):
        return _label_models(label_to_model, "label_to_model")
    derive_position_mapping(label_to_model)  # validates the nested form, one-line errors
    own = label_to_model.get(reviewer)
    return {} if own is None else _label_models(own, f"label_to_model[{reviewer!r}]")


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _rank_points(ranking: Sequence[Any], labels: Mapping[str, str]) -> dict[str, float]:
    """N points for the first of N shown labels, N - 1 for the second, ..."""
    points: dict[str, float] = {}
    n_shown = len(labels)
    for label in ranking:
        if isinstance(label, str) and label in labels and labels[label] not in points:
            points[labels[label]] = float(n_shown - len(points))
    return points


def _scores_of(
    result: Mapping[str, Any], labels: Mapping[str, str], score_scale: tuple[float, float]
) -> dict[str, float] | None:
    """One reviewer's ``{candidate: score}``, or None when it abstained."""
    parsed = result.get("parsed_ranking")
    if isinstance(parsed, Mapping):
        if parsed.get("abstained"):
            return None
        given = parsed.get("scores")
        if isinstance(given, Mapping) and given:
            scores = {}
            for label, raw in given.items():
                value = _number(raw)
                # off the declared scale is not a score (as in the verdict-text path below)
                on_scale = value is not None and score_scale[0] <= value <= score_scale[1]
                if isinstance(label, str) and label in labels and on_scale:
                    scores[labels[label]] = float(value)  # type: ignore[arg-type]
            return scores
        parsed = parsed.get("ranking")
    text = result.get("ranking")
    verdict = parse_review(text, list(labels), score_scale) if isinstance(text, str) else None
    if verdict is not None and verdict.scores:
        return {labels[label]: value for label, value in verdict.scores.items()}
    if isinstance(parsed, Sequence) and not isinstance(parsed, str | bytes):
        return _rank_points(parsed, labels)
    if verdict is not None and verdict.ranking:
        return _rank_points(verdict.ranking, labels)
    return {}


def extract_scores_from_stage2(
    stage2_results: Any,
    label_to_model: Any,
    *,
    score_scale: tuple[float, float] = (1.0, 10.0),
) -> dict[str, dict[str, float]]:
    """``{reviewer: {candidate: score}}`` from reference-shaped stage-2 results.

    ``label_to_model`` is the shared ``{label: model}`` (or ``{label: {"model", ...}}``)
    of a council that shows every reviewer the same order, or our per-reviewer
    ``metadata["label_to_model"]``. See the module docstring for which source of scores
    wins. A reviewer without a usable verdict maps to ``{}``; a reviewer that abstained
    is left out. Bad shapes raise a one-line :class:`~llm_council.errors.InputError`.
    """
    if not isinstance(stage2_results, Sequence) or isinstance(stage2_results, str | bytes):
        raise InputError(
            "stage2_results must be a list of {'model', 'ranking', 'parsed_ranking'}, got "
            f"{type(stage2_results).__name__}"
        )
    extracted: dict[str, dict[str, float]] = {}
    for index, result in enumerate(stage2_results):
        if not isinstance(result, Mapping):
            raise InputError(
                f"stage2_results[{index}] must be a mapping, got {type(result).__name__}"
            )
        reviewer = result.get("model")
        if not isinstance(reviewer, str):
            raise InputError(f"stage2_results[{index}]['model'] must be the reviewer's name")
        scores = _scores_of(result, _labels_for(reviewer, label_to_model), score_scale)
        if scores is not None:
            extracted[reviewer] = scores
    return extracted
