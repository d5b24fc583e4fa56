"""Bradley-Terry strengths with intervals: the estimates' type and percentile intervals
from bootstrap replicates, shared by the multinomial and the Poisson session bootstraps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["StrengthEstimates", "percentile_strengths"]


@dataclass(frozen=True)
class StrengthEstimates:
    """Centred log strengths with interval bounds (one entry per item)."""

    strength: np.ndarray
    ci_low: np.ndarray
    ci_high: np.ndarray
    standard_error: np.ndarray
    n_unconverged_resamples: int = 0  # bootstrap refits left out: their MM never converged


def percentile_strengths(
    estimate: np.ndarray,
    replicates: np.ndarray,
    replicate_converged: np.ndarray,
    confidence: float,
) -> StrengthEstimates:
    """Percentile intervals (order statistics, no interpolation) and bootstrap standard
    errors from replicate strengths (Efron & Tibshirani 1993, ch. 13); a replicate whose
    refit did not converge is left out and counted.

    Parameters
    ----------
    estimate : ndarray, shape (K,)
        The point strengths.
    replicates : ndarray, shape (B, K)
        The replicates' strengths (``-inf`` for an item that never won there).
    replicate_converged : ndarray of bool, shape (B,)
        Whether each replicate's refit converged.
    confidence : float
        Level of the intervals.

    Returns
    -------
    StrengthEstimates
        Each array shape (K,), and ``n_unconverged_resamples``.
    """
    k = estimate.shape[0]
    n_resamples = replicates.shape[0]
    alpha = 1 - confidence
    # A refit that ran out of iterations is no estimate: its replicate is left out (and
    # counted), so an interval is taken over the converged replicates only.
    replicates = replicates[replicate_converged]
    # A replicate where a model never wins has strength -inf (no finite MLE); keep it, and
    # take order statistics without interpolation so an infinite bound stays infinite.
    finite = np.where(np.isfinite(replicates), replicates, np.nan)
    # a column with fewer than 2 finite replicates has no spread: nan, without numpy's warning
    enough = np.sum(~np.isnan(finite), axis=0) > 1
    spread = np.full(k, np.nan)
    if replicates.shape[0] > 1 and enough.any():
        spread[enough] = np.nanstd(finite[:, enough], axis=0, ddof=1)
    if replicates.shape[0] == 0:
        bound_low = bound_high = np.full(k, np.nan)
    else:
        bound_low = np.quantile(replicates, alpha / 2, axis=0, method="inverted_cdf")
        bound_high = np.quantile(replicates, 1 - alpha / 2, axis=0, method="inverted_cdf")
    return StrengthEstimates(
        strength=estimate,
        ci_low=bound_low,
        ci_high=bound_high,
        standard_error=spread,
        n_unconverged_resamples=int(n_resamples - replicates.shape[0]),
    )
