"""Per-reviewer noise variances of the additive model, and t tests that use them.

The pooled t tests of :mod:`llm_council.stats.sessions.session_tests` assume every reviewer
scores with the same noise. Reviewers differ (a terse model may be noisier than a
careful one), and then a test about one noisy reviewer's own cell (self-preference)
divides by the pooled SD, too small for it, and fires above its level: with reviewer
SDs from 0.5 to 2.0 the pooled self-preference test fired in 8.7-9.3% of null sessions
at 7-9 members (docs/bias-audit.md). Here each reviewer gets its own variance, estimated
without bias under that model, and a test's degrees of freedom follow Satterthwaite.
Pure functions: arrays in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.numerics.special_functions import stdtr

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class ReviewerNoise:
    r"""Rao's unbiased per-reviewer variances of a fitted additive model.

    ``variances[r]`` estimates :math:`\sigma_r^2`; ``reviewer_of_cell`` maps each
    observed cell to its reviewer; ``projection`` is the fit's :math:`X(X^TX)^{-1}`
    (cells x parameters) and ``annihilator`` :math:`M = I - X(X^TX)^{-1}X^T`;
    ``inverse_expectation`` is :math:`A^{-1}` (see :func:`estimate_reviewer_noise`);
    ``residual_covariance`` is :math:`M \hat\Sigma M` with the variances floored at zero,
    computed once for every Satterthwaite df of the session.
    """

    variances: FloatArray
    reviewer_of_cell: NDArray[np.intp]
    projection: FloatArray
    annihilator: FloatArray
    inverse_expectation: FloatArray
    residual_covariance: FloatArray


@dataclass(frozen=True)
class _NoiseDesign:
    """The design-only part of :func:`estimate_reviewer_noise` (read-only arrays)."""

    projection: FloatArray
    annihilator: FloatArray
    inverse_expectation: FloatArray


#: designs kept; one per pattern of observed cells (see stats/design/design_cache.py)
NOISE_DESIGN_CACHE_SIZE = 256
_NOISE_DESIGNS: dict[tuple[int, int, bytes], _NoiseDesign | None] = {}


def _noise_design(fit: AdditiveFit) -> _NoiseDesign | None:
    """Projection, annihilator and :math:`A^{-1}` of ``fit``'s design, computed once per
    design (they depend on X only); ``None`` when :math:`A` is singular."""
    key = (fit.n_reviewers, fit.design.shape[1], fit.design.tobytes() + fit.rows.tobytes())
    if key in _NOISE_DESIGNS:
        return _NOISE_DESIGNS[key]
    reviewers = fit.rows
    n_reviewers = fit.n_reviewers
    projection = fit.design @ fit.covariance_unscaled
    annihilator = np.eye(fit.observed.size) - projection @ fit.design.T
    groups = np.zeros((fit.observed.size, n_reviewers))
    groups[np.arange(fit.observed.size), reviewers] = 1.0
    expectation = groups.T @ (annihilator**2) @ groups
    parts: _NoiseDesign | None = None
    if np.linalg.matrix_rank(expectation) == n_reviewers:
        inverse_expectation = np.asarray(np.linalg.inv(expectation), dtype=np.float64)
        for array in (projection, annihilator, inverse_expectation):
            array.flags.writeable = False
        parts = _NoiseDesign(projection, annihilator, inverse_expectation)
    if len(_NOISE_DESIGNS) >= NOISE_DESIGN_CACHE_SIZE:
        _NOISE_DESIGNS.pop(next(iter(_NOISE_DESIGNS)))  # oldest first
    _NOISE_DESIGNS[key] = parts
    return parts


def estimate_reviewer_noise(fit: AdditiveFit) -> ReviewerNoise | None:
    r"""One noise variance per reviewer, unbiased when each reviewer has its own.

    With residuals :math:`e = My` and :math:`\operatorname{Cov} y = \Sigma =
    \operatorname{diag}(\sigma^2_{g(i)})`, the reviewer sums of squares
    :math:`s_r = \sum_{i \in r} e_i^2` have :math:`E s_r = \sum_{r'} A_{rr'}
    \sigma^2_{r'}` with :math:`A_{rr'} = \sum_{i \in r, j \in r'} M_{ij}^2`, so
    :math:`\hat\sigma^2 = A^{-1} s` is unbiased (Rao 1970, JASA 65:161-172, MINQUE for
    heteroscedastic variances; Horn, Horn & Duncan 1975, JASA 70:380-385). Returns
    ``None`` when :math:`A` is singular (a reviewer with no residual information).
    Estimates can fall below zero by chance; they are kept as they are here, and a test
    whose estimated variance is not positive is not run. :math:`M` and :math:`A^{-1}`
    depend on the design only and are computed once per design.

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit, n fitted cells.

    Returns
    -------
    ReviewerNoise or None
        ``variances`` (R,), ``reviewer_of_cell`` (n,), ``projection`` (n, p),
        ``annihilator`` (n, n), ``inverse_expectation`` (R, R) and ``residual_covariance``
        (n, n); None when A is singular.
    """
    parts = _noise_design(fit)
    if parts is None:
        return None
    reviewers = fit.rows
    sums_of_squares = np.bincount(reviewers, weights=fit.residuals**2, minlength=fit.n_reviewers)
    variances = parts.inverse_expectation @ sums_of_squares
    annihilator = parts.annihilator
    residual_covariance = (annihilator * np.maximum(variances, 0.0)[reviewers]) @ annihilator
    return ReviewerNoise(
        variances=variances,
        reviewer_of_cell=reviewers,
        projection=parts.projection,
        annihilator=annihilator,
        inverse_expectation=parts.inverse_expectation,
        residual_covariance=residual_covariance,
    )


@dataclass(frozen=True)
class NoiseAwareTest:
    """An estimate with its heteroscedasticity-aware standard error, df and p-value."""

    estimate: float
    standard_error: float | None
    degrees_of_freedom: float | None
    p_value: float | None


def noise_aware_t_test(
    noise: ReviewerNoise,
    estimate: float,
    cell_weights: FloatArray,
    *,
    new_cell_weights: FloatArray | None = None,
    one_sided: bool,
) -> NoiseAwareTest:
    r"""t test of :math:`\hat\theta = w^T y + \sum_k a_k y_{0k}` under per-reviewer noise.

    :math:`\operatorname{Var}\hat\theta = \sum_i w_i^2 \sigma^2_{g(i)} + \sum_r
    a_r^{(2)} \sigma^2_r`, where ``new_cell_weights[r]`` holds :math:`a^{(2)}_r`, the
    summed squared weights of reviewer r's observations left out of the fit
    (self-reviews: 1 for one self-review, :math:`1/m^2` each in a mean of m).
    Written as :math:`v^T \sigma^2`, it is estimated by :math:`v^T \hat\sigma^2 = u^T s`
    with :math:`u = A^{-T} v`, a quadratic form :math:`e^T U e` in the residuals. Its
    degrees of freedom are Satterthwaite's :math:`\nu = 2 (v^T\hat\sigma^2)^2 /
    \widehat{\operatorname{Var}}` with :math:`\operatorname{Var}(e^TUe) = 2
    \operatorname{tr}(UM\Sigma M U M \Sigma M)` for normal errors, :math:`\Sigma` from
    the estimates floored at zero (Satterthwaite 1946, Biometrics Bull. 2:110-114;
    Searle, Casella & McCulloch 1992, *Variance Components*, sec. 2.2d). Then
    :math:`t = \hat\theta / SE \sim t_\nu`. Returns no p-value when the estimated
    variance is not positive.
    """
    n_reviewers = noise.variances.size
    weights = np.bincount(
        noise.reviewer_of_cell, weights=cell_weights**2, minlength=n_reviewers
    ).astype(np.float64)
    if new_cell_weights is not None:
        weights = weights + new_cell_weights
    variance, degrees_of_freedom = satterthwaite_variance(noise, weights)
    if degrees_of_freedom is None:
        return NoiseAwareTest(estimate, None, None, None)
    standard_error = math.sqrt(variance)
    t_statistic = estimate / standard_error
    tail = float(stdtr(degrees_of_freedom, -t_statistic if one_sided else -abs(t_statistic)))
    return NoiseAwareTest(
        estimate=estimate,
        standard_error=standard_error,
        degrees_of_freedom=degrees_of_freedom,
        p_value=tail if one_sided else min(1.0, 2.0 * tail),
    )


def satterthwaite_variance(
    noise: ReviewerNoise, reviewer_weights: FloatArray
) -> tuple[float, float | None]:
    r"""The estimate :math:`v^T\hat\sigma^2` of :math:`v^T\sigma^2` and its Satterthwaite df.

    See :func:`noise_aware_t_test`; df is ``None`` when the estimate is not positive.
    """
    variance = float(reviewer_weights @ noise.variances)
    if not variance > 0.0:
        return variance, None
    cell_form = (noise.inverse_expectation.T @ reviewer_weights)[noise.reviewer_of_cell]
    weighted = cell_form[:, None] * noise.residual_covariance
    variance_of_variance = 2.0 * float(np.sum(weighted * weighted.T))
    if not variance_of_variance > 0.0:
        return variance, None
    return variance, 2.0 * variance**2 / variance_of_variance


def satterthwaite_t_batch(
    estimates: FloatArray,
    variances: FloatArray,
    cell_forms: FloatArray,
    residual_covariance: FloatArray,
    one_sided: NDArray[np.bool_] | np.bool_,
) -> tuple[NDArray[np.bool_], FloatArray, FloatArray, FloatArray]:
    r"""Student t tails of k estimates at once, each with its Satterthwaite df.

    Estimate j has variance estimate :math:`\hat V_j = v_j^T\hat\sigma^2` (``variances``)
    and per-cell form :math:`f_j` (column j of ``cell_forms``); with :math:`S = C \circ C^T`
    for the residual covariance :math:`C`, :math:`\widehat{Var}(\hat V_j) = 2 f_j^T S f_j`
    and :math:`\nu_j = 2\hat V_j^2 / \widehat{Var}(\hat V_j)` (Satterthwaite 1946,
    Biometrics Bull. 2:110-114). Returns (testable, df, standard errors, lower tails):
    a test is testable when both variances are positive; its tail is
    :math:`F_{t,\nu}(-t)` one-sided, :math:`F_{t,\nu}(-|t|)` two-sided (``one_sided``
    per test or for all). Untestable entries hold placeholders, never read.
    """
    covariance = residual_covariance
    variance_of_variances = 2.0 * np.sum(cell_forms * ((covariance * covariance.T) @ cell_forms), 0)
    testable = (variances > 0.0) & (variance_of_variances > 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        degrees = 2.0 * variances**2 / variance_of_variances
        errors = np.sqrt(np.where(testable, variances, 1.0))
        t_statistics = estimates / errors
        tails = stdtr(
            np.where(testable, degrees, 1.0),
            np.where(one_sided, -t_statistics, -np.abs(t_statistics)),
        )
    return testable, degrees, errors, tails


def noise_aware_t_tests(
    noise: ReviewerNoise,
    estimates: FloatArray,
    cell_weights: FloatArray,
    *,
    new_cell_weights: FloatArray | None = None,
    one_sided: bool,
) -> list[NoiseAwareTest]:
    r""":func:`noise_aware_t_test` for k estimates of one fit at once (same formulas).

    ``cell_weights`` is cells x k (column j: the :math:`w` of estimate j),
    ``new_cell_weights`` reviewers x k. With :math:`S = C \circ C^T` for the residual
    covariance :math:`C = M\hat\Sigma M`, the Satterthwaite variance of estimate j is
    :math:`2 f_j^T S f_j` with :math:`f_j` its per-cell form, which equals the scalar
    function's :math:`2\sum (f_j C) \circ (f_j C)^T` (the sum regrouped).
    """
    n_reviewers = noise.variances.size
    n_tests = estimates.size
    cells_by_test = noise.reviewer_of_cell[:, None] * n_tests + np.arange(n_tests)
    weights = np.asarray(
        np.bincount(
            cells_by_test.ravel(),
            weights=(cell_weights**2).ravel(),
            minlength=n_reviewers * n_tests,
        ).reshape(n_reviewers, n_tests),
        dtype=np.float64,
    )
    if new_cell_weights is not None:
        weights = weights + new_cell_weights
    variances = noise.variances @ weights
    cell_forms = (noise.inverse_expectation.T @ weights)[noise.reviewer_of_cell]
    batch = satterthwaite_t_batch(
        estimates, variances, cell_forms, noise.residual_covariance, np.bool_(one_sided)
    )
    testable, degrees, errors, tails = batch
    tests: list[NoiseAwareTest] = []
    for index in range(n_tests):
        estimate = float(estimates[index])
        if not testable[index]:
            tests.append(NoiseAwareTest(estimate, None, None, None))
            continue
        tail = float(tails[index])
        tests.append(
            NoiseAwareTest(
                estimate=estimate,
                standard_error=float(errors[index]),
                degrees_of_freedom=float(degrees[index]),
                p_value=tail if one_sided else min(1.0, 2.0 * tail),
            )
        )
    return tests
