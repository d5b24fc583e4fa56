"""Bradley-Terry intervals from a per-session Poisson bootstrap whose tables add up.

Replicate ``b`` weights session ``s``'s win table by a Poisson(1) count that depends only
on (seed, session id, b) (:mod:`~llm_council.stats.inference.poisson_weights`; Hanley &
MacGibbon 2006; Chamandy et al. 2012), so the replicate's table

.. math::

    W_b = \\sum_s w_{s,b}\\, N_s

is a sum over sessions: the tables of two disjoint sets of sessions add to the tables of
their union, exactly (integer counts times integer weights, below 2^53). Each replicate
is refitted by Hunter's MM (:func:`~.bradley_terry.bradley_terry_mm`) and the intervals
are percentiles, as in the multinomial session bootstrap
(:func:`~.bradley_terry.bradley_terry_session_bootstrap`). The replicate's number of
sessions is itself random (mean S, variance S); for S in the tens or more the two
bootstraps agree to first order (Hanley & MacGibbon 2006, table 1).
"""

from __future__ import annotations

import numpy as np

from llm_council.stats.inference.poisson_weights import poisson_weights
from llm_council.stats.ranking.bradley_terry import bradley_terry_mm
from llm_council.stats.ranking.strength_estimates import StrengthEstimates, percentile_strengths

__all__ = ["bradley_terry_from_tables", "poisson_resampled_tables"]

#: replicates weighted or refitted at a time (memory: this times sessions, or times K^2)
_BATCH = 50


def poisson_resampled_tables(
    session_wins: np.ndarray, session_keys: np.ndarray, n_resamples: int
) -> np.ndarray:
    """The replicates' win tables :math:`W_b = \\sum_s w_{s,b} N_s` (module docstring).

    Parameters
    ----------
    session_wins : ndarray, shape (S, K, K)
        Per-session win counts; entry [s, i, j] is i's wins over j in session s.
    session_keys : ndarray of uint64, shape (S,)
        Each session's key (:func:`~llm_council.stats.inference.poisson_weights.unit_keys`).
    n_resamples : int
        B, the replicates 0..B-1.

    Returns
    -------
    ndarray, shape (B, K, K)
        The weighted tables (float; integer-valued).
    """
    per_session = np.asarray(session_wins, dtype=float)
    n_sessions, k, _ = per_session.shape
    flat = per_session.reshape(n_sessions, k * k)
    tables = np.zeros((n_resamples, k * k))
    for start in range(0, n_resamples, _BATCH):
        stop = min(start + _BATCH, n_resamples)
        weights = poisson_weights(session_keys, np.arange(start, stop)).astype(float)
        # einsum's own loop, not BLAS: sums of integer counts are exact either way, and a
        # multithreaded BLAS call spends more CPU than it saves on a shared machine
        tables[start:stop] = np.einsum("rs,sc->rc", weights, flat)
    return tables.reshape(n_resamples, k, k)


def bradley_terry_from_tables(
    total_wins: np.ndarray,
    resampled_wins: np.ndarray,
    *,
    confidence: float = 0.95,
    pseudo_count: float = 0.0,
    max_iter: int = 10_000,
) -> StrengthEstimates:
    """The MM fit of ``total_wins`` with percentile intervals from the replicates' tables.

    A point fit that does not converge gives NaN strengths; a replicate whose refit does
    not converge is left out of the intervals and counted.

    Parameters
    ----------
    total_wins : ndarray, shape (K, K)
        All sessions' win counts.
    resampled_wins : ndarray, shape (B, K, K)
        The replicates' tables (:func:`poisson_resampled_tables`, summed over parts).
    confidence : float
        Level of the percentile intervals.
    pseudo_count : float
        Wins added to every ordered pair before fitting (0 for the plain MLE).
    max_iter : int
        MM updates allowed per fit.

    Returns
    -------
    StrengthEstimates
        ``strength``, ``ci_low``, ``ci_high``, ``standard_error``, each shape (K,), and
        ``n_unconverged_resamples``.
    """
    k = total_wins.shape[0]
    point = bradley_terry_mm(total_wins, pseudo_count=pseudo_count, max_iter=max_iter)
    estimate = point.strength if point.converged else np.full(k, np.nan)
    n_resamples = resampled_wins.shape[0]
    replicates = np.empty((n_resamples, k))
    converged = np.empty(n_resamples, dtype=bool)
    for start in range(0, n_resamples, _BATCH):
        stop = min(start + _BATCH, n_resamples)
        fit = bradley_terry_mm(
            resampled_wins[start:stop], pseudo_count=pseudo_count, max_iter=max_iter
        )
        replicates[start:stop] = fit.strength
        converged[start:stop] = fit.converged
    return percentile_strengths(estimate, replicates, converged, confidence)
