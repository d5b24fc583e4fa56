"""Calibrate: are the judge's longer rationales more often wrong (ADR 0027)?

Every verdict (each order, each repetition) that carries its rationale's length and whose
pair has a human label is one observation: ``wrong`` when the verdict differs from the
human label (a tie against a decided label is wrong too). Two views, pairs as clusters
(both orders and all repetitions of a pair share its difficulty):

- the disagreement rate in each tercile of rationale length, with a cluster-robust
  interval (:func:`~llm_council.stats.ranking.rank_consistency.clustered_rate`);
- the logistic slope of ``wrong`` on ``log2(rationale chars)`` (log-odds per doubling),
  with a cluster-robust sandwich interval and its two-sided test
  (:func:`~llm_council.stats.bias_effects.reasoning_length.logistic_slope`).
  ``longer_more_often_wrong``
  is that test at ``1 - confidence``, one-sided in effect (only a positive slope flags);
  its false-positive rate is measured in docs/calibration.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from llm_council.calibration.estimates import finite
from llm_council.calibration.judge_prompt import parse_verdict
from llm_council.calibration.outcomes import PairOutcome
from llm_council.stats.bias_effects.reasoning_length import logistic_slope
from llm_council.stats.ranking.rank_consistency import clustered_rate

#: fewer verdicts with a rationale length and a human label than this: no section
MIN_VERDICTS = 30


def reply_rationale_chars(reply: str) -> int:
    """Characters of a judge's reasoning: the reply before its last verdict line, stripped."""
    lines = reply.strip().splitlines()
    for index in range(len(lines) - 1, -1, -1):
        if parse_verdict(lines[index]) is not None:
            return len("\n".join(lines[:index]).strip())
    return len(reply.strip())


def _observations(evaluated: Sequence[PairOutcome]) -> tuple[np.ndarray, ...]:
    chars, wrong, cluster = [], [], []
    for index, outcome in enumerate(evaluated):
        label = outcome.pair.human_label
        if label is None:
            continue
        for verdicts, lengths in (
            (outcome.ab, outcome.ab_rationale_chars),
            (outcome.ba, outcome.ba_rationale_chars),
        ):
            for verdict, length in zip(verdicts, lengths, strict=False):
                if length is not None and length > 0:
                    chars.append(float(length))
                    wrong.append(float(verdict != label))
                    cluster.append(index)
    return np.asarray(chars), np.asarray(wrong), np.asarray(cluster, dtype=np.int64)


def _tercile_rates(
    chars: np.ndarray, wrong: np.ndarray, cluster: np.ndarray, confidence: float
) -> list[dict[str, Any]]:
    cuts = np.quantile(chars, [1 / 3, 2 / 3])
    tercile = np.digitize(chars, cuts, right=True)  # 0, 1, 2; ties at a cut go lower
    rows = []
    for index in range(3):
        mine = tercile == index
        if not mine.any():
            continue
        _, per_pair = np.unique(cluster[mine], return_inverse=True)
        events = np.bincount(per_pair, weights=wrong[mine])
        trials = np.bincount(per_pair).astype(float)
        rate = clustered_rate(events, trials, confidence)
        rows.append(
            {
                "tercile": index + 1,
                "chars_low": float(chars[mine].min()),
                "chars_high": float(chars[mine].max()),
                "n_verdicts": int(mine.sum()),
                "disagreement": finite(rate.estimate),
                "ci_low": finite(rate.ci_low),
                "ci_high": finite(rate.ci_high),
            }
        )
    return rows


def rationale_length_errors(evaluated: Sequence[PairOutcome], confidence: float) -> dict[str, Any]:
    """The section: tercile disagreement rates and the logistic slope, or why it is absent."""
    chars, wrong, cluster = _observations(evaluated)
    if chars.size < MIN_VERDICTS:
        return {
            "available": False,
            "reason": f"{chars.size} verdicts with a rationale length and a human label "
            f"(< {MIN_VERDICTS})",
        }
    slope = logistic_slope(np.log2(chars), wrong, cluster, confidence)
    p_value = finite(slope.p_value)
    return {
        "available": True,
        "n_verdicts": int(chars.size),
        "n_pairs": int(np.unique(cluster).size),
        "by_tercile": _tercile_rates(chars, wrong, cluster, confidence),
        "log_odds_per_doubling": finite(slope.estimate),
        "ci_low": finite(slope.ci_low),
        "ci_high": finite(slope.ci_high),
        "p_value": p_value,
        "longer_more_often_wrong": bool(
            p_value is not None and p_value < 1 - confidence and slope.estimate > 0
        ),
    }
