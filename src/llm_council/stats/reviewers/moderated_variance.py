"""Empirical-Bayes moderated variances (Smyth 2004) and t tests that use them.

A reviewer's noise variance estimated from one session rests on about one residual degree
of freedom (3-5 members, self-reviews left out), so a t test against it has almost no
power, and a test against the pooled variance fires too often when reviewers differ.
Smyth's moderated variance sits between the two: with a scaled inverse chi-square prior
:math:`\\sigma_r^2 \\sim s_0^2 d_0 / \\chi^2_{d_0}` and :math:`s_r^2 \\mid \\sigma_r^2 \\sim
\\sigma_r^2 \\chi^2_{d_r}/d_r`, the posterior mean of :math:`1/\\sigma_r^2` is
:math:`1/\\tilde s_r^2`,

.. math:: \\tilde s_r^2 = \\frac{d_0 s_0^2 + d_r s_r^2}{d_0 + d_r},

and a contrast divided by its moderated SE follows a t distribution with
:math:`d_0 + d_r` degrees of freedom. Reference: Smyth, G. K. (2004), "Linear models and
empirical Bayes methods for assessing differential expression in microarray
experiments", Statistical Applications in Genetics and Molecular Biology 3(1), art. 3,
sec. 3 (the model), 6.2 (estimating :math:`d_0, s_0^2`) and the appendix (the trigamma
inversion). The prior is either estimated by Smyth's moments when enough variances are
given, or supplied (a reviewer's own past sessions, or a documented default).
Pure functions: arrays in, arrays out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llm_council.stats.numerics.special_functions import digamma, polygamma, stdtr
from llm_council.stats.reviewers.moderated_float_path import (
    moderated_t_tests_floats,
    moderated_variances_floats,
)

FloatArray = NDArray[np.float64]


def trigamma_inverse(value: float) -> float:
    r"""The :math:`y > 0` with :math:`\psi'(y) = x`, by Smyth's Newton iteration.

    Start at :math:`y_0 = 1/2 + 1/x` and iterate on :math:`1/\psi'(y)`, which is nearly
    linear in y: :math:`y \leftarrow y + \psi'(y)(1 - \psi'(y)/x)/\psi''(y)` until the step
    is below :math:`10^{-8} y` (Smyth 2004, appendix; limma's ``trigammaInverse``). For
    large x (:math:`> 10^7`) :math:`\psi'(y) \approx 1/y^2`; for small x (:math:`< 10^{-6}`)
    :math:`\psi'(y) \approx 1/y`.
    """
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"trigamma_inverse needs a positive finite value, got {value!r}")
    if value > 1e7:
        return 1.0 / math.sqrt(value)
    if value < 1e-6:
        return 1.0 / value
    y = 0.5 + 1.0 / value
    for _ in range(50):
        trigamma = float(polygamma(1, y))
        step = trigamma * (1.0 - trigamma / value) / float(polygamma(2, y))
        y += step
        if -step / y < 1e-8:
            break
    return y


@dataclass(frozen=True)
class VariancePrior:
    """A scaled inverse chi-square prior: ``variance`` :math:`s_0^2`, ``df`` :math:`d_0`
    (``math.inf``: every variance is :math:`s_0^2`)."""

    variance: float
    df: float


def fit_variance_prior(variances: ArrayLike, dfs: ArrayLike) -> VariancePrior | None:
    r"""Smyth's method-of-moments estimate of :math:`d_0, s_0^2` from sample variances.

    With :math:`z_r = \log s_r^2`, :math:`e_r = z_r - \psi(d_r/2) + \log(d_r/2)` has mean
    :math:`\log s_0^2 - \psi(d_0/2) + \log(d_0/2)` and variance :math:`\psi'(d_0/2) +
    \psi'(d_r/2)`; so :math:`\psi'(d_0/2) = \operatorname{mean}[(e_r-\bar e)^2 G/(G-1) -
    \psi'(d_r/2)]`, solved by :func:`trigamma_inverse`, and :math:`s_0^2 = \exp(\bar e +
    \psi(d_0/2) - \log(d_0/2))` (Smyth 2004, sec. 6.2). When the right side is not
    positive the variances vary no more than sampling explains: :math:`d_0 = \infty`,
    :math:`s_0^2 = \exp \bar e`. Uses the entries with positive variance and df; returns
    ``None`` with fewer than 3 of them.

    Parameters
    ----------
    variances : array_like, shape (G,)
        Sample variances.
    dfs : array_like, shape (G,)
        Their degrees of freedom.

    Returns
    -------
    VariancePrior or None
        The prior ``variance`` s0^2 and ``df`` d0 (possibly inf); None with fewer than 3
        usable entries.
    """
    variance = np.asarray(variances, dtype=float)
    df = np.asarray(dfs, dtype=float)
    usable = np.isfinite(variance) & (variance > 0.0) & np.isfinite(df) & (df > 0.0)
    count = int(usable.sum())
    if count < 3:
        return None
    half = df[usable] / 2.0
    centred = np.log(variance[usable]) - digamma(half) + np.log(half)
    mean = float(centred.mean())
    spread = float(np.mean((centred - mean) ** 2 * count / (count - 1) - polygamma(1, half)))
    if spread <= 0.0:
        return VariancePrior(variance=math.exp(mean), df=math.inf)
    prior_df = 2.0 * trigamma_inverse(spread)
    prior_variance = math.exp(mean + float(digamma(prior_df / 2.0)) - math.log(prior_df / 2.0))
    return VariancePrior(variance=prior_variance, df=prior_df)


def moderated_variances(
    variances: ArrayLike, dfs: ArrayLike, prior_variances: ArrayLike, prior_dfs: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    r"""Moderated variances :math:`\tilde s_r^2 = (d_{0r} s_{0r}^2 + d_r s_r^2)/(d_{0r} + d_r)`
    and their df :math:`d_{0r} + d_r`.

    One prior per entry (broadcast a single prior for Smyth's common one). An entry with
    no residual information (:math:`d_r = 0`) gets its prior; an infinite prior df gives
    the prior variance exactly (Smyth 2004, eq. 3 and sec. 4).

    Parameters
    ----------
    variances, dfs : array_like, shape (G,)
        Sample variances and their df.
    prior_variances, prior_dfs : array_like, shape (G,) or broadcastable
        The prior of each entry.

    Returns
    -------
    variances : ndarray, shape (G,)
        The moderated variances.
    dfs : ndarray, shape (G,)
        Their df, prior df plus residual df.
    """
    floats = moderated_variances_floats(variances, dfs, prior_variances, prior_dfs)
    if floats is not None:  # a few entries: the same steps without numpy's overhead
        return floats
    variance = np.asarray(variances, dtype=float)
    df = np.asarray(dfs, dtype=float)
    prior_variance = np.broadcast_to(np.asarray(prior_variances, dtype=float), variance.shape)
    prior_df = np.broadcast_to(np.asarray(prior_dfs, dtype=float), variance.shape)
    own = np.where(df > 0.0, np.nan_to_num(variance) * df, 0.0)
    infinite = np.isinf(prior_df)
    with np.errstate(invalid="ignore", divide="ignore"):
        moderated = np.where(
            infinite,
            prior_variance,
            (np.where(infinite, 0.0, prior_df) * prior_variance + own)
            / (np.where(infinite, 1.0, prior_df) + df),
        )
    return moderated, prior_df + df


@dataclass(frozen=True)
class ModeratedTests:
    """k tests: estimates, standard errors, Welch-Satterthwaite df and p-values
    (NaN where the variance is not positive)."""

    estimates: FloatArray
    standard_errors: FloatArray
    dfs: FloatArray
    p_values: FloatArray


def moderated_t_tests(
    estimates: ArrayLike,
    reviewer_weights: ArrayLike,
    variances: ArrayLike,
    dfs: ArrayLike,
    *,
    one_sided: bool,
) -> ModeratedTests:
    r"""t tests of k estimates whose variances are :math:`V_j = \sum_r v_{rj} \tilde s_r^2`.

    ``reviewer_weights`` is R x k (:math:`v_{rj}`: the summed squared weights of reviewer
    r's scores in estimate j), ``variances``/``dfs`` the R moderated variances and their
    df. The df of :math:`\hat V_j` is Welch-Satterthwaite's :math:`\nu_j = \hat V_j^2 /
    \sum_r (v_{rj}\tilde s_r^2)^2/\tilde d_r` (Satterthwaite 1946, Biometrics Bull.
    2:110-114; Welch 1947, Biometrika 34:28-35), infinite when every contributing
    variance is known exactly. Two-sided :math:`2F_\nu(-|t|)` or one-sided
    :math:`F_\nu(-t)` (upper tail) p-values.
    """
    estimate = np.asarray(estimates, dtype=float)
    weights = np.asarray(reviewer_weights, dtype=float)
    variance = np.asarray(variances, dtype=float)
    df = np.asarray(dfs, dtype=float)
    floats = moderated_t_tests_floats(estimate, weights, variance, df, one_sided=one_sided)
    if floats is not None:  # a few entries: the same steps without numpy's overhead
        return ModeratedTests(estimate, *floats)
    parts = weights * variance[:, None]
    total = parts.sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.sum(np.where(parts > 0.0, parts**2 / df[:, None], 0.0), axis=0)
        test_df = np.where(spread > 0.0, total**2 / spread, np.inf)
        errors = np.where(total > 0.0, np.sqrt(total), np.nan)
        t_statistics = estimate / errors
        tails = stdtr(test_df, -t_statistics if one_sided else -np.abs(t_statistics))
    p_values = tails if one_sided else np.minimum(1.0, 2.0 * tails)
    return ModeratedTests(estimate, errors, test_df, np.where(total > 0.0, p_values, np.nan))
