"""A PORT, for benchmarking only, of the reference council's per-session bias audit.

What it is: the algorithm of the upstream council whose audit API we mirror
(``bias_audit/session/reference_api.py``, ADR 0015): ``src/llm_council/bias_audit.py``
(``run_bias_audit`` and its helpers) and the session-to-records / JSONL append of
``src/llm_council/bias_persistence.py`` in amiable-dev/llm-council, rewritten here step
for step so :mod:`benchmarks.audit_vs_reference` can time it beside ours on the same
sessions. Same work, same data structures (pure Python lists/dicts and ``statistics``,
no numpy; a ``dataclass`` result; one ``json.dumps(asdict(record))`` per record; one
``O_APPEND`` open and a write per line), so its cost is the reference's cost.

What it is NOT: a statistic anyone should use. Its numbers are the reference's naive ones
(normal approximation to a t test at n = 4-5, harsh/generous as median +- 1 sd of
reviewer means, variance of raw slot means; see ADR 0015). Nothing in ``src`` imports it.
"""

from __future__ import annotations

import json
import math
import os
import statistics
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


@dataclass
class ReferenceAuditResult:
    """The reference's ``BiasAuditResult``: ten fields."""

    length_score_correlation: float
    length_score_p_value: float
    length_bias_detected: bool
    position_score_variance: float | None
    position_bias_detected: bool | None
    reviewer_mean_scores: dict[str, float]
    reviewer_score_variance: dict[str, float]
    harsh_reviewers: list[str]
    generous_reviewers: list[str]
    overall_bias_risk: str


def _normal_cdf(x: float) -> float:
    """Phi(x) by Abramowitz & Stegun 7.1.26 (the reference's approximation)."""
    a1, a2, a3, a4, a5, p = (
        0.254829592,
        -0.284496736,
        1.421413741,
        -1.453152027,
        1.061405429,
        0.3275911,
    )
    sign = 1.0 if x >= 0 else -1.0
    z = abs(x) / math.sqrt(2.0)
    t = 1.0 / (1.0 + p * z)
    erf = 1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * math.exp(-z * z)
    return 0.5 * (1.0 + sign * erf)


def _pearson(x: list[float], y: list[float]) -> tuple[float, float]:
    """r and a two-sided p from a normal approximation to t (the reference's shortcut)."""
    n = len(x)
    if n < 3 or len(y) != n:
        return 0.0, 1.0
    mean_x, mean_y = sum(x) / n, sum(y) / n
    covariance = sum((a - mean_x) * (b - mean_y) for a, b in zip(x, y, strict=True))
    spread_x = math.sqrt(sum((a - mean_x) ** 2 for a in x))
    spread_y = math.sqrt(sum((b - mean_y) ** 2 for b in y))
    if spread_x == 0 or spread_y == 0:
        return 0.0, 1.0
    r = covariance / (spread_x * spread_y)
    if abs(r) >= 1.0:
        return r, 0.0 if abs(r) == 1.0 else 1.0
    t_statistic = r * math.sqrt(n - 2) / math.sqrt(1 - r**2)
    return r, 2 * (1 - _normal_cdf(abs(t_statistic)))


def length_correlation(
    responses: list[dict[str, Any]], scores: dict[str, dict[str, float]]
) -> tuple[float, float]:
    """Raw word count vs the mean of every score an answer got (self-scores included)."""
    if not responses or not scores:
        return 0.0, 1.0
    word_counts = {entry["model"]: len(entry["response"].split()) for entry in responses}
    mean_scores: dict[str, float] = {}
    for model in word_counts:
        # the reference builds this list twice (a dead first pass with label fallbacks)
        [given.get(model) for given in scores.values() if model in given]
        received = [given[model] for given in scores.values() if model in given]
        if received:
            mean_scores[model] = statistics.mean(received)
    if len(mean_scores) < 3:
        return 0.0, 1.0
    models = list(mean_scores)
    return _pearson([float(word_counts[m]) for m in models], [mean_scores[m] for m in models])


