"""The monitor's fold as it was before ADR 0053's fourth amendment (commit 4632563), frozen for the equivalence
test: the e-process values, confirmations and sums of the faster fold must equal these.

Copied verbatim from ``stats/monitor/anytime_monitor.py`` (the fold and its helpers),
``bias_audit/records/monitor_sessions.py`` (``session_estimates``) and
``bias_audit/records/monitor_fold.py`` (``fold_estimates``); only the names they import
are gathered here. Not for reuse: it is the "old code" of one test.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
from numpy.typing import ArrayLike

from llm_council.bias_audit.records.monitor_fold import MonitorState, _grow
from llm_council.bias_audit.records.monitor_sessions import MonitoredRecord, SessionEstimates
from llm_council.stats.monitor.anytime_monitor import (
    FloatArray,
    IntArray,
    MonitorSettings,
    MonitorSums,
)
from llm_council.stats.monitor.monitor_session_effects import BIASES, effect_design, session_effects
from llm_council.stats.numerics.special_functions import log_ndtr

#: as in anytime_monitor
MIN_NOISE_VARIANCE = 1e-4


def _prior_log_constant(prior_scale: float, prior_mean: float) -> float:
    """:math:`-m^2/2\\rho - \\log\\Phi(m/\\sqrt\\rho)` (:math:`m \\ge 0`, so
    :math:`\\Phi \\ge 1/2` and ``erfc`` loses nothing)."""
    z = prior_mean / math.sqrt(prior_scale)
    return -prior_mean * prior_mean / (2.0 * prior_scale) - math.log(
        0.5 * math.erfc(-z / math.sqrt(2.0))
    )


def _log_e_above_parts(
    s: FloatArray, log_a: FloatArray, rho_over_2a: FloatArray, c: FloatArray, shift: float, k: float
) -> FloatArray:
    b = s + shift
    return np.asarray(-0.5 * log_a + rho_over_2a * b * b + log_ndtr(b * c) + k)


def log_e_values(
    weighted_sum: ArrayLike,
    precision: ArrayLike,
    delta0: float,
    prior_scale: float,
    prior_mean: float = 0.0,
) -> FloatArray:
    """Both sides' :math:`\\log E` for :math:`Q = \\sum w x` and :math:`V = \\sum w`; the last
    axis is :data:`SIDES` (the ``below`` side is ``above`` for the mirrored data). The terms
    in :math:`V` alone are computed once for both sides."""
    q = np.asarray(weighted_sum, dtype=float)
    v = np.asarray(precision, dtype=float)
    a = (1.0 + prior_scale * v)[..., None]
    # both sides in one call: elementwise, so the same numbers as two calls, with one
    # log_ndtr call fewer per session
    excess = np.stack([q - delta0 * v, -q - delta0 * v], axis=-1)
    return _log_e_above_parts(
        excess,
        np.log(a),
        prior_scale / (2.0 * a),
        np.sqrt(prior_scale / a),
        prior_mean / prior_scale,
        _prior_log_constant(prior_scale, prior_mean),
    )


def combined_log_e(side_log_e: ArrayLike) -> FloatArray:
    r""":math:`\log((E^+ + E^-)/2)` from both sides' :math:`\log E` (last axis).

    Under :math:`|\mu| \le \delta_0` both sides are nonnegative supermartingales, so
    their mean is one too: the composite null is tested at the full
    :math:`\alpha` of the (reviewer, bias), with no halving for two sides.
    """
    both = np.asarray(side_log_e, dtype=float)
    return np.asarray(np.logaddexp(both[..., 0], both[..., 1]) - math.log(2.0))


def cells_estimated(n: ArrayLike) -> IntArray:
    """The number of (reviewer, bias) cells that have had an estimate (``n > 0``), over the
    last two axes (reviewers, biases), at least 1: the Bonferroni count of the monitor
    (a bias the sessions never estimate for a reviewer spends none of the level).

    Parameters
    ----------
    n : array_like of int, shape (..., R, B)
        Sessions folded into each (reviewer, bias) cell.

    Returns
    -------
    ndarray of int, shape (...)
        The count of cells with ``n > 0``, at least 1.
    """
    counts = np.asarray(np.asarray(n) > 0).sum(axis=(-2, -1))
    return np.asarray(np.maximum(counts, 1), dtype=np.int64)


def cells_log_threshold(alpha: float, n: ArrayLike) -> FloatArray:
    """:math:`\\log(K/\\alpha)`, :math:`K` = :func:`cells_estimated`, shaped to broadcast
    against the cells (two trailing axes of length 1)."""
    return np.asarray(np.log(cells_estimated(n) / alpha))[..., None, None]


def learnt_noise_variance(sums: MonitorSums, settings: MonitorSettings) -> FloatArray:
    """:math:`\\tilde\\tau^2` from the sessions folded in so far (module docstring).

    The cells' last axis is the biases of one reviewer: their residual sums are pooled
    into the reviewer's scale :math:`\\pi^2 = (d_1\\tau_0^2 + \\sum_b RSS_b)/(d_1 + \\sum_b
    \\nu_b)`, and each cell is moderated toward it,
    :math:`\\tilde\\tau^2 = (d_0\\pi^2 + RSS)/(d_0 + \\nu)`, with :math:`RSS = (n-1)\\hat\\tau^2`
    and :math:`\\nu = n - 1` (Smyth 2004's moderation, applied twice).
    """
    n = sums.n.astype(float)
    has = sums.inv_k_sum > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        mean_term = np.where(has, sums.x_over_k_sum**2 / np.where(has, sums.inv_k_sum, 1.0), 0.0)
    df = np.maximum(n - 1.0, 0.0)
    residual = np.where(df > 0, np.maximum(sums.x2_over_k_sum - mean_term, 0.0), 0.0)
    pool_numerator = settings.prior_noise_df * settings.prior_noise_sd**2 + residual.sum(
        axis=-1, keepdims=True
    )
    pool_denominator = settings.prior_noise_df + df.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        pooled = np.where(
            pool_denominator > 0,
            pool_numerator / np.where(pool_denominator > 0, pool_denominator, 1.0),
            settings.prior_noise_sd**2,
        )
        denominator = settings.pooled_prior_df + df
        moderated = np.where(
            denominator > 0,
            (settings.pooled_prior_df * pooled + residual)
            / np.where(denominator > 0, denominator, 1.0),
            pooled,
        )
    # the plug-in is itself uncertain: a small-sample inflation nu / (nu - 1), nu the
    # moderated estimate's df (2 below nu = 2), chosen by simulation (ADR 0053)
    nu = settings.pooled_prior_df + df
    inflation = np.where(nu > 2.0, nu / np.maximum(nu - 1.0, 1.0), 2.0)
    return np.maximum(moderated * inflation, MIN_NOISE_VARIANCE)


def fold_session(
    sums: MonitorSums,
    estimates: ArrayLike,
    unit_variances: ArrayLike,
    settings: MonitorSettings,
    log_thresh: float | ArrayLike | None = None,
) -> MonitorSums:
    """``sums`` after one more session; a cell whose estimate or variance is NaN (or the
    variance not positive) is left as it was. ``log_thresh``: the confirmation threshold
    now; by default :func:`cells_log_threshold` over the cells (last two axes: reviewers,
    biases) estimated so far, this session's included.

    Parameters
    ----------
    sums : MonitorSums
        The running sums, arrays of shape (..., R, B).
    estimates : array_like, shape (..., R, B)
        This session's estimates.
    unit_variances : array_like, shape (..., R, B)
        Their variances per unit of noise.
    settings : MonitorSettings
        Prior and level of the monitor.
    log_thresh : float or array_like, optional
        The confirmation threshold now.

    Returns
    -------
    MonitorSums
        New sums, same shapes; ``sums`` is not modified.
    """
    x = np.asarray(estimates, dtype=float)
    k = np.asarray(unit_variances, dtype=float)
    present = np.isfinite(x) & np.isfinite(k) & (k > 0)
    x0 = np.where(present, x, 0.0)
    k1 = np.where(present, k, 1.0)
    weight = np.where(present, 1.0 / (k1 * learnt_noise_variance(sums, settings)), 0.0)
    inv_k = np.where(present, 1.0 / k1, 0.0)
    n = sums.n + present
    precision = sums.precision + weight
    weighted_sum = sums.weighted_sum + weight * x0
    log_e = combined_log_e(
        log_e_values(
            weighted_sum, precision, settings.delta0, settings.prior_scale, settings.prior_mean
        )
    )
    log_e = np.where(present, log_e, sums.peak_log_e)
    peak = np.maximum(sums.peak_log_e, log_e)
    if log_thresh is None:
        log_thresh = cells_log_threshold(settings.alpha, n)
    crossed = (sums.confirmed_at == 0) & present & (log_e >= np.asarray(log_thresh))
    confirmed_at = np.where(crossed, n, sums.confirmed_at)
    return replace(
        sums,
        n=n,
        inv_k_sum=sums.inv_k_sum + inv_k,
        x_over_k_sum=sums.x_over_k_sum + inv_k * x0,
        x2_over_k_sum=sums.x2_over_k_sum + inv_k * x0 * x0,
        precision=precision,
        weighted_sum=weighted_sum,
        peak_log_e=peak,
        confirmed_at=confirmed_at,
    )


def session_estimates(records: Sequence[MonitoredRecord]) -> SessionEstimates | None:
    """The session's estimates, or ``None`` when its scores do not identify the additive
    model (fewer than 2 reviewers or candidates, too few scored cells)."""
    counting = [record for record in records if record.check_kind is None]
    # a score outside its own scale is not a score (a store written elsewhere could hold
    # 1e300, whose square would overflow the monitor's sums)
    scored = [
        record
        for record in counting
        if record.score_value is not None
        and min(record.score_scale) <= record.score_value <= max(record.score_scale)
    ]
    reviewers = sorted({record.reviewer_id for record in scored})
    candidates = sorted({record.model_id for record in scored})
    if len(reviewers) < 2 or len(candidates) < 2:
        return None
    row = {name: index for index, name in enumerate(reviewers)}
    column = {name: index for index, name in enumerate(candidates)}
    shape = (len(reviewers), len(candidates))
    table = np.full(shape, np.nan)
    is_self = np.zeros(shape, dtype=bool)
    for record in scored:
        r, c = row[record.reviewer_id], column[record.model_id]
        table[r, c] = record.score_value
        is_self[r, c] = record.is_self_review
    first = np.full(len(reviewers), -1, dtype=np.intp)
    for record in counting:
        seen_by = row.get(record.reviewer_id)
        seen = column.get(record.model_id)
        if record.position == 0 and seen_by is not None and seen is not None:
            first[seen_by] = seen
    own = np.full(len(reviewers), -1, dtype=np.intp)
    self_rows, self_cols = np.nonzero(is_self & ~np.isnan(table))
    own[self_rows] = self_cols
    fit_mask = ~np.isnan(table) & ~is_self
    design = effect_design(fit_mask, own)
    if design is None:
        return None
    estimates, variances = session_effects(design, table, first)
    return SessionEstimates(tuple(reviewers), estimates, variances)


def fold_estimates(state: MonitorState, session: SessionEstimates) -> MonitorState:
    """``state`` after one session's estimates (new reviewers get a row)."""
    grown = _grow(state, session.reviewers)
    rows = np.array([grown.reviewers.index(name) for name in session.reviewers], dtype=np.intp)
    estimates = np.full((len(grown.reviewers), len(BIASES)), np.nan)
    variances = np.full_like(estimates, np.nan)
    estimates[rows] = session.estimates
    variances[rows] = session.unit_variances
    sums = fold_session(grown.sums, estimates, variances, grown.settings)
    return replace(grown, sums=sums)
