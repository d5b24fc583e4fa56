"""One session's leniency and self-preference tests with moderated per-reviewer variances.

The tests of :mod:`llm_council.stats.sessions.session_tests` with per-reviewer noise estimate each
reviewer's variance from this session alone (about one residual df at 3-5 members), so
they keep their level but name almost nobody. Here each reviewer's session variance is
moderated toward a prior (:mod:`llm_council.stats.reviewers.moderated_variance`): the reviewer's own
past sessions when the store has them, else a documented default updated by the
session's pooled residual variance. The flag still comes from this session's scores: the
estimates are this session's contrasts; only their noise is informed by the prior.
Pure functions: arrays in, frozen dataclasses out.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.design.design_cache import fit_additive_two_way_cached
from llm_council.stats.inference.effect_floors import reaches_floor
from llm_council.stats.numerics.identity_memo import IdentityMemo
from llm_council.stats.reviewers.moderated_variance import (
    ModeratedTests,
    moderated_t_tests,
    moderated_variances,
)

FloatArray = NDArray[np.float64]

#: design-only products (the residual df shares, the annihilator) of the designs last
#: seen, keyed by the identity of the fit's read-only design arrays: a council's sessions
#: share one design per pattern of observed cells (``design_cache``), and a session asks
#: for its fits' products once for the history path and again for the session-only path
#: (ADR 0075)
_DESIGN_PRODUCTS: IdentityMemo[FloatArray] = IdentityMemo(32)


def _design_product(
    fit: AdditiveFit, key: Hashable, compute: Callable[[], FloatArray]
) -> FloatArray:
    """``compute()``, memoized by ``key`` when the fit's design arrays are read-only (so
    their contents cannot change under the memo), returned read-only either way."""

    def computed() -> FloatArray:
        product = compute()
        product.flags.writeable = False
        return product

    arrays = (fit.design, fit.covariance_unscaled, fit.rows)
    if any(array.flags.writeable for array in arrays):
        return computed()
    return _DESIGN_PRODUCTS.get(arrays, (key, fit.n_reviewers), computed)


#: each fit's per-reviewer residual variances, keyed by the fit and its residuals' bytes
_RESIDUAL_VARIANCES: IdentityMemo[tuple[FloatArray, FloatArray]] = IdentityMemo(8)


def residual_df_shares(fit: AdditiveFit) -> FloatArray:
    r"""Each reviewer's residual df share :math:`d_r = \sum_{i \in r} M_{ii}` (0 where
    it is at rounding level), read-only; depends on the design only."""

    def compute() -> FloatArray:
        leverage = np.einsum("ij,ij->i", fit.design @ fit.covariance_unscaled, fit.design)
        shares = np.bincount(fit.rows, weights=1.0 - leverage, minlength=fit.n_reviewers)
        return np.asarray(np.where(shares > 1e-9, shares, 0.0), dtype=np.float64)

    return _design_product(fit, "df shares", compute)


def fit_annihilator(fit: AdditiveFit) -> FloatArray:
    r"""The fit's residual-maker :math:`M = I - X(X^TX)^{-1}X^T`, read-only; depends on
    the design only."""
    return _design_product(
        fit,
        "annihilator",
        lambda: np.eye(fit.observed.size) - (fit.design @ fit.covariance_unscaled) @ fit.design.T,
    )


@dataclass(frozen=True)
class ReviewerVariances:
    r"""Per-reviewer residual variances of a fit: :math:`s_r^2 = RSS_r / d_r` with
    :math:`d_r = \sum_{i \in r} M_{ii}` (NaN where :math:`d_r = 0`), and ``moderated`` /
    ``moderated_df`` after
    :func:`~llm_council.stats.reviewers.moderated_variance.moderated_variances`."""

    variances: FloatArray
    dfs: FloatArray
    moderated: FloatArray
    moderated_df: FloatArray


def reviewer_residual_variances(fit: AdditiveFit) -> tuple[FloatArray, FloatArray]:
    r"""Each reviewer's residual sum of squares over its residual df share.

    :math:`E\,RSS_r = \sigma_r^2 \sum_{i\in r} M_{ii}` when the other reviewers' noise is
    the same as r's, and :math:`\sum_r d_r = n - p`; so :math:`s_r^2 = RSS_r/d_r` is the
    pooled :math:`s^2` split by reviewer (the leverage split of Cook & Weisberg 1983,
    Biometrika 70:1-10, for heteroscedasticity diagnostics). With unequal noise it is
    biased toward the others' variances by the off-diagonal of M, which moderation
    dilutes further; the mergeable summaries of the history keep :math:`RSS_r` and
    :math:`d_r` so sessions add up.

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit, R reviewers.

    Returns
    -------
    variances : ndarray, shape (R,)
        Each reviewer's s_r^2 (NaN where d_r is 0), read-only.
    dfs : ndarray, shape (R,)
        Its residual df share d_r, read-only.
    """
    return _RESIDUAL_VARIANCES.get(
        (fit,), fit.residuals.tobytes(), lambda: _residual_variances(fit)
    )


def _residual_variances(fit: AdditiveFit) -> tuple[FloatArray, FloatArray]:
    """:func:`reviewer_residual_variances`, computed."""
    dfs = residual_df_shares(fit)
    sums = np.bincount(fit.rows, weights=fit.residuals**2, minlength=fit.n_reviewers)
    with np.errstate(invalid="ignore", divide="ignore"):
        variances = np.asarray(np.where(dfs > 0.0, sums / dfs, np.nan), dtype=np.float64)
    variances.flags.writeable = False
    return variances, dfs


def reviewer_noise_expectation(fit: AdditiveFit) -> FloatArray:
    r""":math:`A_{rr'} = \sum_{i \in r, j \in r'} M_{ij}^2`, so that :math:`E\,RSS_r =
    \sum_{r'} A_{rr'} \sigma_{r'}^2` under per-reviewer noise (Rao 1970, JASA
    65:161-172). Summed over sessions (a reviewer's name, not its row, identifies it) and
    solved once, it gives unbiased per-reviewer variances where one session's A is
    singular (a 3-member council's is rank 1).

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit, R reviewers.

    Returns
    -------
    ndarray, shape (R, R)
        The matrix A.
    """
    annihilator = fit_annihilator(fit)
    groups = np.zeros((fit.observed.size, fit.n_reviewers))
    groups[np.arange(fit.observed.size), fit.rows] = 1.0
    return np.asarray(groups.T @ (annihilator**2) @ groups, dtype=np.float64)


def session_prior(
    fit: AdditiveFit, default_variance: float, default_df: float
) -> tuple[float, float]:
    r"""The default prior updated by the session's pooled residual variance.

    :math:`s_0^2 = (d_{def} s_{def}^2 + (n-p) s^2)/(d_{def} + n - p)` with
    :math:`d_0 = d_{def}`: the pooled variance is the council's best guess of typical
    noise, the default keeps a 1-df session from setting it alone. The df stay at the
    default's so the pooled part, which also enters every reviewer's own :math:`s_r^2`,
    is not counted twice.

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit.
    default_variance, default_df : float
        The default prior.

    Returns
    -------
    tuple of float
        ``(s0^2, d0)``.
    """
    pooled_df = float(fit.residual_df)
    variance = (default_df * default_variance + pooled_df * fit.residual_variance) / (
        default_df + pooled_df
    )
    return variance, default_df


def moderate(
    fit: AdditiveFit, prior_variances: ArrayLike, prior_dfs: ArrayLike
) -> ReviewerVariances:
    """The fit's per-reviewer variances, moderated toward one prior per reviewer.

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit, R reviewers.
    prior_variances, prior_dfs : array_like, shape (R,)
        Each reviewer's prior.

    Returns
    -------
    ReviewerVariances
        The raw ``variances`` and ``dfs`` and the ``moderated`` ones with ``moderated_df``,
        each shape (R,).
    """
    variances, dfs = reviewer_residual_variances(fit)
    moderated, moderated_df = moderated_variances(variances, dfs, prior_variances, prior_dfs)
    return ReviewerVariances(variances, dfs, moderated, moderated_df)


def _reviewer_weights(fit: AdditiveFit, coefficient_rows: np.ndarray) -> FloatArray:
    """R x k: the summed squared weights of each reviewer's cells in each estimate."""
    cell_weights = (fit.design @ fit.covariance_unscaled) @ coefficient_rows.T
    n_tests = cell_weights.shape[1]
    weights = np.zeros((fit.n_reviewers, n_tests))
    for test in range(n_tests):
        weights[:, test] = np.bincount(
            fit.rows, weights=cell_weights[:, test] ** 2, minlength=fit.n_reviewers
        )
    return weights


def _offset_contrasts(n_reviewers: int, n_parameters: int) -> np.ndarray:
    """Each reviewer's effect minus the mean of the others' (treatment coding)."""
    contrasts = np.zeros((n_reviewers, n_parameters))
    contrasts[:, 1:n_reviewers] = -1.0 / (n_reviewers - 1)
    contrasts[np.arange(1, n_reviewers), np.arange(1, n_reviewers)] = 1.0
    return contrasts


def moderated_offset_tests(fit: AdditiveFit, noise: ReviewerVariances) -> ModeratedTests:
    r"""Each reviewer's :math:`\hat L_r = \hat\alpha_r - \frac{1}{R-1}\sum_{r'\ne r}
    \hat\alpha_{r'}`, two-sided, with :math:`\operatorname{Var}\hat L_r = \sum_i w_i^2
    \tilde s^2_{g(i)}`, :math:`w = X(X^TX)^{-1}c_r` (Searle 1987, sec. 5.5) and
    Welch-Satterthwaite df over the moderated variances (unadjusted p-values)."""
    contrasts = _design_product(
        fit, "offset contrasts", lambda: _offset_contrasts(fit.n_reviewers, fit.design.shape[1])
    )
    weights = _design_product(fit, "offset weights", lambda: _reviewer_weights(fit, contrasts))
    return moderated_t_tests(
        contrasts @ fit.coefficients, weights, noise.moderated, noise.moderated_df, one_sided=False
    )


def moderated_self_preference_tests(
    fit: AdditiveFit,
    self_cells: list[tuple[int, int, float]],
    noise: ReviewerVariances,
    *,
    cell_rows: ArrayLike | None = None,
) -> ModeratedTests:
    r"""Each self-review's prediction error :math:`y_0 - x_0^T\hat b`, one-sided, with
    variance :math:`V_j = \tilde s^2_{r_0} + \sum_i w_i^2 \tilde s^2_{g(i)}`, :math:`w =
    X(X^TX)^{-1}x_0` (Seber & Lee 2003, sec. 5.3), then their precision-weighted mean as
    the last entry: weights :math:`\pi_j = V_j^{-1} / \sum_k V_k^{-1}`, the
    inverse-variance pooling of a common effect (Cochran 1954, Biometrics 10:101-129), so
    a precise judge's self-review counts more than a noisy one's. Its variance is computed
    from the pooled coefficient row :math:`\sum_j \pi_j x_j` and the owners' own
    :math:`\pi_j^2 \tilde s^2_{r_j}`, so the errors' correlation through :math:`\hat b`
    is counted; the weights depend only on the variances, never on the scores.
    Unadjusted p-values. ``cell_rows``: the self-reviews' design rows :math:`x_0` when the
    fit has more than reviewer and answer columns (e.g. slot effects,
    :mod:`~llm_council.stats.slots.slot_adjusted_prediction`); by default each cell's
    :meth:`~llm_council.stats.design.additive_model.AdditiveFit.cell_vector`.

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit.
    self_cells : list of (int, int, float), length m
        ``(reviewer_index, candidate_index, score)`` of each self-review, left out of ``fit``.
    noise : ReviewerVariances
        The moderated per-reviewer variances (:func:`moderate`).
    cell_rows : array_like, shape (m, p), optional
        The self-reviews' design rows.

    Returns
    -------
    ModeratedTests
        ``estimates``, ``standard_errors``, ``dfs`` and one-sided ``p_values``, each shape
        (m + 1,): the m self-reviews, then their pooled mean.
    """
    n_self = len(self_cells)
    if cell_rows is not None:
        cells = np.array(cell_rows, dtype=float).reshape(n_self, fit.design.shape[1])
    else:
        cells = np.zeros((n_self, fit.design.shape[1]))
        for index, (reviewer, candidate, _) in enumerate(self_cells):
            cells[index] = fit.cell_vector(reviewer, candidate)
    owners = np.array([reviewer for reviewer, _, _ in self_cells], dtype=np.intp)
    single = _design_product(
        fit, ("self-review weights", cells.tobytes()), lambda: _reviewer_weights(fit, cells)
    ).copy()
    single[owners, np.arange(n_self)] += 1.0
    cell_variances = noise.moderated @ single
    usable = np.isfinite(cell_variances) & (cell_variances > 0.0)
    # a variance missing or zero: equal weights, as without moderation
    pooling = 1.0 / cell_variances if usable.all() else np.ones(n_self)
    pooling = pooling / pooling.sum()
    pooled = pooling @ cells
    weights = np.hstack([single, _reviewer_weights(fit, pooled[None, :])])
    np.add.at(weights[:, n_self], owners, pooling**2)
    errors = np.array([score for _, _, score in self_cells]) - cells @ fit.coefficients
    estimates = np.concatenate([errors, [pooling @ errors]])
    return moderated_t_tests(
        estimates, weights, noise.moderated, noise.moderated_df, one_sided=True
    )


@dataclass(frozen=True)
class OffsetVerdict:
    """One reviewer's offset as last tested by :func:`step_down_moderated_offsets`."""

    reviewer_index: int
    estimate: float
    p_value_adjusted: float | None
    flagged: bool


def step_down_moderated_offsets(
    scores: ArrayLike,
    prior_variances: ArrayLike,
    prior_dfs: ArrayLike,
    *,
    significance_level: float,
    effect_floor: float,
    robust_offsets: ArrayLike,
    first_fit: AdditiveFit | None = None,
) -> list[OffsetVerdict]:
    r"""Flag harsh/generous reviewers one at a time with moderated tests (Holm, Rosner).

    As :func:`~llm_council.stats.sessions.session_tests.step_down_reviewer_offsets`: each step fits
    the remaining reviewers, tests each offset with Holm's factor (the number still in)
    and flags the smallest adjusted p-value whose :math:`|\hat L_r|` reaches
    ``effect_floor``; the flagged reviewer leaves. Under no offsets a flag needs the first
    step to reject, so the family-wise rate is at most ``significance_level`` (Holm 1979,
    Scand. J. Statist. 6:65-70). The step with two reviewers left tests their
    difference once (factor 2) and names the one farther from the council's median
    (``robust_offsets``, :func:`~llm_council.stats.sessions.session_tests.median_reference_offsets`
    of the first fit), when its estimate has that sign: a harsh and a generous judge
    among three are then both named. Priors are per original reviewer.

    Parameters
    ----------
    scores : array_like, shape (R, C)
        Reviewers x candidates, NaN for no usable score, self-reviews excluded.
    prior_variances, prior_dfs : array_like, shape (R,)
        Each reviewer's prior.
    significance_level : float
        Family-wise level.
    effect_floor : float
        Smallest absolute offset, in points, that may be flagged.
    robust_offsets : array_like, shape (R,)
        Median-reference offsets of the first fit.
    first_fit : AdditiveFit, optional
        The fit of ``scores`` itself, to save refitting.

    Returns
    -------
    list of ReviewerOffsetVerdict, length R
        Each reviewer's offset estimate as last tested, its Holm-adjusted p-value (None when
        not tested) and ``flagged``.
    """
    table = np.asarray(scores, dtype=float)
    prior_variance = np.asarray(prior_variances, dtype=float)
    prior_df = np.asarray(prior_dfs, dtype=float)
    robust = np.asarray(robust_offsets, dtype=float)
    remaining = list(range(table.shape[0]))
    verdicts: dict[int, OffsetVerdict] = {}
    while len(remaining) >= 2:
        fit: AdditiveFit | None
        if first_fit is not None and len(remaining) == table.shape[0]:
            fit = first_fit
        else:
            sub_table = table[remaining]
            fit = fit_additive_two_way_cached(sub_table[:, ~np.all(np.isnan(sub_table), axis=0)])
        if fit is None:
            break
        noise = moderate(fit, prior_variance[remaining], prior_df[remaining])
        tests = moderated_offset_tests(fit, noise)
        factor = len(remaining)
        adjusted = np.minimum(1.0, tests.p_values * factor)
        for local, index in enumerate(remaining):
            value = float(adjusted[local])
            verdicts[index] = OffsetVerdict(
                index, float(tests.estimates[local]), value if value == value else None, False
            )
        eligible = [
            (float(adjusted[local]), local)
            for local in range(len(remaining))
            if adjusted[local] == adjusted[local]
            and reaches_floor(abs(float(tests.estimates[local])), effect_floor)
        ]
        if len(remaining) == 2:
            farther = int(np.argmax(np.abs(robust[remaining])))
            eligible = [
                (p, local)
                for p, local in eligible
                if local == farther
                and np.sign(tests.estimates[local]) == np.sign(robust[remaining[local]])
            ]
        if not eligible:
            break
        p_value, local = min(eligible)
        if p_value >= significance_level:
            break
        index = remaining.pop(local)
        verdicts[index] = OffsetVerdict(index, float(tests.estimates[local]), p_value, True)
    return [verdicts[index] for index in sorted(verdicts)]
