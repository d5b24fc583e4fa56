"""The joint model's block design, centred effects and answer effects, by hand and noise-free."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.bias_effects.joint_blocks import (
    adjusted_means_by_model,
    block_design,
    centred_block_effects,
    centring_transform,
    coded_block_effects,
)
from llm_council.stats.design.joint_model import ols_absorbed_cluster_robust


def test_centring_transform_by_hand() -> None:
    # coded b1, b2 against level 0; centred on all: e_j = b_j - (0 + b1 + b2) / 3
    assert centring_transform(3) == pytest.approx(
        np.array([[-1 / 3, -1 / 3], [2 / 3, -1 / 3], [-1 / 3, 2 / 3]])
    )
    # centred on levels 0 and 1 only: e_j = b_j - b1 / 2
    reference = np.array([True, True, False])
    assert centring_transform(3, reference) == pytest.approx(
        np.array([[-0.5, 0.0], [0.5, 0.0], [-0.5, 1.0]])
    )
    with pytest.raises(ValueError, match="at least one of 3 levels"):
        centring_transform(3, np.zeros(3, dtype=bool))
    with pytest.raises(ValueError, match="at least one of 3 levels"):
        centring_transform(3, np.ones(2, dtype=bool))


def test_block_design_equals_the_dense_dummies() -> None:
    reviewer = np.array([0, 1, 2, 1, 0, 2])
    position = np.array([0, 1, 2, 2, 1, 0])
    is_self = np.array([1.0, 0, 0, 1, 0, 1])
    log_words = np.array([0.5, -0.5, 1.0, 0.0, 2.0, -1.0])
    self_reviewers = np.array([0, 1, 2])
    blocks = [
        ("reviewer_leniency", 2),
        ("reviewer_verbosity", 2),
        ("position", 2),
        ("self_review", 3),
    ]
    dense = block_design(blocks, reviewer, position, is_self, log_words, self_reviewers, 3)
    expected = np.zeros((6, 9))
    for row in range(6):
        if reviewer[row] > 0:
            expected[row, reviewer[row] - 1] = 1.0
            expected[row, 2 + reviewer[row] - 1] = log_words[row]
        if position[row] > 0:
            expected[row, 4 + position[row] - 1] = 1.0
        if is_self[row]:
            expected[row, 6 + reviewer[row]] = 1.0
    assert dense.toarray() == pytest.approx(expected)
    with pytest.raises(ValueError, match="unknown block kind 'tone'"):
        block_design([("tone", 1)], reviewer, position, is_self, log_words, self_reviewers, 3)


def _noise_free(n_sessions: int, seed: int):  # type: ignore[no-untyped-def]
    """3 reviewers x 3 models a session, own shuffles; leniency (0, 0.6, -0.3), slot B +0.4."""
    rng = np.random.default_rng(seed)
    leniency = np.array([0.0, 0.6, -0.3])
    rows = []
    for s in range(n_sessions):
        quality = rng.normal(0, 1, size=3)
        for r in range(3):
            for slot, m in enumerate(rng.permutation(3)):
                score = quality[m] + leniency[r] + (0.4 if slot == 1 else 0.0)
                score += 0.05 * rng.normal()
                rows.append((s * 3 + m, s, r, slot, score))
    answer, session, reviewer, slot, score = (np.array(c) for c in zip(*rows, strict=True))
    return answer, session, reviewer, slot, score


def test_centred_and_coded_effects_recover_the_truth_with_t_intervals() -> None:
    answer, session, reviewer, slot, score = _noise_free(60, seed=3)
    blocks = [("reviewer_leniency", 2), ("position", 2)]
    design = block_design(
        blocks, reviewer, slot, np.zeros(score.size), np.zeros(score.size), np.array([]), 3
    )
    fit = ols_absorbed_cluster_robust(design, score, answer, session)
    lenient = centred_block_effects(fit, slice(0, 2))
    # leniencies centred on their mean: (0, 0.6, -0.3) - 0.1
    assert lenient.estimates == pytest.approx([-0.1, 0.5, -0.4], abs=0.03)
    assert lenient.identified.all()
    t_crit = stats.t.ppf(0.975, fit.n_clusters - 1)
    assert lenient.ci_high - lenient.estimates == pytest.approx(t_crit * lenient.standard_errors)
    on_first_two = centred_block_effects(fit, slice(0, 2), np.array([True, True, False]))
    assert on_first_two.estimates == pytest.approx([-0.3, 0.3, -0.6], abs=0.03)
    slots = coded_block_effects(fit, slice(2, 4), fit.confidence_intervals())
    assert slots.estimates == pytest.approx([0.4, 0.0], abs=0.03)
    assert slots.ci_low[0] < 0.4 < slots.ci_high[0]


def test_adjusted_means_are_the_answer_effects_per_model() -> None:
    # one session, 2 models, 2 reviewers; no design columns: alpha is the answer mean
    score = np.array([5.0, 7.0, 6.0, 10.0])
    answer = np.array([0, 0, 1, 1])  # session 0: model 0 then model 1
    design = block_design(
        [("position", 1)], np.zeros(4, int), np.zeros(4, int), np.zeros(4), np.zeros(4), [], 2
    )
    sums, counts, n_answers = adjusted_means_by_model(score, design, np.zeros(1), answer, 2)
    assert n_answers == 2
    assert counts.tolist() == [1, 1]
    assert (sums / counts).tolist() == pytest.approx([6.0, 8.0])  # the answer means
