"""The batched session tests equal the three separate functions they replace in the audit."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from llm_council.stats.design.design_cache import fit_additive_two_way_cached
from llm_council.stats.reviewers.reviewer_noise import estimate_reviewer_noise
from llm_council.stats.sessions.session_test_batch import session_noise_aware_tests
from llm_council.stats.sessions.session_tests import (
    ContrastTest,
    pooled_self_preference_test,
    reviewer_offset_tests,
    self_preference_tests,
    step_down_reviewer_offsets,
)


def _close(left: float | None, right: float | None) -> bool:
    if left is None or right is None:
        return left is None and right is None
    return math.isclose(left, right, rel_tol=1e-12, abs_tol=1e-12)


def _same_test(left: ContrastTest | None, right: ContrastTest | None) -> None:
    assert (left is None) == (right is None)
    if left is None or right is None:
        return
    for field in ("estimate", "standard_error", "t_statistic", "p_value", "p_value_adjusted"):
        assert _close(getattr(left, field), getattr(right, field)), field


def _session(
    rng: np.random.Generator, members: int, missing_rate: float, *, tied: bool = False
) -> tuple[np.ndarray, list[tuple[int, int, float]]]:
    """A members x members table with self-reviews (the diagonal) left out, and the
    self-review cells; ``tied``: scores that fit the additive model exactly."""
    quality = rng.normal(6, 1.5, members)
    leniency = rng.normal(0, 1, members)
    noise_sds = rng.uniform(0.4, 2.0, members)
    scores = quality[None, :] + leniency[:, None]
    if not tied:
        scores = np.round(scores + rng.normal(0, 1, (members, members)) * noise_sds[:, None])
    scores[rng.random((members, members)) < missing_rate] = np.nan
    self_cells = [
        (row, row, float(scores[row, row]))
        for row in range(members)
        if not np.isnan(scores[row, row])
    ]
    np.fill_diagonal(scores, np.nan)
    return scores, self_cells


@pytest.mark.parametrize(
    ("members", "missing_rate", "tied"),
    [
        (5, 0.0, False),
        (5, 0.2, False),
        (4, 0.0, False),
        (3, 0.0, False),
        (7, 0.1, False),
        (9, 0.0, False),
        (10, 0.15, False),
        (5, 0.0, True),
    ],
)
def test_batch_equals_the_separate_tests(members: int, missing_rate: float, tied: bool) -> None:
    rng = np.random.default_rng(members * 100 + int(missing_rate * 100) + tied)
    compared = declined = 0
    for _ in range(30):
        scores, self_cells = _session(rng, members, missing_rate, tied=tied)
        fit = fit_additive_two_way_cached(scores)
        if fit is None:
            continue
        noise = estimate_reviewer_noise(fit)
        if noise is None:
            declined += 1  # the audit then runs the separate tests with noise=None
            continue
        # the batch's contract: self cells index the fitted table (here every row/column)
        if fit.n_reviewers != members or fit.n_candidates != members:
            continue
        batch = session_noise_aware_tests(fit, noise, self_cells)
        for left, right in zip(
            batch.reviewer_offsets, reviewer_offset_tests(fit, noise), strict=True
        ):
            _same_test(left, right)
        separate = self_preference_tests(fit, self_cells, noise) if self_cells else []
        assert len(batch.self_preference) == len(separate)
        for left, right in zip(batch.self_preference, separate, strict=True):
            _same_test(left, right)
        _same_test(
            batch.pooled_self_preference, pooled_self_preference_test(fit, self_cells, noise)
        )
        # the step-down given the batch's first step equals the step-down on its own
        step_down: dict[str, Any] = {
            "significance_level": 0.05,
            "effect_floor": 0.5,
            "first_fit": fit,
            "per_reviewer_noise": True,
            "first_noise": noise,
        }
        with_batch = step_down_reviewer_offsets(
            scores, **step_down, first_tests=batch.reviewer_offsets
        )
        alone = step_down_reviewer_offsets(scores, **step_down)
        assert [(v.reviewer_index, v.flagged) for v in with_batch] == [
            (v.reviewer_index, v.flagged) for v in alone
        ]
        for left, right in zip(with_batch, alone, strict=True):
            assert _close(left.estimate, right.estimate)
            assert _close(left.p_value_adjusted, right.p_value_adjusted)
        compared += 1
    if members == 3:  # 1 residual df: no per-reviewer noise, so never batched
        assert compared == 0 and declined > 0
    else:
        assert compared >= 10


def test_batch_without_self_reviews_has_no_pooled_test() -> None:
    rng = np.random.default_rng(3)
    scores, _ = _session(rng, 5, 0.0)
    fit = fit_additive_two_way_cached(scores)
    assert fit is not None
    noise = estimate_reviewer_noise(fit)
    assert noise is not None
    batch = session_noise_aware_tests(fit, noise, [])
    assert batch.self_preference == [] and batch.pooled_self_preference is None
    for left, right in zip(batch.reviewer_offsets, reviewer_offset_tests(fit, noise), strict=True):
        _same_test(left, right)
