"""Intervals and tests for binomial proportions (pure functions over counts)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion ``successes / n``.

    Unlike the Wald interval it stays inside [0, 1] and keeps near-nominal coverage for
    small ``n`` and proportions near 0 or 1, which is where judge flip rates live.

    .. math::

        \\frac{\\hat p + z^2/2n \\pm z\\sqrt{\\hat p(1-\\hat p)/n + z^2/4n^2}}{1 + z^2/n}

    Returns ``(nan, nan)`` when ``n == 0``: there is nothing to estimate.

    Parameters
    ----------
    successes : int
        Count of successes.
    n : int
        Count of trials.
    confidence : float
        Interval level.

    Returns
    -------
    tuple of float
        ``(low, high)``, inside [0, 1].

    References
    ----------
    Wilson, E. B. (1927). Probable inference, the law of succession, and statistical
    inference. JASA 22, 209-212. Newcombe, R. G. (1998). Two-sided confidence intervals for
    the single proportion. Statistics in Medicine 17, 857-872 (method 3).
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    if n == 0:
        return (math.nan, math.nan)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p_hat = successes / n
    denominator = 1.0 + z * z / n
    centre = (p_hat + z * z / (2.0 * n)) / denominator
    half_width = (z / denominator) * math.sqrt(p_hat * (1.0 - p_hat) / n + z * z / (4.0 * n * n))
    # clamp rounding noise at the boundaries (successes == 0 or == n)
    return (max(0.0, centre - half_width), min(1.0, centre + half_width))


def sign_test_p_value(successes: int, n: int) -> float:
    """Two-sided exact sign test of ``successes`` out of ``n`` against p = 1/2.

    Used to ask whether position flips lean to one side more than chance would.
    P = sum of Binomial(n, 1/2) probabilities no larger than that of the observed count
    (Conover, *Practical Nonparametric Statistics*, 3rd ed., 1999, section 3.4); computed
    by :func:`scipy.stats.binomtest`. Returns 1.0 when ``n == 0``.

    Parameters
    ----------
    successes : int
        Count on one side.
    n : int
        Count of non-tied items.

    Returns
    -------
    float
        The two-sided exact p-value.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return 1.0
    from scipy import stats as scipy_stats  # deferred: scipy.stats costs ~1 s to import

    return float(scipy_stats.binomtest(successes, n, 0.5, alternative="two-sided").pvalue)


def mean_t_interval(
    values: Sequence[float], confidence: float = 0.95
) -> tuple[float, float, float]:
    """Mean of ``values`` with its Student-t interval: ``(mean, low, high)``.

    Used for paired differences (a judge's score minus a baseline's on the same pairs) and
    for per-item shares (repetition stability), where each item contributes one value.

    .. math::

        \\bar d \\pm t_{n-1,\\,1-\\alpha/2}\\, s_d / \\sqrt{n}

    (the paired t interval; e.g. Agresti, *Categorical Data Analysis*, 3rd ed., 2013,
    section 11.1 for paired binary data scored 0/1, where it is the Wald interval with
    the n-1 correction). Returns nan bounds for fewer than two values; a zero standard
    deviation gives a zero-width interval, which callers report as "too few" at small n.

    Parameters
    ----------
    values : sequence of float, length n
        One value per item.
    confidence : float
        Interval level.

    Returns
    -------
    tuple of float
        ``(mean, low, high)``.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    n = len(values)
    if n == 0:
        return (math.nan, math.nan, math.nan)
    mean = math.fsum(values) / n
    if n < 2:
        return (mean, math.nan, math.nan)
    variance = math.fsum((value - mean) ** 2 for value in values) / (n - 1)
    from scipy import stats as scipy_stats  # deferred: scipy.stats costs ~1 s to import

    half_width = float(scipy_stats.t.ppf(0.5 + confidence / 2.0, n - 1)) * math.sqrt(variance / n)
    return (mean, mean - half_width, mean + half_width)
