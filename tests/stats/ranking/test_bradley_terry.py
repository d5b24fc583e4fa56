"""Bradley-Terry fits against hand values and a direct likelihood maximisation (scipy)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize

from llm_council.stats.ranking.bradley_terry import (
    bradley_terry_mm,
    bradley_terry_session_bootstrap,
    bradley_terry_with_covariate,
)


def test_two_items_by_hand() -> None:
    # i beat j 3 times, j beat i once: MLE g_i/g_j = 3, so centred theta = +-ln(3)/2
    fit = bradley_terry_mm(np.array([[0, 3], [1, 0]]))
    assert fit.strength == pytest.approx([math.log(3) / 2, -math.log(3) / 2])
    assert fit.converged.shape == () and bool(fit.converged)


def _negative_log_likelihood(free: np.ndarray, wins: np.ndarray) -> float:
    theta = np.concatenate([[0.0], free])
    total = 0.0
    for i in range(len(theta)):
        for j in range(len(theta)):
            if i != j and wins[i, j]:
                total -= wins[i, j] * (theta[i] - np.logaddexp(theta[i], theta[j]))
    return total


def test_mm_matches_direct_maximum_likelihood() -> None:
    wins = np.array([[0, 7, 4, 9], [3, 0, 6, 5], [6, 4, 0, 8], [1, 5, 2, 0]], dtype=float)
    solution = optimize.minimize(
        _negative_log_likelihood, np.zeros(3), args=(wins,), method="BFGS", options={"gtol": 1e-10}
    )
    theta = np.concatenate([[0.0], solution.x])
    assert bradley_terry_mm(wins).strength == pytest.approx(theta - theta.mean(), abs=1e-5)


def test_batched_fit_equals_separate_fits() -> None:
    first = np.array([[0, 2, 3], [1, 0, 2], [1, 1, 0]], dtype=float)
    second = first.T.copy()
    batched = bradley_terry_mm(np.stack([first, second]))
    assert batched.strength[0] == pytest.approx(bradley_terry_mm(first).strength)
    assert batched.strength[1] == pytest.approx(bradley_terry_mm(second).strength)
    assert batched.converged.tolist() == [True, True]


def test_a_model_that_never_wins_has_minus_infinite_strength() -> None:
    strengths = bradley_terry_mm(np.array([[0, 2, 3], [1, 0, 2], [0, 0, 0]])).strength
    assert strengths[2] == -math.inf
    assert np.isfinite(
        bradley_terry_mm(np.array([[0, 2, 3], [1, 0, 2], [0, 0, 0]]), pseudo_count=0.5).strength
    ).all()


def test_a_fit_that_runs_out_of_iterations_says_so_per_problem() -> None:
    # Problem 0 is two items (one update reaches the MLE exactly: g = W / (n / 2) gives
    # g_i/g_j = W_i/W_j = 3); problem 1 is a 3-item cycle with unequal wins, which MM
    # approaches only geometrically, so 2 updates cannot bring it within 1e-10.
    two_items = np.zeros((3, 3))
    two_items[0, 1], two_items[1, 0] = 3, 1
    cycle = np.array([[0, 5, 1], [1, 0, 4], [3, 1, 0]], dtype=float)
    short = bradley_terry_mm(np.stack([two_items, cycle]), max_iter=2)
    assert short.converged.tolist() == [True, False]
    assert bradley_terry_mm(np.stack([two_items, cycle])).converged.tolist() == [True, True]


def test_the_bootstrap_leaves_out_replicates_that_did_not_converge() -> None:
    # a cycle with unequal wins: every refit needs many MM updates (see the test above)
    cyclic = np.zeros((30, 3, 3))
    cyclic[:, 0, 1], cyclic[:, 1, 2], cyclic[:, 2, 0] = 5, 4, 3
    cyclic[:, 1, 0], cyclic[:, 2, 1], cyclic[:, 0, 2] = 1, 1, 1
    fit = bradley_terry_session_bootstrap(cyclic, n_resamples=40, rng=np.random.default_rng(1))
    assert fit.n_unconverged_resamples == 0
    assert np.isfinite(fit.ci_low).all()
    starved = bradley_terry_session_bootstrap(
        cyclic, n_resamples=40, rng=np.random.default_rng(1), max_iter=2
    )
    assert starved.n_unconverged_resamples == 40
    assert np.isnan(starved.ci_low).all() and np.isnan(starved.ci_high).all()
    assert np.isnan(starved.strength).all()  # the point fit ran out of updates too


def test_session_bootstrap_covers_the_truth() -> None:
    rng = np.random.default_rng(11)
    truth = np.array([0.6, 0.0, -0.6])
    sessions = np.zeros((400, 3, 3))
    for s in range(400):
        for i in range(3):
            for j in range(i + 1, 3):
                p = 1 / (1 + math.exp(-(truth[i] - truth[j])))
                if rng.random() < p:
                    sessions[s, i, j] += 1
                else:
                    sessions[s, j, i] += 1
    fit = bradley_terry_session_bootstrap(sessions, n_resamples=200, rng=np.random.default_rng(0))
    assert np.all(fit.ci_low < truth) and np.all(truth < fit.ci_high)
    assert np.all(fit.ci_low < fit.strength) and np.all(fit.strength < fit.ci_high)
    again = bradley_terry_session_bootstrap(sessions, n_resamples=200, rng=np.random.default_rng(0))
    assert again.ci_low == pytest.approx(fit.ci_low)


def test_covariate_fit_matches_direct_maximum_likelihood() -> None:
    rng = np.random.default_rng(2)
    n = 3000
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    x = rng.normal(size=n)
    truth, slope = np.array([0.5, 0.0, -0.2, -0.3]), 0.8
    won = (rng.random(n) < 1 / (1 + np.exp(-(truth[a] - truth[b] + slope * x)))).astype(float)

    def negative_log_likelihood(params: np.ndarray) -> float:
        theta = np.concatenate([[0.0], params[1:]])
        eta = theta[a] - theta[b] + params[0] * x
        return float(np.sum(np.logaddexp(0, eta) - won * eta))

    solution = optimize.minimize(
        negative_log_likelihood, np.zeros(4), method="BFGS", options={"gtol": 1e-9}
    )
    fit = bradley_terry_with_covariate(a, b, won, x, np.arange(n) // 10, 4)
    theta = np.concatenate([[0.0], solution.x[1:]])
    assert fit.slope == pytest.approx(solution.x[0], abs=1e-4)
    assert fit.strengths.strength == pytest.approx(theta - theta.mean(), abs=1e-4)
    assert fit.slope_ci[0] < slope < fit.slope_ci[1]


def test_covariate_fit_sandwich_matches_a_dense_computation() -> None:
    # Independent dense version: X rows (d, e_a - e_b without item 0), W = p(1-p),
    # bread = (X'WX)^-1, meat = sum_c (X_c'r_c)(X_c'r_c)', V = C/(C-1) bread meat bread.
    rng = np.random.default_rng(8)
    n, k = 600, 3
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    x = rng.normal(size=n)
    won = (rng.random(n) < 1 / (1 + np.exp(-(0.4 * (a == 0) - 0.4 * (b == 0) + 0.5 * x)))).astype(
        float
    )
    clusters = np.arange(n) // 6
    fit = bradley_terry_with_covariate(a, b, won, x, clusters, k)
    theta_free = (fit.strengths.strength - fit.strengths.strength[0])[1:]
    design = np.zeros((n, k))
    design[:, 0] = x
    for j in range(1, k):
        design[:, j] = (a == j).astype(float) - (b == j)
    prob = 1 / (1 + np.exp(-(design @ np.r_[fit.slope, theta_free])))
    bread = np.linalg.inv((design * (prob * (1 - prob))[:, None]).T @ design)
    meat = np.zeros((k, k))
    for c in np.unique(clusters):
        score = design[clusters == c].T @ (won - prob)[clusters == c]
        meat += np.outer(score, score)
    n_clusters = clusters.max() + 1
    covariance = n_clusters / (n_clusters - 1) * bread @ meat @ bread
    assert fit.slope_standard_error == pytest.approx(np.sqrt(covariance[0, 0]))


def test_covariate_fit_does_not_depend_on_the_order_of_the_comparisons() -> None:
    # the fit sums comparisons by item pair and by cluster; shuffling them (and their
    # clusters with them) must give the same estimates up to rounding
    rng = np.random.default_rng(5)
    n, k = 900, 5
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    x = rng.normal(size=n)
    won = (rng.random(n) < 1 / (1 + np.exp(-(0.3 * a - 0.3 * b + 0.6 * x)))).astype(int)
    clusters = np.arange(n) // 9
    fit = bradley_terry_with_covariate(a, b, won, x, clusters, k)
    shuffle = rng.permutation(n)
    shuffled = bradley_terry_with_covariate(
        a[shuffle], b[shuffle], won[shuffle], x[shuffle], clusters[shuffle], k
    )
    assert shuffled.slope == pytest.approx(fit.slope, rel=1e-12)
    assert shuffled.slope_standard_error == pytest.approx(fit.slope_standard_error, rel=1e-10)
    assert shuffled.strengths.strength == pytest.approx(fit.strengths.strength, rel=1e-10)
    assert shuffled.strengths.standard_error == pytest.approx(
        fit.strengths.standard_error, rel=1e-10
    )


def test_comparisons_connected_needs_one_chain() -> None:
    from llm_council.stats.ranking.bradley_terry import comparisons_connected

    # 0 beat 1 and 2 beat 3, but {0, 1} and {2, 3} never met: no common scale
    split = np.zeros((4, 4))
    split[0, 1] = split[2, 3] = 1
    assert not comparisons_connected(split)
    split[1, 2] = 1  # one comparison links the groups (direction does not matter here)
    assert comparisons_connected(split)
    only_one = np.zeros((3, 3))
    assert not comparisons_connected(only_one)
    # an item never compared at all is ignored, not a separate group
    linked = np.zeros((3, 3))
    linked[0, 1] = 2
    assert comparisons_connected(linked)
