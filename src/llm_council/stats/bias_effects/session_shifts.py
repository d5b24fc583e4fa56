"""Early-versus-late shift and outlying sessions, over one mean score per session.

The unit is the session: a session's records share answers and judges, so they are not
independent draws, and tests over records would be far too sure. Both functions take one
value per session (its mean score) in time order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.numerics.distribution_functions import t_sf


@dataclass(frozen=True)
class HalvesShift:
    """Late half minus early half of the session means, with Welch's t test."""

    early_mean: float
    late_mean: float
    difference: float
    t_statistic: float
    df: float
    p_value: float
    n_early: int
    n_late: int


def early_late_shift(session_means: ArrayLike) -> HalvesShift | None:
    r"""Welch's t test of the later half of the sessions against the earlier half.

    .. math::

        t = \frac{\bar y_L - \bar y_E}{\sqrt{s_E^2/n_E + s_L^2/n_L}},\quad
        \nu = \frac{(s_E^2/n_E + s_L^2/n_L)^2}
                   {\frac{(s_E^2/n_E)^2}{n_E-1} + \frac{(s_L^2/n_L)^2}{n_L-1}}

    (Welch 1947, Biometrika 34), two-sided. The early half is the first
    ``floor(K/2)`` sessions. None below 2 sessions per half; p = 1 when neither half
    varies and the means agree, 0 when they differ (no noise to explain it).

    Parameters
    ----------
    session_means : array_like, shape (K,)
        One mean score per session, in time order.

    Returns
    -------
    HalvesShift or None
        The two halves' means, their difference, t, Welch df, p and the half sizes.
    """
    values = np.asarray(session_means, dtype=float)
    values = values[np.isfinite(values)]
    half = values.size // 2
    early, late = values[:half], values[half:]
    if early.size < 2 or late.size < 2:
        return None
    v_early = float(np.var(early, ddof=1)) / early.size
    v_late = float(np.var(late, ddof=1)) / late.size
    difference = float(late.mean() - early.mean())
    if v_early + v_late == 0.0:
        t, df, p = (0.0, math.inf, 1.0) if difference == 0 else (math.inf, math.inf, 0.0)
    else:
        t = difference / math.sqrt(v_early + v_late)
        df = (v_early + v_late) ** 2 / (v_early**2 / (early.size - 1) + v_late**2 / (late.size - 1))
        p = float(2 * t_sf(abs(t), df))
    return HalvesShift(
        float(early.mean()), float(late.mean()), difference, t, df, p, early.size, late.size
    )


@dataclass(frozen=True)
class OutlyingSession:
    """One session's mean against the others': a prediction-interval t and its p-values."""

    index: int
    t_statistic: float
    p_value: float
    adjusted_p_value: float  # Bonferroni over the sessions tested


def outlying_sessions(session_means: ArrayLike) -> list[OutlyingSession]:
    r"""Each session's mean tested against a prediction from the other sessions.

    .. math::

        t_s = \frac{y_s - \bar y_{(-s)}}{s_{(-s)}\sqrt{1 + 1/(K-1)}} \sim t_{K-2}

    under "every session mean is a draw from one normal distribution": the
    leave-one-out prediction interval (an outlier cannot widen the yardstick it is
    measured with). Two-sided p, and Bonferroni over the K sessions, so a screen that
    flags ``adjusted_p_value < alpha`` raises a false alarm in at most ``alpha`` of
    stores without outliers. Empty below 4 sessions or when the others do not vary.

    Parameters
    ----------
    session_means : array_like, shape (K,)
        One mean score per session.

    Returns
    -------
    list of OutlyingSession, length K or 0
        Each session's index, t, p and Bonferroni-adjusted p.
    """
    values = np.asarray(session_means, dtype=float)
    k = values.size
    if k < 4 or not np.all(np.isfinite(values)):
        return []
    out = []
    for index in range(k):
        others = np.delete(values, index)
        spread = float(np.std(others, ddof=1))
        if spread == 0.0:
            continue
        t = float((values[index] - others.mean()) / (spread * math.sqrt(1 + 1 / (k - 1))))
        p = float(2 * t_sf(abs(t), k - 2))
        out.append(OutlyingSession(index, t, p, min(1.0, p * k)))
    return out
