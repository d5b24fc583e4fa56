"""Bradley-Terry strengths from paired comparisons: MM fit, session bootstrap, covariate variant.

A reviewer's ranking of ``k`` answers is ``k(k-1)/2`` paired comparisons. Bradley & Terry
(1952) model ``P(i beats j) = g_i / (g_i + g_j)``; strengths are reported as centred log
strengths ``theta_i = log g_i - mean(log g)`` so 0 is the average model and a difference of 1
means odds of e (about 2.7) to 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.numerics.distribution_functions import normal_ppf
from llm_council.stats.ranking.strength_estimates import StrengthEstimates, percentile_strengths


@dataclass(frozen=True)
class MMFit:
    """Centred log strengths and, per problem, whether Hunter's MM iteration converged.

    ``strength`` has the shape of ``wins`` less its last axis; ``converged`` has the shape of
    the leading axes (a 0-d array for one problem). An iterate that ran out of iterations is
    not a maximum-likelihood estimate: callers must leave it out or say so (choix raises).
    """

    strength: np.ndarray
    converged: np.ndarray


def bradley_terry_mm(
    wins: ArrayLike, *, pseudo_count: float = 0.0, tol: float = 1e-10, max_iter: int = 10_000
) -> MMFit:
    """Maximum-likelihood centred log strengths by Hunter's MM algorithm.

    ``wins[..., i, j]`` counts how often ``i`` beat ``j``; leading axes are independent
    problems (used by the bootstrap). The update is

    .. math::

        \\gamma_i \\leftarrow W_i \\Big/ \\sum_{j \\ne i} \\frac{n_{ij}}{\\gamma_i + \\gamma_j}

    with ``W_i`` the wins of ``i`` and ``n_ij`` the comparisons of ``i`` and ``j``. Hunter
    (2004), "MM algorithms for generalized Bradley-Terry models", Ann. Statist. 32(1), eq. (3).
    The MLE is finite only if the comparison graph is strongly connected (Ford 1957);
    ``pseudo_count`` adds that many wins each way to every pair (a shrinkage prior) when not.

    Parameters
    ----------
    wins : array of shape (..., k, k)
        ``wins[..., i, j]`` wins of item ``i`` over item ``j``; the diagonal is ignored.
    pseudo_count : float
        Wins added each way to every off-diagonal pair before fitting.
    tol : float
        A problem has converged when no strength moves by more than ``tol`` in one update.
    max_iter : int
        Updates at most; a problem still moving then is reported as not converged.

    Returns
    -------
    MMFit
        ``strength`` of shape (..., k) (``-inf`` for an item that never wins) and the
        boolean ``converged`` of shape (...).
    """
    w = np.asarray(wins, dtype=float)
    k = w.shape[-1]
    off_diagonal = ~np.eye(k, dtype=bool)
    w = np.where(off_diagonal, w + pseudo_count, 0.0)
    comparisons = w + np.swapaxes(w, -1, -2)
    total_wins = w.sum(axis=-1)
    gamma = np.ones(w.shape[:-1])
    converged = np.zeros(w.shape[:-2], dtype=bool)
    with np.errstate(divide="ignore", invalid="ignore"):
        for _ in range(max_iter):
            denominator = (comparisons / (gamma[..., :, None] + gamma[..., None, :])).sum(axis=-1)
            updated = np.where(denominator > 0, total_wins / denominator, gamma)
            # normalise to geometric mean 1 so the iteration does not drift
            log_updated = np.log(updated)
            finite_mean = np.nanmean(np.where(np.isfinite(log_updated), log_updated, np.nan), -1)
            updated = updated / np.exp(finite_mean)[..., None]
            # the largest move of each problem (an undefined move, e.g. of an item never
            # compared, counts as none: as numpy's nanmax, without its all-NaN warning)
            moved = np.abs(updated - gamma)
            change = np.where(np.isnan(moved), 0.0, moved).max(axis=-1)
            gamma = updated
            converged = change < tol
            if converged.all():
                break
        log_gamma = np.log(gamma)
    finite = np.where(np.isfinite(log_gamma), log_gamma, np.nan)
    return MMFit(
        strength=log_gamma - np.nanmean(finite, axis=-1, keepdims=True), converged=converged
    )


def comparisons_connected(wins: ArrayLike) -> bool:
    """Are all compared items linked by a chain of comparisons (an identified common scale)?

    Strengths are only defined relative to each other within a connected component of the
    comparison graph: two groups of models never compared, directly or through others, have
    no common scale, and any offset between them is arbitrary (Zermelo 1929; Ford 1957,
    Amer. Math. Monthly 64(8)). ``wins[i, j]`` counts i's wins over j; items without any
    comparison are ignored.

    Parameters
    ----------
    wins : array_like, shape (K, K)
        Win counts; entry [i, j] is i's wins over j.

    Returns
    -------
    bool
        True when the compared items form one connected component.
    """
    w = np.asarray(wins, dtype=float)
    compared = (w + w.T) > 0
    present = compared.any(axis=1)
    if present.sum() < 2:
        return False
    linked = compared[np.ix_(present, present)]
    # breadth-first search from the first item (a few dozen models: no graph library)
    reached = np.zeros(linked.shape[0], dtype=bool)
    reached[0] = True
    frontier = reached.copy()
    while frontier.any():
        frontier = linked[frontier].any(axis=0) & ~reached
        reached |= frontier
    return bool(reached.all())


def bradley_terry_session_bootstrap(
    session_wins: ArrayLike,
    *,
    n_resamples: int,
    rng: np.random.Generator,
    confidence: float = 0.95,
    pseudo_count: float = 0.0,
    max_iter: int = 10_000,
) -> StrengthEstimates:
    """Bradley-Terry fit with percentile intervals from resampling whole sessions.

    ``session_wins[s, i, j]`` counts session ``s``'s comparisons won by ``i`` over ``j``.
    Each replicate draws ``S`` sessions with replacement (Efron & Tibshirani 1993, *An
    Introduction to the Bootstrap*, ch. 13; sessions are the resampled unit as in the cluster
    bootstrap of Field & Welsh 2007, JRSS B 69(3)) and refits by MM; a refit that does not
    converge within ``max_iter`` updates is left out of the intervals and counted in
    ``n_unconverged_resamples`` (all left out: the bounds are NaN); a point fit that does not
    converge gives NaN strengths.

    Parameters
    ----------
    session_wins : array_like, shape (S, K, K)
        Per-session win counts; entry [s, i, j] is i's wins over j in session s.
    n_resamples : int
        Bootstrap replicates.
    rng : numpy.random.Generator
        Source of the resampling.
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
    per_session = np.asarray(session_wins, dtype=float)
    n_sessions, k, _ = per_session.shape
    flat = per_session.reshape(n_sessions, k * k)
    point = bradley_terry_mm(
        flat.sum(axis=0).reshape(k, k), pseudo_count=pseudo_count, max_iter=max_iter
    )
    # an iterate that ran out of updates is no maximum-likelihood estimate: NaN, not a number
    estimate = point.strength if point.converged else np.full(k, np.nan)
    # the MM fit ignores the diagonal (an item against itself): resample only the others
    compared = ~np.eye(k, dtype=bool).ravel()
    flat_compared = np.ascontiguousarray(flat[:, compared])
    replicates = np.empty((n_resamples, k))
    replicate_converged = np.empty(n_resamples, dtype=bool)
    batch = 50
    for start in range(0, n_resamples, batch):
        size = min(batch, n_resamples - start)
        draws = rng.integers(0, n_sessions, size=(size, n_sessions))
        # how often each replicate drew each session: one bincount over (replicate, session)
        # cells, formed in place (each temporary here is replicates x sessions in size)
        draws += np.arange(size)[:, None] * n_sessions
        tallies = np.bincount(draws.ravel(), minlength=size * n_sessions)
        del draws
        counts = tallies.reshape(size, n_sessions).astype(float)
        del tallies
        # einsum's own loop, not BLAS: these sums of integer counts are exact either way,
        # and a multithreaded BLAS call spends more CPU than it saves on a shared machine
        resampled = np.zeros((size, k * k))
        resampled[:, compared] = np.einsum("rs,sc->rc", counts, flat_compared)
        fit = bradley_terry_mm(
            resampled.reshape(size, k, k), pseudo_count=pseudo_count, max_iter=max_iter
        )
        replicates[start : start + size] = fit.strength
        replicate_converged[start : start + size] = fit.converged
    return percentile_strengths(estimate, replicates, replicate_converged, confidence)


