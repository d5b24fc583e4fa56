"""One session's leniency, self-preference and pooled self-preference t tests, as one batch.

:func:`~llm_council.stats.sessions.session_tests.reviewer_offset_tests`,
:func:`~llm_council.stats.sessions.session_tests.self_preference_tests` and
:func:`~llm_council.stats.sessions.session_tests.pooled_self_preference_test` with per-reviewer
noise
are all tests of a linear function :math:`\\hat\\theta_j = w_j^T y + a_j^T y_S` of the
scores, with variance :math:`v_j^T \\sigma^2` estimated by :math:`v_j^T \\hat\\sigma^2` and
Satterthwaite df :math:`\\nu_j = 2 (v_j^T\\hat\\sigma^2)^2 / (2 f_j^T (C \\circ C^T) f_j)`,
:math:`f_j = (A^{-T} v_j)_{g(i)}` per cell and :math:`C = M \\hat\\Sigma M`
(:func:`~llm_council.stats.reviewers.reviewer_noise.noise_aware_t_tests`; Satterthwaite 1946,
Biometrics Bull. 2:110-114; Rao 1970, JASA 65:161-172). The weights :math:`v_j` and forms
:math:`f_j` depend on the observed cells and on which cells are self-reviews only, so they
are computed once per such pattern (:class:`SessionTestDesign`, cached); a session then
costs one :math:`C \\circ C^T` product and one Student t call for all of its tests, where
the three functions above cost one each and recompute the design-only part every time.
Same formulas, so the same numbers up to rounding (the audit's golden results, 1e-12).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.reviewers.reviewer_noise import ReviewerNoise, satterthwaite_t_batch
from llm_council.stats.sessions.session_tests import ContrastTest

FloatArray = NDArray[np.float64]

#: patterns kept (one per council size and set of missing cells, as the design caches)
TEST_DESIGN_CACHE_SIZE = 256


@dataclass(frozen=True)
class SessionTestDesign:
    """The design-only part of a session's noise-aware tests (read-only arrays).

    Tests are ordered: the R reviewer offsets, then the m self-reviews, then (when
    m > 0) the pooled self-preference. ``contrasts`` (R x p) and ``self_cells`` (m x p)
    turn the coefficients into the estimates; ``reviewer_weights`` (R x k) holds each
    test's :math:`v_j`, ``cell_forms`` (cells x k) its :math:`f_j`.
    """

    contrasts: FloatArray
    self_cells: FloatArray
    reviewer_weights: FloatArray
    cell_forms: FloatArray
    one_sided: NDArray[np.bool_]


@dataclass(frozen=True)
class SessionTests:
    """The batch's results, as the three separate functions return them."""

    reviewer_offsets: list[ContrastTest]
    self_preference: list[ContrastTest]
    pooled_self_preference: ContrastTest | None


def _read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _test_design(
    fit: AdditiveFit, noise: ReviewerNoise, self_positions: tuple[tuple[int, int], ...]
) -> SessionTestDesign:
    """:class:`SessionTestDesign` of ``fit``'s observed cells and these self-review cells,
    cached by the pattern (the fit's and the noise's design-only arrays are themselves
    cached per pattern, so the key determines them)."""
    key = (
        fit.n_reviewers,
        fit.n_candidates,
        fit.rows.tobytes(),
        fit.columns.tobytes(),
        self_positions,
    )
    design = _DESIGNS.get(key)
    if design is None:
        design = _build_test_design(fit, noise, self_positions)
        if len(_DESIGNS) >= TEST_DESIGN_CACHE_SIZE:
            _DESIGNS.pop(next(iter(_DESIGNS)))  # oldest first
        _DESIGNS[key] = design
    return design


_DESIGNS: dict[tuple[int, int, bytes, bytes, tuple[tuple[int, int], ...]], SessionTestDesign] = {}


@lru_cache(maxsize=64)
def _contrasts(n_reviewers: int, n_parameters: int) -> np.ndarray:
    """Each reviewer's effect minus the mean of the others' (treatment coding), one row each."""
    contrasts = np.zeros((n_reviewers, n_parameters))
    contrasts[:, 1:n_reviewers] = -1.0 / (n_reviewers - 1)
    contrasts[np.arange(1, n_reviewers), np.arange(1, n_reviewers)] = 1.0
    return _read_only(contrasts)


