"""Session-clustered estimates from per-cluster sums, so summaries of disjoint sessions merge.

The causal checks (ADR 0024, ADR 0085) keep, per session, a few sums of that session's
pairs; each function here finishes an estimate from such rows alone, in the order given
(the caller sorts them by session id), so the same rows give the same bits however they
were gathered. Each equals its pair-level counterpart in
:mod:`llm_council.bias_audit.report.analyses.causal_checks` up to rounding (tested).
"""

from __future__ import annotations

import math

import numpy as np


def clustered_mean_from_sums(
    cluster_sums: np.ndarray, cluster_counts: np.ndarray
) -> tuple[float, float]:
    """(mean, CR1 standard error) of values known by their per-cluster sums and counts.

    With :math:`S_g = \\sum_{i\\in g} v_i`, :math:`n_g` and :math:`N = \\sum n_g`:

    .. math:: \\bar v = \\frac{\\sum_g S_g}{N},\\quad
       \\widehat{V} = \\frac{G}{G-1}\\frac{1}{N^2}\\sum_g (S_g - n_g\\bar v)^2

    (Cameron & Miller 2015, "A practitioner's guide to cluster-robust inference", eq. 11
    with an intercept-only design: :math:`\\sum_{i\\in g}(v_i-\\bar v) = S_g - n_g\\bar v`).
    The standard error is NaN with fewer than two clusters.
    """
    sums = np.asarray(cluster_sums, dtype=float)
    counts = np.asarray(cluster_counts, dtype=float)
    g = sums.size
    total = float(np.sum(counts))
    mean = float(np.sum(sums)) / total
    if g < 2:
        return mean, float("nan")
    deviations = sums - counts * mean
    return mean, math.sqrt(g / (g - 1) * float(np.sum(deviations**2))) / total


def within_slope_from_sums(sxx: np.ndarray, sxy: np.ndarray) -> tuple[float, float]:
    """(slope, CR1 standard error) of the fixed-effects regression of y on x from each
    cluster's demeaned cross-products.

    With :math:`\\tilde x, \\tilde y` demeaned within cluster,
    :math:`S^{xx}_g = \\sum_{i\\in g}\\tilde x_i^2` and
    :math:`S^{xy}_g = \\sum_{i\\in g}\\tilde x_i\\tilde y_i`:
    :math:`\\hat\\beta = \\sum_g S^{xy}_g / \\sum_g S^{xx}_g`, and the cluster's score
    :math:`\\sum_{i\\in g}\\tilde x_i\\hat e_i = S^{xy}_g - \\hat\\beta S^{xx}_g`, so

    .. math:: \\widehat{V} = \\frac{G}{G-1}\\,
       \\frac{\\sum_g (S^{xy}_g - \\hat\\beta S^{xx}_g)^2}{(\\sum_g S^{xx}_g)^2}

    (Cameron & Miller 2015, sections II.C and VI.A; the within transformation is
    Frisch-Waugh-Lovell). The slope is NaN when every :math:`\\tilde x` is zero; the
    standard error is NaN with fewer than two clusters.
    """
    sxx_g = np.asarray(sxx, dtype=float)
    sxy_g = np.asarray(sxy, dtype=float)
    total_xx = float(np.sum(sxx_g))
    if total_xx == 0.0:
        return float("nan"), float("nan")
    beta = float(np.sum(sxy_g)) / total_xx
    g = sxx_g.size
    if g < 2:
        return beta, float("nan")
    scores = sxy_g - beta * sxx_g
    return beta, math.sqrt(g / (g - 1) * float(np.sum(scores**2))) / total_xx


def icc_from_moments(
    counts: np.ndarray,
    means: np.ndarray,
    within: np.ndarray,
    pair_squares: np.ndarray,
    constant: bool = False,
) -> float:
    """ICC(1,1) of paired measurements (Shrout & Fleiss 1979, one-way random, k = 2) from
    per-cluster moments of the pairs' means.

    A cluster holds :math:`n_g` pairs :math:`(a_i, b_i)` with means :math:`m_i`; it is
    given by :math:`n_g`, :math:`\\bar m_g`, :math:`W_g = \\sum_{i\\in g}(m_i-\\bar m_g)^2`
    and :math:`D_g = \\sum_{i\\in g}(a_i-b_i)^2/2`. With :math:`N = \\sum n_g` and
    :math:`\\bar m = \\sum n_g\\bar m_g / N`, the between-pair sum of squares combines as
    in Chan, Golub & LeVeque (1979), :math:`\\sum_g W_g + \\sum_g n_g(\\bar m_g-\\bar m)^2`:

    .. math:: MS_B = \\frac{2\\sum_i(m_i-\\bar m)^2}{N-1},\\quad
       MS_W = \\frac{\\sum_g D_g}{N},\\quad
       \\mathrm{ICC} = \\frac{MS_B - MS_W}{MS_B + MS_W}

    ``constant``: every :math:`m_i` is the same number (the caller knows it exactly, from
    each cluster's smallest and largest mean): the between sum is then exactly zero,
    which the combined sums could miss by a rounding error. NaN when both mean squares
    are zero or there are fewer than two pairs.
    """
    n_g = np.asarray(counts, dtype=float)
    total = float(np.sum(n_g))
    if total < 2:
        return float("nan")
    mean_g = np.asarray(means, dtype=float)
    grand = float(np.sum(n_g * mean_g)) / total
    between = (
        0.0 if constant else float(np.sum(within)) + float(np.sum(n_g * (mean_g - grand) ** 2))
    )
    ms_between = 2.0 * between / (total - 1)
    ms_within = float(np.sum(pair_squares)) / total
    denominator = ms_between + ms_within
    return (ms_between - ms_within) / denominator if denominator > 0 else float("nan")


def cluster_bootstrap_icc(
    counts: np.ndarray,
    means: np.ndarray,
    within: np.ndarray,
    pair_squares: np.ndarray,
    lowest: np.ndarray,
    highest: np.ndarray,
    *,
    n_resamples: int,
    seed: int,
) -> tuple[float, float]:
    """The 2.5 and 97.5 percentiles of :func:`icc_from_moments` over ``n_resamples``
    resamples of whole clusters (Field & Welsh 2007, cluster bootstrap), NaN when no
    resample gives a finite ICC.

    Resample ``b`` draws ``rng.integers(G, size=G)`` from ``numpy.random.default_rng(seed)``
    (one call per resample, in order): a cluster drawn ``w`` times adds its moments ``w``
    times, which is what concatenating its pairs ``w`` times gives. ``lowest``/``highest``
    (each cluster's smallest and largest pair mean) tell :func:`icc_from_moments` when a
    resample's means are all one number.
    """
    g = int(np.asarray(counts).size)
    rng = np.random.default_rng(seed)
    n_g = np.asarray(counts, dtype=float)
    mean_g = np.asarray(means, dtype=float)
    within_g = np.asarray(within, dtype=float)
    squares_g = np.asarray(pair_squares, dtype=float)
    low_g, high_g = np.asarray(lowest, dtype=float), np.asarray(highest, dtype=float)
    draws = []
    for _ in range(n_resamples):
        weight = np.bincount(rng.integers(g, size=g), minlength=g).astype(float)
        chosen = weight > 0
        value = icc_from_moments(
            weight * n_g,
            mean_g,
            weight * within_g,
            weight * squares_g,
            constant=bool(np.min(low_g[chosen]) == np.max(high_g[chosen])),
        )
        if math.isfinite(value):
            draws.append(value)
    if not draws:
        return float("nan"), float("nan")
    return float(np.percentile(draws, 2.5)), float(np.percentile(draws, 97.5))