@dataclass(frozen=True)
class CovariateBradleyTerryFit:
    """Bradley-Terry with a covariate: centred strengths, covariate slope, CR1 intervals."""

    strengths: StrengthEstimates
    slope: float
    slope_ci: tuple[float, float]
    slope_standard_error: float
    n_clusters: int


def _pair_sums(pair: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """Sums of ``values`` over each of the ``k * k`` ordered item pairs, as a (k, k) table."""
    return np.bincount(pair, values, k * k).reshape(k, k)


def _win_probability(pair: np.ndarray, d: np.ndarray, theta: np.ndarray, beta: float) -> np.ndarray:
    """``P(a beats b) = 1 / (1 + exp(-(theta_a - theta_b + beta d)))`` per comparison."""
    strength_difference = (theta[:, None] - theta[None, :]).ravel()
    return 1.0 / (1.0 + np.exp(-(strength_difference[pair] + beta * d)))


def _covariate_gradient(
    pair: np.ndarray, d: np.ndarray, k: int, residual: np.ndarray
) -> np.ndarray:
    """Score vector over (theta_0..theta_{K-1}, beta): design rows ``(e_a - e_b, d)``."""
    by_pair = _pair_sums(pair, residual, k)
    return np.r_[by_pair.sum(1) - by_pair.sum(0), residual @ d]


def _covariate_information(
    pair: np.ndarray, d: np.ndarray, k: int, weight: np.ndarray
) -> np.ndarray:
    """Fisher information ``X' W X`` over (theta_0..theta_{K-1}, beta), shape (k + 1, k + 1)."""
    pair_weight = _pair_sums(pair, weight, k)
    info = np.zeros((k + 1, k + 1))
    info[:k, :k] = np.diag(pair_weight.sum(0) + pair_weight.sum(1)) - pair_weight - pair_weight.T
    cross = _pair_sums(pair, weight * d, k)
    info[:k, k] = info[k, :k] = cross.sum(1) - cross.sum(0)
    info[k, k] = weight @ (d * d)
    return info


def _newton_covariate_fit(
    pair: np.ndarray, d: np.ndarray, y: np.ndarray, k: int, free: np.ndarray, max_iter: int
) -> tuple[np.ndarray, float, bool]:
    """Newton-Raphson for (theta with theta_0 = 0, beta); False when not identified or separated."""
    theta = np.zeros(k)
    beta = 0.0
    for _ in range(max_iter):
        prob = _win_probability(pair, d, theta, beta)
        information = _covariate_information(pair, d, k, prob * (1 - prob))[np.ix_(free, free)]
        if np.linalg.matrix_rank(information) < k:
            break  # not identified: the covariate is collinear with the items (or no data)
        step = np.linalg.solve(information, _covariate_gradient(pair, d, k, y - prob)[free])
        beta += step[0]
        theta[1:] += step[1:]
        if np.max(np.abs(step)) < 1e-10:
            converged = bool(np.all(np.abs(theta) < 50) and abs(beta) < 50)  # else separation
            return theta, beta, converged
    return theta, beta, False


def _cluster_sandwich(
    pair: np.ndarray,
    d: np.ndarray,
    k: int,
    clusters: np.ndarray,
    residual: np.ndarray,
    bread: np.ndarray,
) -> tuple[np.ndarray, int]:
    """``C/(C-1) B (sum_c s_c s_c') B`` over (beta, theta_1..), and the count C of clusters."""
    n_clusters = int(clusters.max()) + 1
    cluster_offset = clusters * k
    item_scores = (
        np.bincount(cluster_offset + pair // k, residual, n_clusters * k)
        - np.bincount(cluster_offset + pair % k, residual, n_clusters * k)
    ).reshape(n_clusters, k)
    del cluster_offset
    scores = np.column_stack([np.bincount(clusters, residual * d, n_clusters), item_scores[:, 1:]])
    c = int((np.bincount(clusters, minlength=n_clusters) > 0).sum())
    return c / max(c - 1, 1) * bread @ (scores.T @ scores) @ bread, c


def bradley_terry_with_covariate(
    item_a: ArrayLike,
    item_b: ArrayLike,
    a_won: ArrayLike,
    covariate_difference: ArrayLike,
    cluster_index: ArrayLike,
    n_items: int,
    *,
    confidence: float = 0.95,
    max_iter: int = 50,
) -> CovariateBradleyTerryFit:
    """Fit ``logit P(a beats b) = theta_a - theta_b + beta (x_a - x_b)`` by Newton-Raphson.

    The Bradley-Terry model is a logistic regression without intercept on item indicator
    differences (Agresti 2013, *Categorical Data Analysis*, 3rd ed., section 11.6); an
    order-effect or covariate term enters the same linear predictor (Davidson & Beaver 1977,
    Biometrics 33). The covariance is the cluster sandwich of the score contributions with
    factor ``C/(C-1)`` (Liang & Zeger 1986; Stata's logit with vce(cluster)).

    Parameters
    ----------
    item_a, item_b : array_like of int, shape (n,)
        The two items of each comparison, ``0..n_items-1``.
    a_won : array_like, shape (n,)
        1 when ``item_a`` won, else 0.
    covariate_difference : array_like, shape (n,)
        ``x_a - x_b`` of each comparison.
    cluster_index : array_like of int, shape (n,)
        Each comparison's cluster (a session), ``0..C-1``.
    n_items : int
        K, the number of items.
    confidence : float
        Level of the normal intervals.
    max_iter : int
        Newton steps allowed.

    Returns
    -------
    CovariateBradleyTerryFit
        Centred ``strengths`` (each array shape (K,)), the covariate ``slope`` with its
        interval and standard error, and ``n_clusters``; NaN throughout (``n_clusters`` 0)
        when the fit is not identified, separates or does not converge.
    """
    a = np.asarray(item_a, dtype=np.int64)
    b = np.asarray(item_b, dtype=np.int64)
    y = np.asarray(a_won, dtype=float)
    d = np.asarray(covariate_difference, dtype=float)
    clusters = np.asarray(cluster_index, dtype=np.int64)
    k = n_items
    pair = a * k + b
    del a, b  # recovered from ``pair`` for the cluster sums: not held through the iterations
    # Free parameters, in this order: beta, theta_1..theta_{K-1} (theta_0 = 0). A design row
    # is (d, e_a - e_b without column 0); its sums are bincounts over the K*K item pairs (a
    # sum over ``a`` is a row sum of the pair table, over ``b`` a column sum), so no (n, K)
    # design matrix is ever built and each pass over the comparisons is one bincount.
    free = np.r_[k, np.arange(1, k)]  # positions of (beta, theta_1..) in (theta_0.., beta)
    theta, beta, converged = _newton_covariate_fit(pair, d, y, k, free, max_iter)
    if not converged:
        nan = np.full(k, np.nan)
        return CovariateBradleyTerryFit(
            StrengthEstimates(nan, nan, nan, nan), np.nan, (np.nan, np.nan), np.nan, 0
        )
    params = np.r_[beta, theta[1:]]
    prob = _win_probability(pair, d, theta, beta)
    bread = np.linalg.inv(_covariate_information(pair, d, k, prob * (1 - prob))[np.ix_(free, free)])
    covariance, c = _cluster_sandwich(pair, d, k, clusters, y - prob, bread)
    # map (beta, theta_1..theta_{K-1}) to centred theta_0..theta_{K-1}
    to_theta = np.zeros((n_items, n_items))
    to_theta[1:, 1:] = np.eye(n_items - 1)
    centring = np.eye(n_items) - 1.0 / n_items
    transform = centring @ to_theta
    theta = transform @ params
    theta_cov = transform @ covariance @ transform.T
    z = float(normal_ppf(0.5 + confidence / 2))
    theta_se = np.sqrt(np.clip(np.diag(theta_cov), 0, None))
    slope_se = float(np.sqrt(covariance[0, 0]))
    slope = float(params[0])
    return CovariateBradleyTerryFit(
        strengths=StrengthEstimates(theta, theta - z * theta_se, theta + z * theta_se, theta_se),
        slope=slope,
        slope_ci=(slope - z * slope_se, slope + z * slope_se),
        slope_standard_error=slope_se,
        n_clusters=c,
    )
