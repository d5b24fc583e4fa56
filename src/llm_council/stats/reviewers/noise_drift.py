"""Has a reviewer's noise moved since its history? Variance-ratio (F) tests per reviewer.

The moderated tests (:mod:`llm_council.stats.reviewers.moderated_variance`) treat a reviewer's
history as its prior, :math:`\\sigma_r^2 \\sim s_{0r}^2 d_{0r} / \\chi^2_{d_{0r}}`. Under
that model the session's own residual variance is marginally a scaled F,
:math:`s_r^2 / s_{0r}^2 \\sim F(d_r, d_{0r})` (Smyth 2004, sec. 6.2), so an extreme ratio
says this session's noise is not the history's: a model update, a changed prompt. Such a
variance is an outlier of the prior, and limma's robust hyperparameter estimation flags
exactly these by the same F tail (Phipson, Lee, Majewski, Alexander & Smyth 2016,
"Robust hyperparameter estimation protects against hypervariable genes and improves
power to detect differential expression", Ann. Appl. Stat. 10(2):946-963, sec. 3).

Within one session the reviewers' residuals share the fit, so reviewer r's residual sum
of squares has expectation :math:`\\sum_{r'} A_{rr'}\\sigma_{r'}^2` (Rao 1970; see
:func:`~llm_council.stats.sessions.moderated_session_tests.reviewer_noise_expectation`), not
:math:`d_r\\sigma_r^2`: a noisy reviewer raises its neighbours' residuals. The test
therefore compares :math:`RSS_r` with its expectation under every reviewer's prior
variance, with Satterthwaite's df for the quadratic form. Pure functions: arrays in,
arrays out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from llm_council.stats.numerics.identity_memo import IdentityMemo
from llm_council.stats.numerics.special_functions import chdtr, chdtrc, fdtr_both

FloatArray = NDArray[np.float64]


def variance_ratio_p_value(
    ratio: float, numerator_df: float, denominator_df: float, *, alternative: str = "two-sided"
) -> float:
    r"""p-value of a variance ratio against :math:`F(\nu_1, \nu_2)`.

    Two-sided: :math:`p = 2\min\{F_{\nu_1,\nu_2}(x),\ 1 - F_{\nu_1,\nu_2}(x)\}`,
    capped at 1 (the equal-tails F test of two variances; Snedecor & Cochran 1989,
    Statistical Methods, 8th ed., sec. 6.12). ``alternative="greater"``: the upper tail
    :math:`1 - F_{\nu_1,\nu_2}(x)` (the numerator's variance is larger). An infinite
    denominator df is the chi-square limit :math:`\nu_1 x \sim \chi^2_{\nu_1}`. NaN when
    the ratio or a df is not usable.
    """
    if alternative not in ("two-sided", "greater"):
        raise ValueError(f"alternative must be 'two-sided' or 'greater', not {alternative!r}")
    # math's checks on the floats the callers pass (numpy's on a scalar cost a microsecond)
    usable = math.isfinite(ratio) and ratio >= 0.0 and numerator_df > 0.0 and denominator_df > 0.0
    if not usable:  # NaN df compare False, so they land here too
        return float("nan")
    if math.isinf(denominator_df):
        lower = float(chdtr(numerator_df, numerator_df * ratio))
        upper = float(chdtrc(numerator_df, numerator_df * ratio))
    else:
        lower, upper = map(float, fdtr_both(numerator_df, denominator_df, ratio))
    if alternative == "greater":
        return upper
    return min(1.0, 2.0 * min(lower, upper))


#: p-values this close (relative) count as tied: an exact tie comes out of a fit's
#: rounding up to about 1e-14 apart, in either order (ADR 0095)
TIE_TOLERANCE = 1e-9


def clearly_below(p_value: float, best: float) -> bool:
    """``p_value < best`` by more than :data:`TIE_TOLERANCE` (relative): a step-down that
    scans candidates in index order then gives a tie to the lowest index."""
    return p_value < best * (1.0 - TIE_TOLERANCE)


#: each reviewer's columns of a read-only annihilator (the same in every step of a screen,
#: and for a council's designs in every session; ADR 0075)
_REVIEWER_COLUMNS: IdentityMemo[list[FloatArray]] = IdentityMemo(16)


def _reviewer_columns(
    annihilator: FloatArray, rows: np.ndarray, n_reviewers: int
) -> list[FloatArray]:
    """``annihilator[:, rows == r]`` for each reviewer r, memoized when both arrays are
    read-only (their contents cannot change under the memo)."""

    def computed() -> list[FloatArray]:
        return [annihilator[:, rows == reviewer] for reviewer in range(n_reviewers)]

    if annihilator.flags.writeable or rows.flags.writeable:
        return computed()

    def read_only() -> list[FloatArray]:
        blocks = computed()
        for block in blocks:
            block.flags.writeable = False
        return blocks

    return _REVIEWER_COLUMNS.get((annihilator, rows), n_reviewers, read_only)


def residual_sum_of_squares_moments(
    annihilator: ArrayLike, rows: ArrayLike, variances: ArrayLike
) -> tuple[FloatArray, FloatArray]:
    r"""Each reviewer's expected residual sum of squares and its Satterthwaite df.

    With :math:`M` the fit's annihilator, :math:`C_r` its columns of reviewer r's cells and
    :math:`\Sigma = \operatorname{diag}(\sigma^2_{g(i)})`, :math:`RSS_r = \varepsilon'
    C_r C_r' \varepsilon` and, for Gaussian noise, with :math:`S_r = C_r'\Sigma C_r`,
    :math:`E\,RSS_r = \operatorname{tr} S_r` and :math:`\operatorname{Var} RSS_r = 2
    \operatorname{tr} S_r^2` (Searle 1971, Linear Models, thm. 2.3.1). Matching a scaled
    :math:`\chi^2_\nu` gives :math:`\nu_r = (\operatorname{tr} S_r)^2 / \operatorname{tr}
    S_r^2` (Satterthwaite 1946, Biometrics Bull. 2:110-114). With equal variances
    :math:`\operatorname{tr} S_r = \sigma^2 d_r`, the leverage share; a complete
    3-member council (one residual df) gives :math:`\nu_r = 1` for every reviewer. Zero
    expectation and NaN df for a reviewer with no residual information, and for every
    reviewer when a variance is not finite and positive.
    """
    annihilator_matrix = np.asarray(annihilator, dtype=float)
    row_of_cell = np.asarray(rows, dtype=np.intp)
    variance = np.asarray(variances, dtype=float)
    # the df do not depend on the variances' scale and the expectations scale with it:
    # computed on variances scaled to at most 1, so a huge one cannot overflow the squares
    scale = float(np.max(variance)) if variance.size else 1.0
    if not (math.isfinite(scale) and scale > 0.0):
        return np.zeros(variance.size), np.full(variance.size, np.nan)
    cell_variance = variance[row_of_cell] / scale
    expectations = np.zeros(variance.size)
    dfs = np.full(variance.size, np.nan)
    for reviewer, columns in enumerate(
        _reviewer_columns(annihilator_matrix, row_of_cell, variance.size)
    ):
        if columns.size == 0:
            continue
        spread = columns.T @ (cell_variance[:, None] * columns)
        trace = float(np.trace(spread))
        square = float(np.sum(spread * spread))
        expectations[reviewer] = trace * scale
        if trace > 1e-12 and square > 0.0:
            dfs[reviewer] = trace * trace / square
    return expectations, dfs


def reviewer_noise_given_others(
    annihilator: ArrayLike, rows: ArrayLike, residuals: ArrayLike, variances: ArrayLike
) -> FloatArray:
    r"""Each reviewer's session noise variance, the others' held at ``variances``.

    Within a session :math:`E\,RSS_r = \sum_{r'} A_{rr'}\sigma_{r'}^2` with
    :math:`A_{rr'} = \sum_{i \in r} \sum_{j \in r'} M_{ij}^2` (Rao 1970, J. Amer.
    Statist. Assoc. 65:161-172; :math:`M` the fit's annihilator). Solving that one
    equation for :math:`\sigma_r^2` with the other reviewers' variances known gives the
    unbiased moment estimate

    .. math:: \hat\sigma_r^2 = \Bigl(RSS_r - \sum_{r' \ne r} A_{rr'} v_{r'}\Bigr) / A_{rr}.

    :math:`RSS_r / d_r` would understate a judge gone noisy: part of its noise lands in
    its neighbours' residuals (the fit's answer effects follow it), and its neighbours'
    noise in its own. NaN for a reviewer with no residual information. May be negative
    (a moment estimate); callers bound it.
    """
    matrix = np.asarray(annihilator, dtype=float)
    row_of_cell = np.asarray(rows, dtype=np.intp)
    residual = np.asarray(residuals, dtype=float)
    variance = np.asarray(variances, dtype=float)
    squares = matrix * matrix
    # A[r, r'] = sum over r's cells i and r''s cells j of M_ij^2
    by_cell = np.zeros((matrix.shape[0], variance.size))
    for reviewer in range(variance.size):
        by_cell[:, reviewer] = squares[:, row_of_cell == reviewer].sum(axis=1)
    coefficients = np.zeros((variance.size, variance.size))
    np.add.at(coefficients, row_of_cell, by_cell)
    observed = np.bincount(row_of_cell, weights=residual**2, minlength=variance.size)
    own = np.diag(coefficients).copy()
    others = coefficients @ variance - own * variance
    estimates = np.full(variance.size, np.nan)
    usable = own > 1e-12
    estimates[usable] = (observed[usable] - others[usable]) / own[usable]
    return estimates


@dataclass(frozen=True)
class CouncilNoiseDrift:
    r"""The council-wide ratio :math:`\sum_{r \in T} RSS_r / E_0 \sum_{r \in T} RSS_r`,
    its two Satterthwaite df and its upper-tail p-value (NaN: not tested)."""

    ratio: float
    session_df: float
    history_df: float
    p_value: float


def council_noise_drift(
    annihilator: ArrayLike,
    rows: ArrayLike,
    residuals: ArrayLike,
    prior_variances: ArrayLike,
    prior_dfs: ArrayLike,
    tested: ArrayLike,
) -> CouncilNoiseDrift:
    r"""Is the ``tested`` reviewers' noise, together, larger than their histories say?

    One judge's residuals carry 1-3 df at 3-7 members, too few to see a council-wide
    rise (every judge 4/3 noisier: a new prompt or rubric); their sum carries them all.
    With :math:`C_T` the annihilator's columns of the tested reviewers' cells,
    :math:`RSS_T = \varepsilon' C_T C_T' \varepsilon` has :math:`E_0 RSS_T = \operatorname{tr}
    S_T = \sum_{r'} a_{r'} s_{0r'}^2`, :math:`S_T = C_T'\Sigma_0 C_T`, :math:`a_{r'} =
    \sum_{i \in T} \sum_{j \in r'} M_{ij}^2` (Rao's :math:`A` summed over T) and the
    session's Satterthwaite df :math:`\nu_T = (\operatorname{tr} S_T)^2 / \operatorname{tr}
    S_T^2` (as :func:`residual_sum_of_squares_moments`). The expectation is a combination of
    prior variances on :math:`d_{0r'}` df each, so its own df are Satterthwaite's,
    :math:`d_T = (\sum a_{r'} s_{0r'}^2)^2 / \sum (a_{r'} s_{0r'}^2)^2 / d_{0r'}`
    (Satterthwaite 1946). Upper tail of :math:`F(\nu_T, d_T)`: a quieter council only
    costs power (:func:`variance_ratio_p_value`).

    Parameters
    ----------
    annihilator : array_like, shape (n, n)
        The additive fit's residual-maker M over its n fitted cells.
    rows : array_like of int, shape (n,)
        The reviewer of each fitted cell.
    residuals : array_like, shape (n,)
        The fit's residuals.
    prior_variances, prior_dfs : array_like, shape (R,)
        Each reviewer's historical noise variance and its df.
    tested : array_like of bool, shape (R,)
        The reviewers whose noise is tested together.

    Returns
    -------
    CouncilNoiseDrift
        The variance ``ratio``, ``session_df``, ``history_df`` and the upper-tail
        ``p_value``; NaN throughout when nothing is tested or the variances are unusable.
    """
    matrix = np.asarray(annihilator, dtype=float)
    row_of_cell = np.asarray(rows, dtype=np.intp)
    residual = np.asarray(residuals, dtype=float)
    variance = np.asarray(prior_variances, dtype=float)
    prior_df = np.asarray(prior_dfs, dtype=float)
    chosen = np.asarray(tested, dtype=bool)
    untested = CouncilNoiseDrift(math.nan, math.nan, math.nan, math.nan)
    cells = chosen[row_of_cell]
    scale = float(np.max(variance)) if variance.size else 0.0
    if not cells.any() or not (math.isfinite(scale) and scale > 0.0):
        return untested
    columns = matrix[:, cells]
    spread = columns.T @ ((variance[row_of_cell] / scale)[:, None] * columns)
    trace = float(np.trace(spread))
    square = float(np.sum(spread * spread))
    if not (trace > 1e-12 and square > 0.0):
        return untested
    coefficients = np.bincount(
        row_of_cell, weights=np.sum(columns * columns, axis=1), minlength=variance.size
    )
    parts = coefficients * variance / scale
    finite = np.isfinite(prior_df) & (prior_df > 0.0)
    spread_of_prior = float(np.sum(parts[finite] ** 2 / prior_df[finite]))
    history_df = math.inf if spread_of_prior <= 0.0 else float(parts.sum()) ** 2 / spread_of_prior
    session_df = trace * trace / square
    ratio = float(np.sum(residual[cells] ** 2)) / (trace * scale)
    p_value = variance_ratio_p_value(ratio, session_df, history_df, alternative="greater")
    return CouncilNoiseDrift(ratio, session_df, history_df, p_value)


@dataclass(frozen=True)
class NoiseDrift:
    """Which reviewers' session noise left their prior (``moved``), and each tested one's
    ratio :math:`RSS_r / E\\,RSS_r`, its df and two-sided p-value (NaN: not tested)."""

    moved: list[int]
    ratios: FloatArray
    session_dfs: FloatArray
    p_values: FloatArray


def step_down_noise_drift(
    annihilator: ArrayLike,
    rows: ArrayLike,
    residuals: ArrayLike,
    prior_variances: ArrayLike,
    prior_dfs: ArrayLike,
    replacement_variances: ArrayLike,
    tested: ArrayLike,
    *,
    level: float,
    alternative: str = "two-sided",
) -> NoiseDrift:
    r"""Reviewers whose session noise left their prior, found one at a time.

    Each ``tested`` reviewer's :math:`F_r = RSS_r / E_0 RSS_r` (the expectation under the
    current variances, :func:`residual_sum_of_squares_moments`) is referred to
    :math:`F(\nu_r, d_{0r})`, two-sided or upper-tailed (``alternative``,
    :func:`variance_ratio_p_value`); the reviewer with
    the smallest p-value below ``level`` is marked moved (a tie, p-values within
    :data:`TIE_TOLERANCE` of each other, goes to the lowest index: integer scores make
    exact ties, which different BLAS kernels used to break differently, ADR 0095), its
    variance in the others' expectations becomes its ``replacement_variances`` entry (the
    variance the audit will use for it), and the rest are tested again, until none is below
    ``level``.
    Replacing it matters: one judge gone noisy raises its neighbours' residuals, which
    would otherwise move them too. The level is per step, not family-wise: a reviewer
    marked moved only loses its history (its tests keep their level), a missed one
    keeps a wrong variance, so erring toward marking is the safe side.

    Parameters
    ----------
    annihilator : array_like, shape (n, n)
        The additive fit's residual-maker M over its n fitted cells.
    rows : array_like of int, shape (n,)
        The reviewer of each fitted cell.
    residuals : array_like, shape (n,)
        The fit's residuals.
    prior_variances, prior_dfs : array_like, shape (R,)
        Each reviewer's historical noise variance and its df.
    replacement_variances : array_like, shape (R,)
        The variance used for a reviewer once it is marked moved.
    tested : array_like of bool, shape (R,)
        The reviewers tested.
    level : float
        Per-step significance level.
    alternative : {"two-sided", "greater"}
        Tail of the F test.

    Returns
    -------
    NoiseDrift
        ``moved`` (reviewer indices, in the order found) and per-reviewer ``ratios``,
        ``session_dfs`` and ``p_values``, each shape (R,).
    """
    matrix = np.asarray(annihilator, dtype=float)
    row_of_cell = np.asarray(rows, dtype=np.intp)
    residual = np.asarray(residuals, dtype=float)
    variances = np.array(prior_variances, dtype=float)
    prior_df = np.asarray(prior_dfs, dtype=float)
    replacement = np.asarray(replacement_variances, dtype=float)
    candidates = np.array(tested, dtype=bool)
    observed = np.bincount(row_of_cell, weights=residual**2, minlength=variances.size)
    moved: list[int] = []
    ratios = np.full(variances.size, np.nan)
    session_dfs = np.full(variances.size, np.nan)
    p_values = np.full(variances.size, np.nan)
    while True:
        expected, dfs = residual_sum_of_squares_moments(matrix, row_of_cell, variances)
        best: tuple[float, int] | None = None
        for reviewer in np.flatnonzero(candidates).tolist():
            if expected[reviewer] <= 0.0 or not np.isfinite(dfs[reviewer]):
                continue
            ratio = float(observed[reviewer] / expected[reviewer])
            p_value = variance_ratio_p_value(
                ratio, float(dfs[reviewer]), prior_df[reviewer], alternative=alternative
            )
            ratios[reviewer], session_dfs[reviewer], p_values[reviewer] = (
                ratio,
                dfs[reviewer],
                p_value,
            )
            if (
                p_value == p_value
                and p_value < level
                and (best is None or clearly_below(p_value, best[0]))
            ):
                best = (p_value, reviewer)
        if best is None:
            return NoiseDrift(moved, ratios, session_dfs, p_values)
        reviewer = best[1]
        moved.append(reviewer)
        candidates[reviewer] = False
        variances[reviewer] = replacement[reviewer]
