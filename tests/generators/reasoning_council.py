"""Rationale lengths, refusals and ranking slips on top of the independent generator.

Wraps :mod:`generators.independent_council` (integer scores, clipping, ties, missing cells
and reviews) without changing it, and adds what ADR 0027 measures, by a model deliberately
unlike the simulator's:

- each review's rationale length is log2-normal around ``rationale_median_chars`` and, with
  ``quality_rationale_link``, longer when the session's answers are better (a confounder
  that a raw score-vs-length association would mistake for bias, while the paired
  deviation must not);
- ``reasoning_bias[r]`` points per doubling of the rationale are added to reviewer r's
  integer scores *after* they were drawn, with stochastic rounding and clipping again;
- ``abstention_probability[r]``: the review is refused (records kept, score and rank null,
  ``review_status`` "refused"); a review the base generator dropped is a failed call
  (``review_status`` "error");
- ranks follow the scores (ties broken at random), and with ``mismatch_probability[r]``
  one adjacent pair of ranks is swapped. Swapping ranks k and k + 1 of a ranking that
  agrees with its scores makes exactly one discordant pair when their scores differ and
  none when they tie, so the true number of discordant pairs is known exactly.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from generators.independent_council import CouncilSpec, generate_sessions


@dataclass(frozen=True)
class ReasoningSpec:
    council: CouncilSpec = field(default_factory=CouncilSpec)
    reasoning_bias: Sequence[float] | None = None  # per reviewer, points per doubling
    mismatch_probability: Sequence[float] | None = None  # per reviewer
    abstention_probability: Sequence[float] | None = None  # per reviewer
    rationale_median_chars: float = 900.0
    rationale_log2_sd: float = 0.8
    quality_rationale_link: float = 0.0  # log2 chars per unit of the session's mean quality


@dataclass
class ReasoningTruth:
    """What was injected, per reviewer: discordant pairs, refusals, failed reviews."""

    discordant_pairs: dict[str, int] = field(default_factory=dict)
    refused_reviews: dict[str, int] = field(default_factory=dict)
    failed_reviews: dict[str, int] = field(default_factory=dict)


def _ranks(scores: dict[str, float | None], rng: np.random.Generator) -> dict[str, int]:
    scored = [name for name, value in scores.items() if value is not None]
    keys = {name: (-float(scores[name] or 0.0), rng.random()) for name in scored}
    return {name: place for place, name in enumerate(sorted(scored, key=keys.__getitem__), 1)}


def reasoning_records(
    spec: ReasoningSpec, n_sessions: int, seed: int
) -> tuple[list[dict[str, Any]], ReasoningTruth]:
    """The records of ``n_sessions`` sessions and the truth injected into them."""
    council = spec.council
    members = council.members()
    bias = council.per_reviewer(spec.reasoning_bias)
    mismatch = council.per_reviewer(spec.mismatch_probability)
    abstain = council.per_reviewer(spec.abstention_probability)
    rng = np.random.default_rng(seed + 7919)
    truth = ReasoningTruth(
        dict.fromkeys(members, 0), dict.fromkeys(members, 0), dict.fromkeys(members, 0)
    )
    records: list[dict[str, Any]] = []
    for session in generate_sessions(council, n_sessions, seed):
        mean_quality = float(np.mean(list(session.quality.values())))
        by_reviewer: dict[str, list[dict[str, Any]]] = {}
        for record in session.records():
            by_reviewer.setdefault(record["reviewer_id"], []).append(record)
        for r, reviewer in enumerate(members):
            shown = session.position_mapping[reviewer]
            mine = by_reviewer.get(reviewer)
            if mine is None:  # the base generator dropped this review: a failed call
                truth.failed_reviews[reviewer] += 1
                template = next(iter(by_reviewer.values()))[0]
                mine = [
                    {
                        **template,
                        "reviewer_id": reviewer,
                        "model_id": candidate,
                        "position": position,
                        "n_candidates": len(shown),
                        "response_length_chars": len(session.stage1_responses[candidate]),
                        "response_length_words": session.words[candidate],
                        "score_value": None,
                        "is_self_review": reviewer == candidate,
                    }
                    for candidate, position in shown.items()
                ]
                for record in mine:
                    record.update(rank=None, rationale_chars=None, review_status="error")
                records.extend(mine)
                continue
            log2_chars = (
                np.log2(spec.rationale_median_chars)
                + spec.rationale_log2_sd * rng.standard_normal()
                + spec.quality_rationale_link * mean_quality
            )
            chars = max(1, int(round(2.0**log2_chars)))
            shift = bias[r] * (np.log2(chars) - np.log2(spec.rationale_median_chars))
            refused = bool(rng.random() < abstain[r])
            scores: dict[str, float | None] = {}
            for record in mine:
                value = record["score_value"]
                if value is not None and shift != 0.0:
                    moved = float(value) + shift
                    moved = float(np.floor(moved) + (rng.random() < moved - np.floor(moved)))
                    value = float(np.clip(moved, 1.0, 10.0))
                scores[record["model_id"]] = None if refused else value
            ranks = _ranks(scores, rng)
            if ranks and len(ranks) >= 2 and rng.random() < mismatch[r]:
                k = int(rng.integers(1, len(ranks)))
                upper = next(name for name, place in ranks.items() if place == k)
                lower = next(name for name, place in ranks.items() if place == k + 1)
                ranks[upper], ranks[lower] = k + 1, k
                if scores[upper] != scores[lower]:
                    truth.discordant_pairs[reviewer] += 1
            truth.refused_reviews[reviewer] += int(refused)
            for record in mine:
                record.update(
                    score_value=scores[record["model_id"]],
                    rank=ranks.get(record["model_id"]),
                    rationale_chars=chars,
                    review_status="refused" if refused else "json",
                )
            records.extend(mine)
    return records, truth


def write_reasoning_store(
    path: Path, spec: ReasoningSpec, n_sessions: int, seed: int
) -> ReasoningTruth:
    """Write the records as a JSONL store (members renamed judge0, judge1, ...)."""
    records, truth = reasoning_records(spec, n_sessions, seed)
    text = "".join(json.dumps(record) + "\n" for record in records)
    path.write_text(text.replace('"judge-', '"judge'), encoding="utf-8")
    rename = {name: name.replace("judge-", "judge") for name in spec.council.members()}
    return ReasoningTruth(
        *({rename[k]: v for k, v in counts.items()} for counts in vars(truth).values())
    )
