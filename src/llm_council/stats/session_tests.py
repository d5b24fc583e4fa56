"""Per-session tests of reviewer bias on a fitted two-way additive model.

Three questions about one council session, each answered by comparing a reviewer with
the others *on the same answers* (see :mod:`llm_council.stats.additive_model`):

- leniency: is reviewer r harsher/more generous than the others? (t test of a contrast,
  Bonferroni across reviewers);
- position: do the residuals depend on the display slot each reviewer saw? (randomization
  test that re-draws each reviewer's own display order);
- self-preference: does a reviewer score its own answer above what the model predicts
  for it from everybody's other scores? (prediction-error t test).

All functions are pure: arrays in, frozen dataclasses out.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import stdtr

from llm_council.stats.additive_model import AdditiveFit, design_rank, fit_additive_two_way


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


def reviewer_offset_tests(fit: AdditiveFit) -> list[ContrastTest]:
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
    """
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


def self_preference_tests(
    fit: AdditiveFit, self_cells: list[tuple[int, int, float]]
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
    """
    tests: list[ContrastTest] = []
    for reviewer_index, candidate_index, score in self_cells:
        cell = fit.cell_vector(reviewer_index, candidate_index)
        estimate = float(score - cell @ fit.coefficients)
        variance_unscaled = 1.0 + float(cell @ fit.covariance_unscaled @ cell)
        tests.append(
            _t_test(estimate, variance_unscaled, fit, one_sided=True, n_comparisons=len(self_cells))
        )
    return tests


def pooled_self_preference_test(
    fit: AdditiveFit, self_cells: list[tuple[int, int, float]]
) -> ContrastTest | None:
    r"""Mean self-preference over all self-reviews of the session, one-sided t test.

    With :math:`d = y_S - X_S \hat b` the self-reviews' prediction errors,
    :math:`\operatorname{Cov}(d) = \sigma^2 (I + X_S (X^TX)^{-1} X_S^T)`, so the mean
    :math:`\bar d` has variance :math:`\sigma^2\, \mathbf 1^T (I + X_S (X^TX)^{-1}
    X_S^T) \mathbf 1 / m^2` and :math:`\bar d / SE \sim t_{n-p}`. Reference: Seber & Lee
    (2003), sec. 5.3.
    """
    if not self_cells:
        return None
    cells = np.array([fit.cell_vector(r, c) for r, c, _ in self_cells])
    scores = np.array([score for _, _, score in self_cells])
    errors = scores - cells @ fit.coefficients
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
    """
    effects = np.concatenate([[0.0], fit.coefficients[1 : fit.n_reviewers]])
    return effects - float(np.median(effects))


@dataclass(frozen=True)
class PositionTest:
    """Between-slot variance of residuals, its randomization p-value, and slot means."""

    between_position_variance: float
    p_value: float
    n_permutations: int
    slot_means: dict[int, float]
    slot_counts: dict[int, int]


def _between_position_variance(
    slot_sums: np.ndarray, slot_counts: np.ndarray, total: float, n_cells: int
) -> np.ndarray:
    """:math:`\\frac1N \\sum_k n_k (\\bar e_k - \\bar e)^2` from slot sums (vectorized)."""
    return (np.sum(slot_sums**2 / slot_counts, axis=-1) - total**2 / n_cells) / n_cells


#: groups up to this size draw from all their n! orderings, precomputed once
_ENUMERATED_GROUP_SIZE = 6


@lru_cache(maxsize=_ENUMERATED_GROUP_SIZE)
def _all_orderings(size: int) -> np.ndarray:
    return np.array(list(itertools.permutations(range(size))), dtype=np.intp)


def _permuted_slot_sums(
    codes: np.ndarray,
    values: np.ndarray,
    groups: np.ndarray,
    n_slots: int,
    n_draws: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Slot sums of the residuals under ``n_draws`` re-orderings of each group's own slots.

    Groups (reviewers) of up to :data:`_ENUMERATED_GROUP_SIZE` cells have their n!
    orderings enumerated once; a draw then picks one ordering index per group, which
    samples the same uniform distribution as shuffling at the cost of one gather.
    Larger groups are shuffled directly.
    """
    sums = np.zeros((n_draws, n_slots))
    order = np.argsort(groups, kind="stable")
    _, starts, sizes = np.unique(groups[order], return_index=True, return_counts=True)
    members_by_size: dict[int, list[np.ndarray]] = {}
    for start, size in zip(starts.tolist(), sizes.tolist(), strict=True):
        members_by_size.setdefault(size, []).append(order[start : start + size])
    for size, member_lists in members_by_size.items():
        members = np.array(member_lists)  # (groups of this size, size)
        if size <= _ENUMERATED_GROUP_SIZE:
            orderings = _all_orderings(size)  # (size!, size)
            arranged = codes[members][:, orderings]  # (G, size!, size) slot of each cell
            one_hot = arranged[..., None] == np.arange(n_slots)
            tables = np.einsum("gpnk,gn->gpk", one_hot, values[members])
            picks = rng.integers(0, orderings.shape[0], size=(members.shape[0], n_draws))
            sums += tables[np.arange(members.shape[0])[:, None], picks].sum(axis=0)
            continue
        for cells in members:
            shuffled = rng.permuted(np.broadcast_to(codes[cells], (n_draws, size)), axis=1)
            flat = (shuffled + n_slots * np.arange(n_draws)[:, None]).ravel()
            sums += np.bincount(
                flat, weights=np.tile(values[cells], n_draws), minlength=n_draws * n_slots
            ).reshape(n_draws, n_slots)
    return sums


def position_randomization_test(
    residuals: ArrayLike,
    display_indexes: ArrayLike,
    reviewer_indexes: ArrayLike,
    *,
    n_permutations: int = 999,
    seed: int = 0,
) -> PositionTest | None:
    r"""Does the residual score depend on the display slot? Randomization test.

    Statistic: the count-weighted variance of the slot means of the residuals,

    .. math:: V = \frac1N \sum_k n_k (\bar e_k - \bar e)^2

    (the one-way ANOVA between-groups sum of squares over N). Each reviewer's display
    order was drawn uniformly at random and independently of the answers, so under "no
    position effect" every re-shuffle of a reviewer's slots among its own scored cells
    is equally likely. The p-value :math:`(1 + \#\{V_b \ge V\}) / (B + 1)` over B such
    re-shuffles is therefore valid at any sample size (Fisher 1935, *The Design of
    Experiments*, sec. 21; Phipson & Smyth 2010, Stat. Appl. Genet. Mol. Biol. 9:39 for
    the +1). The residuals must not depend on the slots (e.g. from a model fitted
    without them), which holds for :func:`~llm_council.stats.additive_model.fit_additive_two_way`.
    """
    residual_values = np.asarray(residuals, dtype=float)
    slots = np.asarray(display_indexes, dtype=np.intp)
    groups = np.asarray(reviewer_indexes, dtype=np.intp)
    n_cells = residual_values.size
    if n_cells < 2 or slots.shape != residual_values.shape or groups.shape != slots.shape:
        return None
    slot_values, slot_codes = np.unique(slots, return_inverse=True)
    if slot_values.size < 2:
        return None
    n_slots = slot_values.size
    slot_counts = np.bincount(slot_codes, minlength=n_slots).astype(float)
    total = float(residual_values.sum())
    observed_sums = np.bincount(slot_codes, weights=residual_values, minlength=n_slots)
    observed = float(_between_position_variance(observed_sums, slot_counts, total, n_cells))

    rng = np.random.default_rng(seed)
    permuted_sums = _permuted_slot_sums(
        slot_codes, residual_values, groups, n_slots, n_permutations, rng
    )
    null_values = _between_position_variance(permuted_sums, slot_counts, total, n_cells)
    # a relative tolerance so floating-point ties with the observed value count as >=
    exceed = int(np.count_nonzero(null_values >= observed * (1 - 1e-9) - 1e-12))
    p_value = (1 + exceed) / (n_permutations + 1)
    slot_means = {
        int(slot): float(observed_sums[k] / slot_counts[k]) for k, slot in enumerate(slot_values)
    }
    slot_count_map = {int(slot): int(slot_counts[k]) for k, slot in enumerate(slot_values)}
    return PositionTest(
        between_position_variance=observed,
        p_value=p_value,
        n_permutations=n_permutations,
        slot_means=slot_means,
        slot_counts=slot_count_map,
    )


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
    freedom (its t tests would not keep their level; those reviewers get no p-value). ``first_fit``, when given, must be the fit of ``scores`` itself (it saves
    refitting). With no offsets at all a flag needs the first step to reject, so the
    family-wise false-positive rate is at most ``significance_level``. Reference: Holm
    (1979), Scand. J. Statist. 6:65-70; Rosner (1983), Technometrics 25:165-172
    (sequential outlier removal).
    """
    table = np.asarray(scores, dtype=float)
    remaining = list(range(table.shape[0]))
    verdicts: dict[int, ReviewerOffsetVerdict] = {}
    while len(remaining) >= 3:
        sub_table = table[remaining]
        sub_table = sub_table[:, ~np.all(np.isnan(sub_table), axis=0)]
        reuse = first_fit is not None and len(remaining) == table.shape[0]
        fit = first_fit if reuse else fit_additive_two_way(sub_table)
        if fit is None:
            break
        tests = reviewer_offset_tests(fit)
        testable = fit.residual_df >= minimum_residual_df
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
            if test.p_value_adjusted is not None and abs(test.estimate) >= effect_floor
        ]
        if not eligible:
            break
        p_value, local = min(eligible)
        if p_value >= significance_level:
            break
        index = remaining.pop(local)
        verdicts[index] = ReviewerOffsetVerdict(index, tests[local].estimate, p_value, flagged=True)
    return [verdicts[index] for index in sorted(verdicts)]


@dataclass(frozen=True)
class SlotEffects:
    """Display-slot effects estimated jointly with reviewer and answer effects."""

    effects: dict[int, float]
    counts: dict[int, int]
    weighted_variance: float


def slot_effects_identified(design: ArrayLike, slot_indicators: ArrayLike) -> bool:
    r"""Whether every slot contrast is estimable next to the reviewer and answer effects.

    The slot effects :math:`\gamma` of ``y = X b + Z \gamma + e`` are all estimable iff
    :math:`\operatorname{rank}[X\;Z] = \operatorname{rank} X + \operatorname{cols} Z`
    (Searle 1987, sec. 5.4: estimability), checked by SVD with
    :func:`~llm_council.stats.additive_model.design_rank`. It fails when every reviewer
    saw the same order (slot = answer) or when too few reviewers saw too few orders.
    """
    x = np.asarray(design, dtype=float)
    z = np.asarray(slot_indicators, dtype=float)
    if z.ndim != 2 or z.shape[1] == 0:
        return False
    return design_rank(np.hstack([x, z])) == design_rank(x) + z.shape[1]


def joint_slot_effects(
    design: ArrayLike,
    residuals: ArrayLike,
    display_indexes: ArrayLike,
    covariance_unscaled: ArrayLike | None = None,
) -> SlotEffects | None:
    r"""Slot effects :math:`\hat\gamma_k` of the model score = mean + reviewer + answer + slot.

    ``design`` is the additive model's X and ``residuals`` its residuals e. By
    Frisch-Waugh-Lovell, with :math:`M = I - X X^+` and slot indicators Z (first slot as
    base), :math:`\hat\gamma = (Z^T M Z)^{-1} Z^T e` (since :math:`Me = e`);
    ``covariance_unscaled`` is :math:`(X^TX)^{-1}` when the caller has it. Slot means of e
    are shrunk towards 0 because the answer and reviewer effects soak up part of a slot
    effect; :math:`\hat\gamma` is not. Returned centred (count-weighted mean 0) with the
    count-weighted variance :math:`\frac1N\sum_k n_k \hat\gamma_k^2` in points squared.
    Returns ``None`` when the slot effects are not identified
    (:func:`slot_effects_identified`): a near-singular system would give any number.
    Reference: Lovell (1963), JASA 58:993-1010; Searle (1987), ch. 6.
    """
    x = np.asarray(design, dtype=float)
    e = np.asarray(residuals, dtype=float)
    slots = np.asarray(display_indexes, dtype=np.intp)
    if e.size < 2 or x.shape[0] != e.size or slots.shape != e.shape:
        return None
    slot_values, slot_codes = np.unique(slots, return_inverse=True)
    n_slots = slot_values.size
    if n_slots < 2:
        return None
    indicators = (slot_codes[:, None] == np.arange(1, n_slots)[None, :]).astype(float)
    if not slot_effects_identified(x, indicators):
        return None
    inverse_gram = (
        np.linalg.pinv(x.T @ x) if covariance_unscaled is None else np.asarray(covariance_unscaled)
    )
    annihilator = np.eye(e.size) - x @ inverse_gram @ x.T
    gram = indicators.T @ annihilator @ indicators
    gamma = np.linalg.solve(gram, indicators.T @ e)
    counts = np.bincount(slot_codes, minlength=n_slots).astype(float)
    effects = np.concatenate([[0.0], gamma])
    effects -= (counts @ effects) / e.size
    return SlotEffects(
        effects={int(slot): float(effects[k]) for k, slot in enumerate(slot_values)},
        counts={int(slot): int(counts[k]) for k, slot in enumerate(slot_values)},
        weighted_variance=float(counts @ effects**2) / e.size,
    )