def reviewer_calibration(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean, sample SD and count of every score each reviewer gave (self-scores included)."""
    calibration: dict[str, dict[str, float]] = {}
    for reviewer, given in scores.items():
        values = list(given.values())
        if values:
            calibration[reviewer] = {
                "mean": statistics.mean(values),
                "std": statistics.stdev(values) if len(values) >= 2 else 0.0,
                "count": len(values),
            }
    return calibration


def position_bias(
    scores: dict[str, dict[str, float]],
    position_mapping: dict[str, int] | None,
    variance_threshold: float,
) -> tuple[float | None, bool | None]:
    """Sample variance of the raw mean score at each slot of one shared display order."""
    if not position_mapping:
        return None, None
    by_slot: dict[int, list[float]] = {}
    for given in scores.values():
        for candidate, score in given.items():
            slot = position_mapping.get(candidate)
            if slot is not None:
                by_slot.setdefault(slot, []).append(score)
    if len(by_slot) < 2:
        return None, None
    slot_means = [statistics.mean(values) for values in by_slot.values() if values]
    if len(slot_means) < 2:
        return None, None
    variance = statistics.variance(slot_means)
    return round(variance, 3), variance > variance_threshold


def run_reference_audit(
    stage1_responses: list[dict[str, Any]],
    stage2_scores: dict[str, dict[str, float]],
    position_mapping: dict[str, int] | None,
    *,
    length_threshold: float,
    variance_threshold: float,
) -> ReferenceAuditResult:
    """The reference's ``run_bias_audit``: the four helpers and a count of flags."""
    r, p = length_correlation(stage1_responses, stage2_scores)
    length_flag = abs(r) > length_threshold and p < 0.05
    calibration = reviewer_calibration(stage2_scores)
    means = [entry["mean"] for entry in calibration.values()]
    harsh: list[str] = []
    generous: list[str] = []
    if len(means) >= 2:
        centre, spread = statistics.median(means), statistics.stdev(means)
        harsh = [name for name, c in calibration.items() if c["mean"] < centre - spread]
        generous = [name for name, c in calibration.items() if c["mean"] > centre + spread]
    variance, position_flag = position_bias(stage2_scores, position_mapping, variance_threshold)
    risk = sum([length_flag, position_flag or False, bool(harsh), bool(generous)])
    return ReferenceAuditResult(
        length_score_correlation=round(r, 3),
        length_score_p_value=round(p, 4),
        length_bias_detected=length_flag,
        position_score_variance=variance,
        position_bias_detected=position_flag,
        reviewer_mean_scores={name: round(c["mean"], 2) for name, c in calibration.items()},
        reviewer_score_variance={name: round(c["std"], 2) for name, c in calibration.items()},
        harsh_reviewers=harsh,
        generous_reviewers=generous,
        overall_bias_risk="low" if risk == 0 else "medium" if risk <= 2 else "high",
    )


@dataclass
class ReferenceRecord:
    """The reference's ``BiasMetricRecord`` (schema 1.2.0): one per (reviewer, candidate)."""

    schema_version: str
    session_id: str
    timestamp: str
    consent_level: int
    reviewer_id: str
    model_id: str
    position: int
    response_length_chars: int
    score_value: float
    score_scale: str
    council_config_version: str
    query_hash: str | None
    query_metadata: dict[str, Any] | None


def _query_metadata(query: str) -> dict[str, Any]:
    """The reference's coarse query description: length bucket and a keyword category."""
    length = len(query)
    bucket = "short" if length < 50 else "medium" if length < 200 else "long"
    lowered = query.lower()
    category = "general"
    if any(k in lowered for k in ("def", "function", "class", "import", "python", "javascript")):
        category = "coding"
    elif any(k in lowered for k in ("calculate", "compute", "equation", "math", "+", "=")):
        category = "math_reasoning"
    elif any(k in lowered for k in ("write", "story", "poem", "creative", "imagine")):
        category = "creative_writing"
    return {"category": category, "token_bucket": bucket, "language": "en"}


def reference_records(
    session_id: str,
    stage1_responses: list[dict[str, Any]],
    reviews: list[tuple[str, dict[str, float], dict[str, int]]],
    query: str,
) -> list[ReferenceRecord]:
    """One record per (reviewer, candidate): ``reviews`` is ``(reviewer, {candidate:
    score}, {candidate: display position})`` per reviewer, in the reviewer's order."""
    timestamp = datetime.now(UTC).isoformat()
    metadata = _query_metadata(query)
    length_by_model: dict[str, int] = {}
    for entry in stage1_responses:
        length_by_model.setdefault(entry["model"], len(entry["response"] or ""))
    records: list[ReferenceRecord] = []
    for reviewer, given, shown_at in reviews:
        for candidate, score in given.items():
            value = float(score) if math.isfinite(score) else 0.0
            records.append(
                ReferenceRecord(
                    schema_version="1.2.0",
                    session_id=session_id,
                    timestamp=timestamp,
                    consent_level=1,
                    reviewer_id=reviewer,
                    model_id=candidate,
                    position=shown_at[candidate],
                    response_length_chars=length_by_model.get(candidate, 0),
                    score_value=value,
                    score_scale="1-10",
                    council_config_version="0.1.0",
                    query_hash=None,
                    query_metadata=metadata,
                )
            )
    return records


def append_reference_records(records: list[ReferenceRecord], path: Path) -> int:
    """The reference's append: mkdir, one ``O_APPEND`` open, one write per line, no lock."""
    if not records:
        return 0
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    with os.fdopen(descriptor, "a") as handle:
        for record in records:
            handle.write(json.dumps(asdict(record), default=str) + "\n")
    return len(records)
