"""Chance-corrected agreement between two raters over nominal categories."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class KappaResult:
    """Cohen's kappa with its large-sample standard error and a normal interval.

    ``kappa`` is ``nan`` when chance agreement is 1 (both raters used one and the same
    category for every item): agreement beyond chance is then undefined, not perfect.
    """

    kappa: float
    standard_error: float
    ci_low: float
    ci_high: float
    observed_agreement: float
    expected_agreement: float
    n: int


def agreement_table(
    rater_1: Sequence[Hashable], rater_2: Sequence[Hashable], categories: Sequence[Hashable]
) -> NDArray[np.int64]:
    """Counts ``table[i, j]`` of items rater 1 put in ``categories[i]`` and rater 2 in ``[j]``.

    Parameters
    ----------
    rater_1, rater_2 : sequence of hashable, length n
        The two raters' labels of the same n items.
    categories : sequence of hashable, length k
        The categories, in table order.

    Returns
    -------
    ndarray of int, shape (k, k)
        The agreement table.
    """
    if len(rater_1) != len(rater_2):
        raise ValueError(
            f"raters rated different numbers of items: {len(rater_1)} vs {len(rater_2)}"
        )
    index = {category: i for i, category in enumerate(categories)}
    table = np.zeros((len(categories), len(categories)), dtype=np.int64)
    for first, second in zip(rater_1, rater_2, strict=True):
        if first not in index or second not in index:
            unknown = first if first not in index else second
            raise ValueError(f"category {unknown!r} is not one of {list(categories)!r}")
        table[index[first], index[second]] += 1
    return table


def cohen_kappa_from_table(
    table: NDArray[np.int64] | Sequence[Sequence[int]], confidence: float = 0.95
) -> KappaResult:
    """Cohen's kappa of a square agreement table, with the Fleiss-Cohen-Everitt standard error.

    .. math::

        \\kappa = \\frac{p_o - p_e}{1 - p_e},\\quad p_o = \\sum_i p_{ii},\\quad
        p_e = \\sum_i p_{i\\cdot} p_{\\cdot i}

    Large-sample variance (not assuming kappa = 0), used for the interval:

    .. math::

        \\mathrm{Var}(\\hat\\kappa) = \\frac{
        \\sum_i p_{ii}[1-(p_{i\\cdot}+p_{\\cdot i})(1-\\kappa)]^2
        + (1-\\kappa)^2 \\sum_{i\\ne j} p_{ij}(p_{\\cdot i}+p_{j\\cdot})^2
        - [\\kappa - p_e(1-\\kappa)]^2}{n(1-p_e)^2}

    Parameters
    ----------
    table : array_like of int, shape (k, k)
        Counts; [i, j] is items rater 1 put in category i and rater 2 in j.
    confidence : float
        Interval level.

    Returns
    -------
    KappaResult
        ``kappa``, ``standard_error``, ``ci_low``, ``ci_high``, the observed and expected
        agreement, and ``n``.

    References
    ----------
    Cohen, J. (1960). A coefficient of agreement for nominal scales. Educational and
    Psychological Measurement 20, 37-46. Fleiss, J. L., Cohen, J. & Everitt, B. S. (1969).
    Large sample standard errors of kappa and weighted kappa. Psychological Bulletin 72,
    323-327 (also Fleiss, Levin & Paik, *Statistical Methods for Rates and Proportions*,
    3rd ed., 2003, eq. 18.13).
    """
    counts = np.asarray(table, dtype=float)
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1]:
        raise ValueError(f"agreement table must be square, got shape {counts.shape}")
    if (counts < 0).any():
        raise ValueError("agreement table has negative counts")
    n = int(round(counts.sum()))
    if n == 0:
        nan = math.nan
        return KappaResult(nan, nan, nan, nan, nan, nan, 0)
    p = counts / n
    rows = p.sum(axis=1)
    cols = p.sum(axis=0)
    p_o = float(np.trace(p))
    p_e = float(rows @ cols)
    if math.isclose(p_e, 1.0):
        return KappaResult(math.nan, math.nan, math.nan, math.nan, p_o, p_e, n)
    kappa = (p_o - p_e) / (1.0 - p_e)
    diagonal = np.diag(p)
    diagonal_term = float(np.sum(diagonal * (1.0 - (rows + cols) * (1.0 - kappa)) ** 2))
    # off-diagonal cell (i, j) is weighted by (p_.i + p_j.)^2
    weights = (cols[:, None] + rows[None, :]) ** 2
    off_diagonal = p * weights
    np.fill_diagonal(off_diagonal, 0.0)
    off_term = (1.0 - kappa) ** 2 * float(off_diagonal.sum())
    correction = (kappa - p_e * (1.0 - kappa)) ** 2
    variance = max(diagonal_term + off_term - correction, 0.0) / (n * (1.0 - p_e) ** 2)
    return _with_interval(kappa, math.sqrt(variance), p_o, p_e, n, confidence)


def _with_interval(
    kappa: float, standard_error: float, p_o: float, p_e: float, n: int, confidence: float
) -> KappaResult:
    """The result with its normal interval, clipped to [-1, 1]."""
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    return KappaResult(
        kappa=kappa,
        standard_error=standard_error,
        ci_low=max(-1.0, kappa - z * standard_error),
        ci_high=min(1.0, kappa + z * standard_error),
        observed_agreement=p_o,
        expected_agreement=p_e,
        n=n,
    )


def cohen_kappa(
    rater_1: Sequence[Hashable],
    rater_2: Sequence[Hashable],
    categories: Sequence[Hashable],
    confidence: float = 0.95,
) -> KappaResult:
    """Cohen's kappa of two raters' labels for the same items.

    See :func:`cohen_kappa_from_table` for the formula and its references.

    Parameters
    ----------
    rater_1, rater_2 : sequence of hashable, length n
        The two raters' labels of the same n items.
    categories : sequence of hashable, length k
        The categories.
    confidence : float
        Interval level.

    Returns
    -------
    KappaResult
        ``kappa``, ``standard_error``, ``ci_low``, ``ci_high``, the observed and expected
        agreement, and ``n``.
    """
    return cohen_kappa_from_table(agreement_table(rater_1, rater_2, categories), confidence)


#: Landis & Koch (1977) bands: (upper bound inclusive, word)
_LANDIS_KOCH_BANDS: tuple[tuple[float, str], ...] = (
    (0.0, "poor"),
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
    (1.0, "almost perfect"),
)


def landis_koch_label(kappa: float) -> str:
    """The Landis-Koch word for a kappa value.

    < 0 poor, 0-0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial,
    0.81-1 almost perfect. Landis, J. R. & Koch, G. G. (1977). The measurement of observer
    agreement for categorical data. Biometrics 33, 159-174 (Table, p. 165).
    Returns ``"undefined"`` for nan.

    Parameters
    ----------
    kappa : float
        A kappa value.

    Returns
    -------
    str
        One of the six Landis-Koch words, or ``"undefined"``.
    """
    if math.isnan(kappa):
        return "undefined"
    if kappa < 0.0:
        return "poor"
    for upper, word in _LANDIS_KOCH_BANDS[1:]:
        if kappa <= upper:
            return word
    return "almost perfect"


@dataclass(frozen=True)
class PairedDifference:
    """``statistic(first) - statistic(second)`` on the same items, with a bootstrap interval."""

    difference: float
    ci_low: float
    ci_high: float
    n: int
    resamples: int


def paired_bootstrap_difference(
    statistic: Callable[[NDArray[np.int64]], float],
    first: NDArray[np.int64],
    second: NDArray[np.int64],
    *,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> PairedDifference:
    """Percentile bootstrap interval of a difference of two statistics on the SAME items.

    ``first`` and ``second`` hold one row per item (e.g. a judge's verdict code and the
    human label's code); each resample draws items with replacement and recomputes both
    statistics on the same drawn items, so the correlation between the two judges (they
    saw the same pairs) is kept, which an unpaired interval would ignore (Efron &
    Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13, percentile interval).
    Resamples where either statistic is undefined (nan) are dropped; the interval is nan
    when more than half are.

    Parameters
    ----------
    statistic : callable
        Maps an (m, 2) array of codes to a float (e.g. :func:`kappa_of_coded_pairs`).
    first, second : ndarray of int, shape (n, 2)
        The two codings of the same n items, row for row.
    confidence : float
        Interval level.
    resamples : int
        Bootstrap replicates.
    seed : int
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    PairedDifference
        ``statistic(first) - statistic(second)`` as ``difference``, its percentile interval,
        ``n`` and the resamples used.
    """
    if len(first) != len(second):
        raise ValueError(f"paired samples differ in length: {len(first)} vs {len(second)}")
    n = len(first)
    observed = statistic(first) - statistic(second)
    if n < 2:
        return PairedDifference(observed, math.nan, math.nan, n, 0)
    rng = np.random.default_rng(seed)
    differences = []
    for _ in range(resamples):
        drawn = rng.integers(0, n, size=n)
        differences.append(statistic(first[drawn]) - statistic(second[drawn]))
    finite = np.asarray([d for d in differences if not math.isnan(d)])
    if len(finite) < resamples / 2:
        return PairedDifference(observed, math.nan, math.nan, n, resamples)
    alpha = 1.0 - confidence
    low, high = np.quantile(finite, [alpha / 2.0, 1.0 - alpha / 2.0])
    return PairedDifference(observed, float(low), float(high), n, resamples)


def kappa_of_coded_pairs(codes: NDArray[np.int64], categories: int = 3) -> float:
    """Cohen's kappa of an ``(n, 2)`` array of codes (rater 1, rater 2); nan if undefined.

    Parameters
    ----------
    codes : ndarray of int, shape (n, 2)
        One row per item: rater 1's code, rater 2's code, each in ``0..categories-1``.
    categories : int
        Number of codes.

    Returns
    -------
    float
        Cohen's kappa, nan when undefined.
    """
    table = np.zeros((categories, categories), dtype=np.int64)
    np.add.at(table, (codes[:, 0], codes[:, 1]), 1)
    return cohen_kappa_from_table(table).kappa


def agreement_of_coded_pairs(codes: NDArray[np.int64]) -> float:
    """Share of rows whose two codes are equal (nan for no rows).

    Parameters
    ----------
    codes : ndarray of int, shape (n, 2)
        One row per item: rater 1's code, rater 2's code.

    Returns
    -------
    float
        The share of rows that agree.
    """
    return float(np.mean(codes[:, 0] == codes[:, 1])) if len(codes) else math.nan


def weighted_kappa_from_table(
    table: NDArray[np.int64] | Sequence[Sequence[float]],
    weights: Literal["linear", "quadratic"] = "linear",
    confidence: float = 0.95,
) -> KappaResult:
    """Cohen's weighted kappa of a square table whose categories are ordered.

    With agreement weights :math:`w_{ij} = 1 - |i-j|/(k-1)` (linear) or
    :math:`1 - (i-j)^2/(k-1)^2` (quadratic),

    .. math::

        \\kappa_w = \\frac{p_{o(w)} - p_{e(w)}}{1 - p_{e(w)}},\\quad
        p_{o(w)} = \\sum_{ij} w_{ij} p_{ij},\\quad
        p_{e(w)} = \\sum_{ij} w_{ij} p_{i\\cdot} p_{\\cdot j}

    and the large-sample variance (Fleiss, Cohen & Everitt 1969, eq. 11), with
    :math:`\\bar w_{i\\cdot} = \\sum_j p_{\\cdot j} w_{ij}`,
    :math:`\\bar w_{\\cdot j} = \\sum_i p_{i\\cdot} w_{ij}`:

    .. math::

        \\mathrm{Var}(\\hat\\kappa_w) = \\frac{\\sum_{ij} p_{ij}[w_{ij} -
        (\\bar w_{i\\cdot} + \\bar w_{\\cdot j})(1 - \\kappa_w)]^2
        - [\\kappa_w - p_{e(w)}(1 - \\kappa_w)]^2}{n (1 - p_{e(w)})^2}

    With identity weights (nominal) this is :func:`cohen_kappa_from_table`.

    Parameters
    ----------
    table : array_like, shape (k, k)
        Counts over ordered categories; [i, j] is items rater 1 put in i and rater 2 in j.
    weights : {"linear", "quadratic"}
        The agreement weights.
    confidence : float
        Interval level.

    Returns
    -------
    KappaResult
        ``kappa``, ``standard_error``, ``ci_low``, ``ci_high``, the weighted observed and
        expected agreement, and ``n``.

    References
    ----------
    Cohen, J. (1968). Weighted kappa. Psychological Bulletin 70, 213-220. Fleiss, J. L.,
    Cohen, J. & Everitt, B. S. (1969). Large sample standard errors of kappa and weighted
    kappa. Psychological Bulletin 72, 323-327.
    """
    counts = np.asarray(table, dtype=float)
    if counts.ndim != 2 or counts.shape[0] != counts.shape[1] or counts.shape[0] < 2:
        raise ValueError(f"agreement table must be square with 2+ categories, got {counts.shape}")
    if (counts < 0).any():
        raise ValueError("agreement table has negative counts")
    if weights not in ("linear", "quadratic"):
        raise ValueError(f"unknown weights {weights!r}: use 'linear' or 'quadratic'")
    size = counts.shape[0]
    steps = np.abs(np.subtract.outer(np.arange(size), np.arange(size))) / (size - 1)
    agreement_weights = 1.0 - (steps if weights == "linear" else steps**2)
    return _kappa_with_weights(counts, agreement_weights, confidence)


def _kappa_with_weights(
    counts: NDArray[np.float64], agreement_weights: NDArray[np.float64], confidence: float
) -> KappaResult:
    total = float(counts.sum())
    n = int(round(total))
    if n == 0:
        nan = math.nan
        return KappaResult(nan, nan, nan, nan, nan, nan, 0)
    p = counts / total
    rows = p.sum(axis=1)
    cols = p.sum(axis=0)
    p_o = float(np.sum(agreement_weights * p))
    p_e = float(rows @ agreement_weights @ cols)
    if math.isclose(p_e, 1.0):
        return KappaResult(math.nan, math.nan, math.nan, math.nan, p_o, p_e, n)
    kappa = (p_o - p_e) / (1.0 - p_e)
    row_means = agreement_weights @ cols
    col_means = rows @ agreement_weights
    spread = agreement_weights - (row_means[:, None] + col_means[None, :]) * (1.0 - kappa)
    numerator = float(np.sum(p * spread**2)) - (kappa - p_e * (1.0 - kappa)) ** 2
    standard_error = math.sqrt(max(numerator, 0.0) / (n * (1.0 - p_e) ** 2))
    return _with_interval(kappa, standard_error, p_o, p_e, n, confidence)
