"""The causal-checks section of ``bias-report``: what the live bias checks measured (ADR 0024).

A check review re-asks a reviewer about the same answers in the same session, changing one
thing (the order, nothing, or one answer's length). Pairing each check score with the
score the same reviewer gave the same answer in the review that counted gives
within-reviewer, within-answer differences, so answer quality cancels and the effect is
causal rather than inferred from who happened to see what. Every interval is
session-clustered (a session contributes one check per reviewer at most).

The statistics here are pure functions over a reviewer's pairs (:func:`slot_effect`,
:func:`repeat_stability`, :func:`padding_effect`, which also measures the identity
check); the report finishes the same estimates from per-session sums
(:mod:`.causal_checks_summary`, ADR 0085), which these pair-level functions check.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from llm_council.stats.numerics.distribution_functions import t_ppf, t_sf

#: sessions a reviewer needs for a check kind before it is estimated ("too few" below)
MIN_CHECK_SESSIONS = 5
#: percentile-bootstrap resamples (over sessions) for the repeat ICC's interval
ICC_BOOTSTRAP_RESAMPLES = 400


@dataclass(frozen=True)
class CheckEstimate:
    """An effect with its 95% interval, two-sided p (NaN when not a test) and sessions used."""

    estimate: float
    ci_low: float
    ci_high: float
    p_value: float
    n_sessions: int
    n_pairs: int
    # set by the report-wide multiplicity procedure (:mod:`..report_verdicts`), never here
    finding: bool = False


@dataclass(frozen=True)
class RepeatStability:
    """Self-consistency of one reviewer on identical requests."""

    mean_abs_change: CheckEstimate  # mean |score_repeat - score_original|, in points
    share_identical: CheckEstimate  # share of pairs with exactly the same score
    icc: CheckEstimate  # ICC(1,1) of the two scores of each answer (1 = perfectly stable)


@dataclass(frozen=True)
class ReviewerCausalChecks:
    """One reviewer's check results; None with ``n_sessions`` < minimum means "too few"."""

    reviewer: str
    reshuffle_sessions: int
    slot_effect: CheckEstimate | None  # points per display slot later (reshuffle)
    repeat_sessions: int
    repeat: RepeatStability | None
    padding_sessions: int
    padding_effect: CheckEstimate | None  # points gained by the padded answer (padding)
    padding_log_word_ratio: float  # mean log(words padded / words original)
    identity_sessions: int = 0
    identity_effect: CheckEstimate | None = None  # points gained when signed as its own


@dataclass(frozen=True)
class CausalChecks:
    """The section: per reviewer, and the minimum sessions each kind needs."""

    reviewers: list[ReviewerCausalChecks]
    n_check_reviews: int
    min_sessions: int = MIN_CHECK_SESSIONS


def t_interval(estimate: float, se: float, df: int, n_sessions: int, n_pairs: int) -> CheckEstimate:
    """The estimate with its 95% t interval and two-sided p on ``df`` degrees of freedom
    (NaN interval and p when the standard error is not a positive number)."""
    if not (df > 0 and se > 0 and math.isfinite(se)):
        nan = float("nan")
        return CheckEstimate(estimate, nan, nan, nan, n_sessions, n_pairs)
    half = float(t_ppf(0.975, df)) * se
    p_value = float(2 * t_sf(abs(estimate) / se, df))
    return CheckEstimate(estimate, estimate - half, estimate + half, p_value, n_sessions, n_pairs)


def _clustered_mean(values: np.ndarray, sessions: np.ndarray) -> CheckEstimate:
    """Mean of ``values`` with a session-clustered (CR1) standard error, t with G-1 df.

    .. math:: \\widehat{V} = \\frac{G}{G-1}\\frac{1}{N^2}\\sum_g \\Big(\\sum_{i\\in g}
       (v_i-\\bar v)\\Big)^2

    (Cameron & Miller 2015, "A practitioner's guide to cluster-robust inference", eq. 11
    with an intercept-only design). With one value per session it is the ordinary one-sample
    t interval.
    """
    n = values.size
    labels, cluster = np.unique(sessions, return_inverse=True)
    g = labels.size
    mean = float(values.mean())
    sums = np.bincount(cluster, weights=values - mean, minlength=g)
    se = math.sqrt(g / (g - 1) * float(np.sum(sums**2))) / n if g > 1 else float("nan")
    return t_interval(mean, se, g - 1, g, n)


