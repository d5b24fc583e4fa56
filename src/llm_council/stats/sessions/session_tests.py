"""Per-session tests of reviewer bias on a fitted two-way additive model.

Three questions about one council session, each answered by comparing a reviewer with
the others *on the same answers* (see :mod:`llm_council.stats.design.additive_model`):

- leniency: is reviewer r harsher/more generous than the others? (t test of a contrast,
  Bonferroni across reviewers);
- position: in :mod:`llm_council.stats.slots.position_tests`;
- self-preference: does a reviewer score its own answer above what the model predicts
  for it from everybody's other scores? (prediction-error t test).

All functions are pure: arrays in, frozen dataclasses out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike

from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.design.design_cache import fit_additive_two_way_cached
from llm_council.stats.inference.effect_floors import reaches_floor
from llm_council.stats.numerics.special_functions import stdtr
from llm_council.stats.reviewers.reviewer_noise import (
    NoiseAwareTest,
    ReviewerNoise,
    estimate_reviewer_noise,
    noise_aware_t_test,
    noise_aware_t_tests,
)


@dataclass(frozen=True)
class ContrastTest:
    """An estimated contrast with its standard error, t statistic and p-values."""

    estimate: float
    standard_error: float | None
    t_statistic: float | None
    p_value: float | None
    p_value_adjusted: float | None


def _t_test(
    estimate: float,
    variance_unscaled: float,
    fit: AdditiveFit,
    *,
    one_sided: bool,
    n_comparisons: int,
) -> ContrastTest:
    """t test of one linear function of the data with variance ``s^2 * variance_unscaled``."""
    if fit.residual_variance <= 0.0 or variance_unscaled <= 0.0:
        return ContrastTest(estimate, None, None, None, None)
    standard_error = math.sqrt(fit.residual_variance * variance_unscaled)
    t_statistic = estimate / standard_error
    if one_sided:
        # stdtr(df, x) is the t CDF; the same function scipy.stats.t.sf uses, minus overhead
        p_value = float(stdtr(fit.residual_df, -t_statistic))
    else:
        p_value = float(2.0 * stdtr(fit.residual_df, -abs(t_statistic)))
    return ContrastTest(
        estimate=estimate,
        standard_error=standard_error,
        t_statistic=t_statistic,
        p_value=p_value,
        p_value_adjusted=min(1.0, p_value * n_comparisons),
    )


def _noise_aware(test: NoiseAwareTest, *, n_comparisons: int) -> ContrastTest:
    """A :class:`NoiseAwareTest` as a :class:`ContrastTest` with a Bonferroni p-value."""
    if test.p_value is None or test.standard_error is None:
        return ContrastTest(test.estimate, None, None, None, None)
    return ContrastTest(
        estimate=test.estimate,
        standard_error=test.standard_error,
        t_statistic=test.estimate / test.standard_error,
        p_value=test.p_value,
        p_value_adjusted=min(1.0, test.p_value * n_comparisons),
    )


@lru_cache(maxsize=64)
def _reviewer_contrasts(n_reviewers: int, n_parameters: int) -> np.ndarray:
    """Every reviewer's :meth:`AdditiveFit.reviewer_vs_others_contrast`, one row each
    (read-only, built once per model size)."""
    contrasts = np.zeros((n_reviewers, n_parameters))
    contrasts[:, 1:n_reviewers] = -1.0 / (n_reviewers - 1)
    contrasts[np.arange(1, n_reviewers), np.arange(1, n_reviewers)] = 1.0
    contrasts.flags.writeable = False
    return contrasts


def reviewer_offset_tests(
    fit: AdditiveFit, noise: ReviewerNoise | None = None
) -> list[ContrastTest]:
    r"""Each reviewer's leniency relative to the other reviewers, with Bonferroni p-values.

    For reviewer r the contrast :math:`L_r = \alpha_r - \frac{1}{R-1}\sum_{r'\ne r}\alpha_{r'}`
    (points above the others' average on the same answers) is estimated by
    :math:`\hat L_r = c^T \hat b` with :math:`\operatorname{Var} \hat L_r = s^2 c^T (X^TX)^{-1} c`,
    and :math:`t = \hat L_r / SE \sim t_{n-p}` under :math:`L_r = 0` (two-sided). The
    adjusted p-value is :math:`\min(1, R\,p)` (Bonferroni), so the chance that *any*
    reviewer is flagged in a session with no leniency differences is at most the
    significance level. Reference: Searle (1987), *Linear Models for Unbalanced Data*,
    sec. 5.5 (estimable functions and their t tests); Miller (1981), *Simultaneous
    Statistical Inference*, ch. 1 (Bonferroni).

    With ``noise`` (per-reviewer variances, :mod:`llm_council.stats.reviewers.reviewer_noise`)
    :math:`\operatorname{Var} \hat L_r = \sum_i w_i^2 \sigma^2_{g(i)}` with
    :math:`w = X (X^TX)^{-1} c`, estimated per reviewer, with Satterthwaite df.
    """
    if noise is not None:
        contrasts = _reviewer_contrasts(fit.n_reviewers, fit.design.shape[1])
        batch = noise_aware_t_tests(
            noise, contrasts @ fit.coefficients, noise.projection @ contrasts.T, one_sided=False
        )
        return [_noise_aware(aware, n_comparisons=fit.n_reviewers) for aware in batch]
    tests: list[ContrastTest] = []
    for reviewer_index in range(fit.n_reviewers):
        contrast = fit.reviewer_vs_others_contrast(reviewer_index)
        estimate = float(contrast @ fit.coefficients)
        variance_unscaled = float(contrast @ fit.covariance_unscaled @ contrast)
        tests.append(
            _t_test(
                estimate, variance_unscaled, fit, one_sided=False, n_comparisons=fit.n_reviewers
            )
        )
    return tests


def _cell_vectors(fit: AdditiveFit, self_cells: list[tuple[int, int, float]]) -> np.ndarray:
    """:meth:`AdditiveFit.cell_vector` of every self-review cell, one row each."""
    reviewers = np.array([r for r, _, _ in self_cells], dtype=np.intp)
    candidates = np.array([c for _, c, _ in self_cells], dtype=np.intp)
    cells = np.zeros((len(self_cells), fit.design.shape[1]))
    cells[:, 0] = 1.0
    with_reviewer = np.flatnonzero(reviewers > 0)
    cells[with_reviewer, reviewers[with_reviewer]] = 1.0
    with_candidate = np.flatnonzero(candidates > 0)
    cells[with_candidate, fit.n_reviewers - 1 + candidates[with_candidate]] = 1.0
    return cells


def self_preference_tests(
    fit: AdditiveFit,
    self_cells: list[tuple[int, int, float]],
    noise: ReviewerNoise | None = None,
    *,
    cell_rows: np.ndarray | None = None,
) -> list[ContrastTest]:
    r"""How far each reviewer's score of its own answer exceeds the model's prediction.

    ``self_cells`` holds ``(reviewer_index, candidate_index, score)`` for self-reviews,
    which were left out of ``fit``. The prediction :math:`\hat y_0 = x_0^T \hat b` uses
    the reviewer's leniency and the answer's quality as the *others* judged it, so a
    generous reviewer is not mistaken for a self-preferring one. Since :math:`y_0` is
    independent of the fit, :math:`\operatorname{Var}(y_0 - \hat y_0) = \sigma^2 (1 +
    x_0^T (X^TX)^{-1} x_0)` and :math:`t = (y_0 - \hat y_0)/SE \sim t_{n-p}`; the test is
    one-sided (self-*preference*), Bonferroni-adjusted over the self-reviews. Reference:
    Seber & Lee (2003), *Linear Regression Analysis*, 2nd ed., sec. 5.3 (prediction of a
    new observation).

    With ``noise``: :math:`\operatorname{Var}(y_0 - \hat y_0) = \sigma^2_{r_0} + \sum_i
    w_i^2 \sigma^2_{g(i)}`, :math:`w = X (X^TX)^{-1} x_0`, each variance the reviewer's own
    (:func:`~llm_council.stats.reviewers.reviewer_noise.noise_aware_t_test`): a noisy reviewer's own
    score is judged against its own noise, not the council's average noise.
    ``cell_rows``: the cells' design rows :math:`x_0` when the fit has more columns than
    reviewer and answer effects (slot effects); by default built from the indexes.

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit.
    self_cells : list of (int, int, float), length m
        ``(reviewer_index, candidate_index, score)`` of each self-review, left out of ``fit``.
    noise : ReviewerNoise, optional
        Per-reviewer variances; the pooled s^2 when None.
    cell_rows : ndarray, shape (m, p), optional
        The self-reviews' design rows.

    Returns
    -------
    list of ContrastTest, length m
        Estimate, standard error, t, one-sided p-value and its Bonferroni adjustment.
    """
    if noise is not None and self_cells:
        cells = _cell_vectors(fit, self_cells) if cell_rows is None else cell_rows
        estimates = np.array([score for _, _, score in self_cells]) - cells @ fit.coefficients
        own = np.zeros((fit.n_reviewers, len(self_cells)))
        own[[r for r, _, _ in self_cells], np.arange(len(self_cells))] = 1.0
        batch = noise_aware_t_tests(
            noise, estimates, noise.projection @ cells.T, new_cell_weights=own, one_sided=True
        )
        return [_noise_aware(aware, n_comparisons=len(self_cells)) for aware in batch]
    tests: list[ContrastTest] = []
    for index, (reviewer_index, candidate_index, score) in enumerate(self_cells):
        cell = (
            fit.cell_vector(reviewer_index, candidate_index)
            if cell_rows is None
            else cell_rows[index]
        )
        estimate = float(score - cell @ fit.coefficients)
        variance_unscaled = 1.0 + float(cell @ fit.covariance_unscaled @ cell)
        tests.append(
            _t_test(estimate, variance_unscaled, fit, one_sided=True, n_comparisons=len(self_cells))
        )
    return tests


def pooled_self_preference_test(
    fit: AdditiveFit,
    self_cells: list[tuple[int, int, float]],
    noise: ReviewerNoise | None = None,
    *,
    cell_rows: np.ndarray | None = None,
) -> ContrastTest | None:
    r"""Mean self-preference over all self-reviews of the session, one-sided t test.

    With :math:`d = y_S - X_S \hat b` the self-reviews' prediction errors,
    :math:`\operatorname{Cov}(d) = \sigma^2 (I + X_S (X^TX)^{-1} X_S^T)`, so the mean
    :math:`\bar d` has variance :math:`\sigma^2\, \mathbf 1^T (I + X_S (X^TX)^{-1}
    X_S^T) \mathbf 1 / m^2` and :math:`\bar d / SE \sim t_{n-p}`. Reference: Seber & Lee
    (2003), sec. 5.3. With ``noise``, each reviewer's own variance as in
    :func:`self_preference_tests` (weights :math:`1/m` on the self-reviews); ``cell_rows``
    as there.

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit.
    self_cells : list of (int, int, float), length m
        ``(reviewer_index, candidate_index, score)`` of each self-review, left out of ``fit``.
    noise : ReviewerNoise, optional
        Per-reviewer variances; the pooled s^2 when None.
    cell_rows : ndarray, shape (m, p), optional
        The self-reviews' design rows.

    Returns
    -------
    ContrastTest or None
        Estimate, standard error, t, one-sided p-value; None when m = 0.
    """
    if not self_cells:
        return None
    cells = _cell_vectors(fit, self_cells) if cell_rows is None else cell_rows
    scores = np.array([score for _, _, score in self_cells])
    errors = scores - cells @ fit.coefficients
    if noise is not None:
        share = 1.0 / len(self_cells)
        own = np.asarray(
            np.bincount([r for r, _, _ in self_cells], minlength=fit.n_reviewers) * share**2,
            dtype=np.float64,
        )
        fitted_weights = noise.projection @ (cells.sum(axis=0) * share)
        aware = noise_aware_t_test(
            noise, float(errors.mean()), fitted_weights, new_cell_weights=own, one_sided=True
        )
        return _noise_aware(aware, n_comparisons=1)
    ones = np.ones(len(self_cells))
    covariance = np.eye(len(self_cells)) + cells @ fit.covariance_unscaled @ cells.T
    variance_unscaled = float(ones @ covariance @ ones) / len(self_cells) ** 2
    return _t_test(float(errors.mean()), variance_unscaled, fit, one_sided=True, n_comparisons=1)


def median_reference_offsets(fit: AdditiveFit) -> np.ndarray:
    r"""Each reviewer's effect minus the median reviewer effect, in points.

    .. math:: o_r = \hat\alpha_r - \operatorname{median}_{r'} \hat\alpha_{r'}

    The reviewer effects :math:`\hat\alpha` of the additive model are identified up to a
    common constant, which the difference removes. The median's breakdown point is 50%
    (Hampel 1974, JASA 69:383-393): fewer than half of the reviewers, however harsh,
    cannot move the reference, so one harsh reviewer does not make the rest look
    generous as it does against the others' mean (:func:`reviewer_offset_tests`, whose
    contrast for a neutral reviewer absorbs :math:`-\delta/(R-1)` of a harsh one's
    :math:`\delta`). An estimate, not a test: flags come from
    :func:`step_down_reviewer_offsets`.

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit, R reviewers.

    Returns
    -------
    ndarray, shape (R,)
        The offsets, in points.
    """
    effects = np.concatenate([[0.0], fit.coefficients[1 : fit.n_reviewers]])
    # numpy.median's value (middle element, or the mean of the two middle ones) from a
    # sort, without its per-call machinery
    ordered = np.sort(effects)
    middle = ordered.size // 2
    median = ordered[middle] if ordered.size % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return effects - float(median)


@dataclass(frozen=True)
class ReviewerOffsetVerdict:
    """One reviewer's offset as last tested by :func:`step_down_reviewer_offsets`."""

    reviewer_index: int
    estimate: float
    p_value_adjusted: float | None
    flagged: bool


