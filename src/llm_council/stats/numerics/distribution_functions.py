"""Student t, normal, F, chi-squared and binomial tails without importing ``scipy``.

``scipy.stats`` costs about a second of CPU to import (hundreds of distribution classes and
their docstrings) and ``scipy.special`` about 0.27 s, more than the audit of one session
costs to compute; the session and the report need only a few tail probabilities and
quantiles. ``scipy.stats`` computes them from ``scipy.special`` functions (``t._sf(x, df) =
stdtr(df, -x)``, ``t._ppf(q, df) = stdtrit(df, q)``, ``norm._ppf(q) = ndtri(q)``,
``f._sf(x, a, b) = fdtrc(a, b, x)``, ``chi2._sf(x, df) = chdtrc(df, x)`` in
``scipy/stats/_continuous_distns.py``); here the same formulas call the numpy versions of
those functions in :mod:`llm_council.stats.numerics.special_functions` (ADR 0063), which agree with
mpmath to 1e-12 relative and with ``scipy.stats`` to 5e-12 (scipy's own error is up to
3e-11 in places); ``tests/stats/numerics/test_distribution_functions.py`` compares them with
``scipy.stats``. Invalid parameters (df <= 0 or NaN) give NaN, as ``scipy.stats`` does.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.numerics.special_functions import bdtrc, chdtrc, fdtrc, ndtri, stdtr, stdtrit


def _valid_df(*dfs: ArrayLike) -> np.ndarray:
    valid = np.asarray(True)
    for df in dfs:
        values = np.asarray(df, dtype=float)
        valid = valid & (values > 0)  # False for NaN too
    return valid


def t_sf(x: ArrayLike, df: ArrayLike) -> np.ndarray:
    """Upper tail :math:`P(T_{df} > x)` of Student's t (``scipy.stats.t.sf``).

    Parameters
    ----------
    x : array_like
        Values of the statistic, any shape.
    df : array_like
        Degrees of freedom, broadcast against ``x``.

    Returns
    -------
    ndarray
        Upper-tail probabilities, of the broadcast shape of ``x`` and ``df``.
    """
    x_values, df_values = np.asarray(x, dtype=float), np.asarray(df, dtype=float)
    return np.asarray(np.where(_valid_df(df_values), stdtr(df_values, -x_values), np.nan))


def t_two_sided_p(t: ArrayLike, df: ArrayLike) -> np.ndarray:
    """Two-sided p-value :math:`2 P(T_{df} > |t|)` (``2 * scipy.stats.t.sf(abs(t), df)``).

    Parameters
    ----------
    t : array_like
        t statistics, any shape.
    df : array_like
        Degrees of freedom, broadcast against ``t``.

    Returns
    -------
    ndarray
        Two-sided p-values, of the broadcast shape of ``t`` and ``df``.
    """
    return 2 * t_sf(np.abs(np.asarray(t, dtype=float)), df)


def t_ppf(q: ArrayLike, df: ArrayLike) -> np.ndarray:
    """Quantile :math:`t_{df, q}` of Student's t (``scipy.stats.t.ppf``); NaN outside [0, 1].

    Parameters
    ----------
    q : array_like
        Probabilities, any shape.
    df : array_like
        Degrees of freedom, broadcast against ``q``.

    Returns
    -------
    ndarray
        The quantiles, of the broadcast shape of ``q`` and ``df``.
    """
    q_values, df_values = np.asarray(q, dtype=float), np.asarray(df, dtype=float)
    valid = _valid_df(df_values) & (q_values >= 0) & (q_values <= 1)
    # the end points as scipy.stats sets them (``stdtrit(df, 0)`` itself returns +inf)
    quantile = np.where(q_values == 0, -np.inf, np.where(q_values == 1, np.inf, 0.0))
    inner = valid & (q_values > 0) & (q_values < 1)
    quantile = np.where(inner, stdtrit(df_values, q_values), quantile)
    return np.asarray(np.where(valid, quantile, np.nan))


def normal_ppf(q: ArrayLike) -> np.ndarray:
    """Standard normal quantile :math:`\\Phi^{-1}(q)` (``scipy.stats.norm.ppf``)."""
    q_values = np.asarray(q, dtype=float)
    return np.asarray(np.where((q_values >= 0) & (q_values <= 1), ndtri(q_values), np.nan))


def f_sf(x: ArrayLike, dfn: ArrayLike, dfd: ArrayLike) -> np.ndarray:
    """Upper tail :math:`P(F_{dfn, dfd} > x)` (``scipy.stats.f.sf``; 1 for x <= 0)."""
    x_values = np.asarray(x, dtype=float)
    dfn_values, dfd_values = np.asarray(dfn, dtype=float), np.asarray(dfd, dtype=float)
    valid = _valid_df(dfn_values, dfd_values) & ~np.isnan(x_values)
    tail = np.where(x_values > 0, fdtrc(dfn_values, dfd_values, np.maximum(x_values, 0.0)), 1.0)
    return np.asarray(np.where(valid, tail, np.nan))


def chi2_sf(x: ArrayLike, df: ArrayLike) -> np.ndarray:
    """Upper tail :math:`P(\\chi^2_{df} > x)` (``scipy.stats.chi2.sf``; 1 for x <= 0).

    ``df = inf`` with ``x = inf`` gives NaN where ``scipy.stats`` gives 0.
    """
    x_values, df_values = np.asarray(x, dtype=float), np.asarray(df, dtype=float)
    valid = _valid_df(df_values) & ~np.isnan(x_values)
    tail = np.where(x_values > 0, chdtrc(df_values, np.maximum(x_values, 0.0)), 1.0)
    return np.asarray(np.where(valid, tail, np.nan))


def binomial_greater_p(successes: int, n: int, p: float) -> float:
    """One-sided exact binomial p-value :math:`P(X \\ge k)`, :math:`X \\sim B(n, p)`.

    ``scipy.stats.binomtest(k, n, p, alternative="greater").pvalue``, which is
    ``binom.sf(k - 1, n, p)``; here the regularized incomplete beta function
    :math:`I_p(k, n - k + 1)` through :func:`~llm_council.stats.numerics.special_functions.bdtrc`
    (numpy; once k or n - k passes 5,000 its incomplete beta is scipy's). scipy's ``binom.sf`` uses
    Boost's incomplete beta; the two agree to 1e-9 relative (tested up to n = 40,000), far
    inside what a reported p-value needs.

    Parameters
    ----------
    successes : int
        Observed count k.
    n : int
        Number of trials.
    p : float
        Success probability under the null.

    Returns
    -------
    float
        P(X >= k) for X ~ Binomial(n, p).
    """
    if n < 0 or successes < 0 or successes > n or not 0.0 <= p <= 1.0:
        raise ValueError(f"need 0 <= successes <= n and 0 <= p <= 1, got {successes}, {n}, {p}")
    if successes == 0:
        return 1.0
    return min(1.0, float(bdtrc(successes - 1, n, p)))
