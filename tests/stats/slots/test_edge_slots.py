"""The edge slot test (first and last slot against the others, ADR 0072) against Hotelling's
T^2 computed by hand, the omnibus test it equals at three slots, and its null rate."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.design.joint_model import wald_test
from llm_council.stats.slots.edge_slots import (
    centred_slot_means,
    edge_slot_contrasts,
    edge_slot_wald,
)
from llm_council.stats.slots.slot_across_sessions import fit_centred_slots


def test_the_contrasts_are_first_and_last_against_the_mean_of_the_others() -> None:
    # K = 5: row 0 = (1, -1/4, -1/4, -1/4, -1/4), row 1 = (-1/4, -1/4, -1/4, -1/4, 1)
    edges = edge_slot_contrasts(5)
    assert edges[0].tolist() == [1.0, -0.25, -0.25, -0.25, -0.25]
    assert edges[1].tolist() == [-0.25, -0.25, -0.25, -0.25, 1.0]
    assert np.allclose(edges.sum(axis=1), 0.0)  # same value on raw and on centred effects
    with pytest.raises(ValueError, match="at least 3 slots, got 2"):
        edge_slot_contrasts(2)


def test_it_is_hotellings_t2_on_the_edge_contrasts_of_the_clusters() -> None:
    # C = 12 clusters each give a K = 5 vector x_c. With b = mean(x_c) and V = S / C (S the
    # unbiased sample covariance), W = C (E b)' (E S E')^-1 (E b) is Hotelling's one-sample
    # T^2 of the 2-vectors E x_c, and (C - 2) / (2 (C - 1)) T^2 ~ F(2, C - 2) exactly
    # (Hotelling 1931; Anderson 2003, sec. 5.2). T^2 is computed here from the 2-vectors
    # directly, with numpy's covariance, and the tail from scipy.
    rng = np.random.default_rng(5)
    clusters = rng.normal(0.0, 1.0, (12, 5)) + np.array([0.6, 0.0, 0.0, 0.0, 0.0])
    b = clusters.mean(axis=0)
    v = np.cov(clusters, rowvar=False) / 12
    result = edge_slot_wald(b, v, 12)
    y = clusters @ edge_slot_contrasts(5).T  # (12, 2)
    y_bar = y.mean(axis=0)
    t2 = 12 * float(y_bar @ np.linalg.solve(np.cov(y, rowvar=False), y_bar))
    f = (12 - 2) / (2 * (12 - 1)) * t2
    assert (result.df_numerator, result.df_denominator) == (2, 10)
    assert math.isclose(result.f_statistic, f, rel_tol=1e-10)
    assert math.isclose(result.p_value, stats.f.sf(f, 2, 10), rel_tol=1e-9)
    assert not result.singular


def test_with_three_slots_it_is_the_omnibus_test() -> None:
    # Two edge contrasts span every contrast of three slots, and a Wald statistic depends
    # only on the space its contrasts span, so F and p equal the all-slots-equal test's.
    rng = np.random.default_rng(8)
    clusters = rng.normal(0.0, 1.0, (9, 3))
    b, v = clusters.mean(axis=0), np.cov(clusters, rowvar=False) / 9
    differences = np.array([[1.0, 0.0, -1.0], [0.0, 1.0, -1.0]])
    omnibus = wald_test(differences @ b, differences @ v @ differences.T, 9)
    edge = edge_slot_wald(b, v, 9)
    assert math.isclose(edge.f_statistic, omnibus.f_statistic, rel_tol=1e-10)
    assert math.isclose(edge.p_value, omnibus.p_value, rel_tol=1e-9)


def test_bad_shapes_few_clusters_and_a_singular_covariance() -> None:
    with pytest.raises(ValueError, match=r"shape \(4, 4\), expected \(5, 5\)"):
        edge_slot_wald(np.zeros(5), np.eye(4), 10)
    few = edge_slot_wald(np.ones(4), np.eye(4), 2)  # C <= 2: no denominator df
    assert math.isnan(few.p_value)
    # a non-finite effect or covariance is untested (NaN p), never an exception
    assert math.isnan(edge_slot_wald(np.array([np.nan, 0, 0, 0]), np.eye(4), 10).p_value)
    assert math.isnan(edge_slot_wald(np.ones(4), np.full((4, 4), np.inf), 10).p_value)
    # a slot A that never varied: its variance is 0, the 2 x 2 covariance is singular
    covariance = np.diag([0.0, 1.0, 1.0, 1.0, 0.0])
    assert edge_slot_wald(np.array([1.0, 0, 0, 0, -1.0]), covariance, 20).singular


def test_centred_slot_means_match_the_across_sessions_fit() -> None:
    # the same regression as fit_centred_slots: its slot means, and standard errors that
    # give its intervals
    rng = np.random.default_rng(2)
    n_sessions, n_slots = 15, 4
    cluster = np.repeat(np.arange(n_sessions), n_slots)
    slot = np.tile(np.arange(n_slots), n_sessions)
    centred = rng.normal(0.0, 1.0, cluster.size)
    centred -= np.bincount(cluster, centred)[cluster] / n_slots
    means, covariance, n_clusters = centred_slot_means(cluster, slot, centred, n_slots)
    reference = fit_centred_slots(cluster, cluster, slot, centred, n_slots)
    assert n_clusters == n_sessions
    assert np.allclose(means, reference.estimates)
    t_crit = stats.t.ppf(0.975, n_sessions - 1)
    assert np.allclose(means - t_crit * np.sqrt(np.diag(covariance)), reference.ci_low)


def test_null_rate_of_the_edge_test_with_few_clusters() -> None:
    # iid normal cluster vectors: the test is exact, so at 5% over 2,000 draws the rate
    # lies within 5% +- 4 se (se = 0.49%); 10 clusters, 5 slots
    rng = np.random.default_rng(11)
    draws = rng.normal(0.0, 1.0, (2000, 10, 5))
    rejected = 0
    for clusters in draws:
        result = edge_slot_wald(clusters.mean(axis=0), np.cov(clusters, rowvar=False) / 10, 10)
        rejected += result.p_value < 0.05
    se = math.sqrt(0.05 * 0.95 / 2000)
    assert abs(rejected / 2000 - 0.05) < 4 * se