def slot_effect(
    slot_change: np.ndarray, score_change: np.ndarray, sessions: np.ndarray
) -> CheckEstimate:
    """Points per display slot later, from re-shuffled reviews of the same answers.

    For answer *j* of session *s*, :math:`\\Delta y_{sj} = y^{check}_{sj} - y^{orig}_{sj}`
    and :math:`\\Delta x_{sj}` the change of its display slot. The model
    :math:`\\Delta y_{sj} = c_s + \\beta\\,\\Delta x_{sj} + \\varepsilon_{sj}` (a per-session
    shift :math:`c_s` for whatever differs between the two asks) is fitted by OLS with
    session fixed effects, i.e. on within-session demeaned values (Frisch-Waugh-Lovell):
    :math:`\\hat\\beta = \\sum \\tilde x\\tilde y / \\sum \\tilde x^2`. Its CR1
    session-clustered variance is

    .. math:: \\widehat{V} = \\frac{G}{G-1}\\,
       \\frac{\\sum_s (\\sum_j \\tilde x_{sj}\\hat e_{sj})^2}{(\\sum \\tilde x^2)^2}

    with a t reference on G-1 df (Cameron & Miller 2015, sections II.C and VI.A).
    """
    labels, cluster = np.unique(sessions, return_inverse=True)
    g = labels.size
    counts = np.bincount(cluster, minlength=g).astype(float)
    x = slot_change - (np.bincount(cluster, weights=slot_change, minlength=g) / counts)[cluster]
    y = score_change - (np.bincount(cluster, weights=score_change, minlength=g) / counts)[cluster]
    sxx = float(np.sum(x * x))
    if sxx == 0.0:
        nan = float("nan")
        return CheckEstimate(nan, nan, nan, nan, g, int(x.size))
    beta = float(np.sum(x * y)) / sxx
    residual = y - beta * x
    scores = np.bincount(cluster, weights=x * residual, minlength=g)
    se = math.sqrt(g / (g - 1) * float(np.sum(scores**2))) / sxx if g > 1 else float("nan")
    return t_interval(beta, se, g - 1, g, int(x.size))


def icc_one_way(first: np.ndarray, second: np.ndarray) -> float:
    """ICC(1,1) of paired measurements (Shrout & Fleiss 1979, one-way random, k = 2).

    .. math:: \\mathrm{ICC} = \\frac{MS_B - MS_W}{MS_B + MS_W},\\quad
       MS_B = \\frac{2\\sum_i(\\bar y_i-\\bar y)^2}{n-1},\\quad
       MS_W = \\frac{\\sum_i\\sum_k (y_{ik}-\\bar y_i)^2}{n}

    NaN when both are zero (every score the same) or with fewer than two pairs.
    """
    pairs = np.column_stack([first, second])
    n = pairs.shape[0]
    if n < 2 or np.all(pairs == pairs[0, 0]):
        # one number throughout: both mean squares are zero (the mean of 0.1s need not be
        # 0.1 in floating point, which would make a rounding error's ICC of 1)
        return float("nan")
    row_means = pairs.mean(axis=1)
    ms_between = 2.0 * float(np.sum((row_means - pairs.mean()) ** 2)) / (n - 1)
    ms_within = float(np.sum((pairs - row_means[:, None]) ** 2)) / n
    total = ms_between + ms_within
    return (ms_between - ms_within) / total if total > 0 else float("nan")


def repeat_stability(
    original: np.ndarray, repeat: np.ndarray, sessions: np.ndarray, seed: int = 0
) -> RepeatStability:
    """Stability of identical requests: mean |change|, share identical, ICC(1,1).

    The first two are session-clustered means (:func:`_clustered_mean`); the ICC's interval
    is the 2.5/97.5 percentiles of :data:`ICC_BOOTSTRAP_RESAMPLES` resamples of whole
    sessions (Field & Welsh 2007, cluster bootstrap); it is a description, not a test.
    """
    change = np.abs(repeat - original)
    mean_abs = _clustered_mean(change, sessions)
    identical = _clustered_mean((change == 0).astype(float), sessions)
    icc = icc_one_way(original, repeat)
    labels, cluster = np.unique(sessions, return_inverse=True)
    members = [np.flatnonzero(cluster == index) for index in range(labels.size)]
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(ICC_BOOTSTRAP_RESAMPLES):
        chosen = np.concatenate([members[i] for i in rng.integers(labels.size, size=labels.size)])
        value = icc_one_way(original[chosen], repeat[chosen])
        if math.isfinite(value):
            draws.append(value)
    low, high = (
        (float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5)))
        if draws
        else (float("nan"), float("nan"))
    )
    icc_estimate = CheckEstimate(icc, low, high, float("nan"), labels.size, int(original.size))
    return RepeatStability(mean_abs, identical, icc_estimate)


def padding_effect(
    treated_change: np.ndarray, control_change: np.ndarray, sessions: np.ndarray
) -> CheckEstimate:
    """Points the padded (or, for the identity check, signed) answer gained, net of the
    re-ask's shift on the other answers.

    Per session :math:`d_s = \\Delta y_{padded} - \\overline{\\Delta y}_{others}` (a
    difference in differences: the unpadded answers of the same check review are the
    control). The estimate is :math:`\\bar d` with the one-sample t interval on G-1 df
    (one value per session, so it is already session-clustered).
    """
    return _clustered_mean(treated_change - control_change, sessions)
