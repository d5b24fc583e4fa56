"""The anytime monitor's answer: each reviewer ``watching`` or ``confirmed``, as JSON.

A (reviewer, bias) is confirmed once its e-value has reached :math:`RB/\\alpha`
(:mod:`llm_council.stats.monitor.anytime_monitor`) with the reviewers known then, and stays
confirmed. The bounds are the effect's confidence sequence at the same share of
:math:`\\alpha` (each side at half of it), computed from the sums as they are now.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from llm_council.bias_audit.records.monitor_fold import MonitorState
from llm_council.stats.monitor.anytime_monitor import cells_estimated, confidence_sequence
from llm_council.stats.monitor.monitor_session_effects import BIASES

#: what a positive / negative effect means, per bias; the slot effect says what was seen,
#: not why: in a fixed display order the answer shown first is always one model's, so a
#: preference for the first slot and for that model are one and the same number
DIRECTIONS = {
    "leniency": ("generous", "harsh"),
    "slot_preference": (
        "scores the answer it is shown first higher",
        "scores the answer it is shown first lower",
    ),
    "self_preference": ("prefers its own answer", "marks its own answer down"),
}


def _number(value: float, digits: int = 3) -> float | None:
    return round(float(value), digits) if math.isfinite(value) else None


def monitor_status(state: MonitorState) -> dict[str, Any]:
    """``{"status": "ok", "sessions", "delta0", "alpha", "confirmed", "reviewers": {...}}``;
    per reviewer ``status`` (``watching`` / ``confirmed``), the biases confirmed and,
    per bias, the estimate, its bounds, the sessions that gave one and the session count
    at confirmation."""
    settings = state.settings
    sums = state.sums
    share = settings.alpha / int(cells_estimated(sums.n))
    low, high = confidence_sequence(
        sums.weighted_sum,
        sums.precision,
        settings.prior_scale,
        math.log(2.0 / share),
        settings.prior_mean,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = np.where(sums.precision > 0, sums.weighted_sum / sums.precision, np.nan)
    reviewers: dict[str, Any] = {}
    for row, name in enumerate(state.reviewers):
        biases: dict[str, Any] = {}
        confirmed: list[str] = []
        for b, bias in enumerate(BIASES):
            at = int(sums.confirmed_at[row, b])
            estimate = float(centre[row, b])
            entry: dict[str, Any] = {
                "sessions": int(sums.n[row, b]),
                "estimate": _number(estimate),
                "bounds": [_number(low[row, b]), _number(high[row, b])],
                "confirmed_at_session": at or None,
            }
            if at:
                positive, negative = DIRECTIONS[bias]
                entry["direction"] = positive if estimate > 0 else negative
                confirmed.append(bias)
            biases[bias] = entry
        reviewers[name] = {
            "status": "confirmed" if confirmed else "watching",
            "confirmed": confirmed,
            "biases": biases,
        }
    return {
        "status": "ok",
        "sessions": state.n_sessions,
        "delta0": settings.delta0,
        "alpha": settings.alpha,
        "confirmed": sorted(name for name, entry in reviewers.items() if entry["confirmed"]),
        "reviewers": reviewers,
    }


def monitor_unavailable(reason: str) -> dict[str, Any]:
    """The answer when the monitor could not be brought up to date."""
    return {"status": "unavailable", "reason": reason}