def step_down_reviewer_offsets(
    scores: ArrayLike,
    *,
    significance_level: float,
    effect_floor: float,
    first_fit: AdditiveFit | None = None,
    minimum_residual_df: int = 1,
    per_reviewer_noise: bool = False,
    first_noise: ReviewerNoise | None = None,
    first_tests: list[ContrastTest] | None = None,
) -> list[ReviewerOffsetVerdict]:
    r"""Flag harsh/generous reviewers one at a time, removing each before re-testing.

    ``scores`` is the R x C table (NaN = no usable score, self-reviews excluded). Each
    step fits the additive model to the remaining reviewers, runs
    :func:`reviewer_offset_tests` with a Holm factor (the number of reviewers still in),
    and flags the reviewer with the smallest adjusted p-value among those whose
    :math:`|\hat L_r| \ge` ``effect_floor``, if that p-value is below
    ``significance_level``; the flagged reviewer is removed so it no longer drags the
    others' reference point (one harsh reviewer would otherwise make the rest look
    generous). It stops at the first non-significant step, with fewer than 3
    reviewers, or when a fit has fewer than ``minimum_residual_df`` residual degrees of
    freedom (its t tests would not keep their level; those reviewers get no p-value).
    ``first_fit``, when given, must be the fit of ``scores`` itself (it saves refitting).
    With no offsets at all a flag needs the first step to reject, so the
    family-wise false-positive rate is at most ``significance_level``. Reference: Holm
    (1979), Scand. J. Statist. 6:65-70; Rosner (1983), Technometrics 25:165-172
    (sequential outlier removal). ``per_reviewer_noise``: each fit's tests use
    per-reviewer variances (:func:`reviewer_offset_tests` with ``noise``);
    ``first_noise``, when given, must be :func:`estimate_reviewer_noise` of ``first_fit``;
    ``first_tests``, when given, must be :func:`reviewer_offset_tests` of ``first_fit`` and
    that noise (e.g. from
    :func:`~llm_council.stats.sessions.session_test_batch.session_noise_aware_tests`).

    Parameters
    ----------
    scores : array_like, shape (R, C)
        Reviewers x candidates, NaN for no usable score, self-reviews excluded.
    significance_level : float
        Family-wise level.
    effect_floor : float
        Smallest absolute offset, in points, that may be flagged.
    first_fit : AdditiveFit, optional
        The fit of ``scores`` itself.
    minimum_residual_df : int
        Fewest residual df a step's fit needs for its tests.
    per_reviewer_noise : bool
        Test with per-reviewer variances.
    first_noise : ReviewerNoise, optional
        Per-reviewer noise of ``first_fit``.
    first_tests : list of ContrastTest, optional
        The offset tests of ``first_fit`` and that noise.

    Returns
    -------
    list of ReviewerOffsetVerdict, length R
        Each reviewer's offset estimate as last tested, its Holm-adjusted p-value (None when
        not tested) and ``flagged``.
    """
    table = np.asarray(scores, dtype=float)
    remaining = list(range(table.shape[0]))
    verdicts: dict[int, ReviewerOffsetVerdict] = {}
    while len(remaining) >= 3:
        reuse = first_fit is not None and len(remaining) == table.shape[0]
        step = _step_offset_tests(
            table[remaining],
            per_reviewer_noise=per_reviewer_noise,
            first=(first_fit, first_noise, first_tests) if reuse else None,
        )
        if step is None:
            break
        fit, noise, tests = step
        testable = fit.residual_df >= minimum_residual_df and (
            noise is not None or not per_reviewer_noise
        )
        for local, test in enumerate(tests):
            verdicts[remaining[local]] = ReviewerOffsetVerdict(
                remaining[local],
                test.estimate,
                test.p_value_adjusted if testable else None,
                flagged=False,
            )
        if not testable:
            break
        eligible = [
            (test.p_value_adjusted, local)
            for local, test in enumerate(tests)
            if test.p_value_adjusted is not None and reaches_floor(abs(test.estimate), effect_floor)
        ]
        if not eligible:
            break
        p_value, local = min(eligible)
        if p_value >= significance_level:
            break
        index = remaining.pop(local)
        verdicts[index] = ReviewerOffsetVerdict(index, tests[local].estimate, p_value, flagged=True)
    return [verdicts[index] for index in sorted(verdicts)]


def _step_offset_tests(
    sub_table: np.ndarray,
    *,
    per_reviewer_noise: bool,
    first: tuple[AdditiveFit | None, ReviewerNoise | None, list[ContrastTest] | None] | None,
) -> tuple[AdditiveFit, ReviewerNoise | None, list[ContrastTest]] | None:
    """One step of :func:`step_down_reviewer_offsets`: the remaining reviewers' fit and tests.

    ``first`` is the caller's precomputed (fit, noise, tests) of the whole table, reused
    when every reviewer is still in; None when the step must fit ``sub_table`` itself.
    """
    if first is not None:
        fit, first_noise, first_tests = first
    else:
        fit = fit_additive_two_way_cached(sub_table[:, ~np.all(np.isnan(sub_table), axis=0)])
        first_noise = first_tests = None
    if fit is None:
        return None
    noise = None
    if per_reviewer_noise:
        noise = first_noise if first_noise is not None else estimate_reviewer_noise(fit)
    tests = first_tests if first_tests is not None else reviewer_offset_tests(fit, noise)
    return fit, noise, tests