def _build_test_design(
    fit: AdditiveFit, noise: ReviewerNoise, self_positions: tuple[tuple[int, int], ...]
) -> SessionTestDesign:
    n_reviewers = fit.n_reviewers
    n_parameters = fit.design.shape[1]
    contrasts = _contrasts(n_reviewers, n_parameters)
    n_self = len(self_positions)
    self_cells = np.zeros((n_self, n_parameters))
    for index, (reviewer, candidate) in enumerate(self_positions):
        self_cells[index, 0] = 1.0
        if reviewer > 0:
            self_cells[index, reviewer] = 1.0
        if candidate > 0:
            self_cells[index, n_reviewers - 1 + candidate] = 1.0
    # w_j: the fitted part of each estimate, X (X'X)^-1 times its coefficient vector
    coefficient_rows = [contrasts, self_cells]
    own = np.zeros((n_reviewers, n_self))
    own[[reviewer for reviewer, _ in self_positions], np.arange(n_self)] = 1.0
    new_weights = [np.zeros((n_reviewers, n_reviewers)), own]
    if n_self:
        share = 1.0 / n_self
        coefficient_rows.append((self_cells.sum(axis=0) * share)[None, :])
        new_weights.append((own.sum(axis=1) * share**2)[:, None])
    cell_weights = noise.projection @ np.vstack(coefficient_rows).T
    n_tests = cell_weights.shape[1]
    reviewer_weights = np.zeros((n_reviewers, n_tests))
    for test in range(n_tests):
        reviewer_weights[:, test] = np.bincount(
            noise.reviewer_of_cell, weights=cell_weights[:, test] ** 2, minlength=n_reviewers
        )
    reviewer_weights += np.hstack(new_weights)
    cell_forms = (noise.inverse_expectation.T @ reviewer_weights)[noise.reviewer_of_cell]
    one_sided = np.arange(n_tests) >= n_reviewers
    return SessionTestDesign(
        contrasts=contrasts,
        self_cells=_read_only(self_cells),
        reviewer_weights=_read_only(reviewer_weights),
        cell_forms=_read_only(cell_forms),
        one_sided=_read_only(one_sided),
    )


def session_noise_aware_tests(
    fit: AdditiveFit,
    noise: ReviewerNoise,
    self_cells: list[tuple[int, int, float]],
) -> SessionTests:
    r"""The reviewer-offset, self-preference and pooled self-preference tests of one fit.

    The same tests as ``reviewer_offset_tests(fit, noise)``, ``self_preference_tests(fit,
    self_cells, noise)`` and ``pooled_self_preference_test(fit, self_cells, noise)``
    (``self_cells``: ``(reviewer_index, candidate_index, score)`` of the self-reviews left
    out of ``fit``), with the same Bonferroni factors: R for the offsets (two-sided), m
    for the self-reviews (one-sided), 1 for the pooled mean (one-sided; None when m = 0).

    Parameters
    ----------
    fit : AdditiveFit
        The session's additive fit, R reviewers.
    noise : ReviewerNoise
        Its per-reviewer noise (:func:`estimate_reviewer_noise`).
    self_cells : list of (int, int, float), length m
        ``(reviewer_index, candidate_index, score)`` of each self-review, left out of ``fit``.

    Returns
    -------
    SessionTests
        ``reviewer_offsets`` (R tests), ``self_preference`` (m tests) and
        ``pooled_self_preference`` (None when m = 0).
    """
    design = _test_design(fit, noise, tuple((r, c) for r, c, _ in self_cells))
    n_reviewers = fit.n_reviewers
    n_self = len(self_cells)
    coefficients = fit.coefficients
    offset_estimates = design.contrasts @ coefficients
    if n_self:
        scores = np.array([score for _, _, score in self_cells])
        errors = scores - design.self_cells @ coefficients
        estimates = np.concatenate([offset_estimates, errors, [errors.mean()]])
    else:
        estimates = offset_estimates
    variances = noise.variances @ design.reviewer_weights
    testable, _, errors_of_estimates, tails = satterthwaite_t_batch(
        estimates, variances, design.cell_forms, noise.residual_covariance, design.one_sided
    )
    tests: list[ContrastTest] = []
    comparisons = [n_reviewers] * n_reviewers + [n_self] * n_self + [1] * (n_self > 0)
    for index, (estimate, ok, standard_error, tail) in enumerate(
        zip(
            estimates.tolist(),
            testable.tolist(),
            errors_of_estimates.tolist(),
            tails.tolist(),
            strict=True,
        )
    ):
        if not ok:
            tests.append(ContrastTest(estimate, None, None, None, None))
            continue
        p_value = tail if index >= n_reviewers else min(1.0, 2.0 * tail)
        tests.append(
            ContrastTest(
                estimate=estimate,
                standard_error=standard_error,
                t_statistic=estimate / standard_error,
                p_value=p_value,
                p_value_adjusted=min(1.0, p_value * comparisons[index]),
            )
        )
    return SessionTests(
        reviewer_offsets=tests[:n_reviewers],
        self_preference=tests[n_reviewers : n_reviewers + n_self],
        pooled_self_preference=tests[-1] if n_self else None,
    )
