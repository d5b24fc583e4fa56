"""``clustered_rate_from_sums`` (integer cluster sums) against ``clustered_rate`` (per
cluster arrays), by hand, and on merged sums."""

from __future__ import annotations

import math
from dataclasses import astuple

import numpy as np
import pytest
from scipy import stats as scipy_stats

from llm_council.stats.ranking.rank_consistency import (
    ClusterSums,
    clustered_rate,
    clustered_rate_from_sums,
)


def _same(got: object, want: object) -> None:
    for name in ("estimate", "ci_low", "ci_high", "standard_error"):
        a, b = getattr(got, name), getattr(want, name)
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, rel=1e-12, abs=1e-15)
    assert got.n_clusters == want.n_clusters  # type: ignore[attr-defined]


def test_the_sums_of_the_hand_example_give_its_interval() -> None:
    # clusters (y, n): (1, 4), (0, 2), (3, 4): Y = 4, N = 10, sum y^2 = 10, sum yn = 16,
    # sum n^2 = 36; numerator 100*10 - 2*10*4*16 + 16*36 = 1000 - 1280 + 576 = 296, so the
    # squared residuals sum to 296 / 100 = 2.96 (as the per-cluster hand sum), se^2 = 0.0444
    sums = ClusterSums.of([1, 0, 3], [4, 2, 4])
    assert sums == ClusterSums(3, 4, 10, 10, 16, 36)
    estimate = clustered_rate_from_sums(sums)
    assert estimate.standard_error == pytest.approx(math.sqrt(0.0444), rel=1e-14)
    t = scipy_stats.t.ppf(0.975, 2)
    assert estimate.ci_high == min(1.0, 0.4 + t * math.sqrt(0.0444))  # 1.31, clipped
    assert estimate.ci_low == pytest.approx(max(0.0, 0.4 - t * math.sqrt(0.0444)), abs=1e-15)


@pytest.mark.parametrize("seed", range(6))
def test_random_clusters_match_the_per_cluster_computation(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_clusters = int(rng.integers(2, 400))
    trials = rng.integers(0, 46, n_clusters)  # up to 10 answers: 45 pairs; zeros left out
    events = rng.binomial(trials, rng.uniform(0.0, 0.6))
    _same(clustered_rate_from_sums(ClusterSums.of(events, trials)), clustered_rate(events, trials))


def test_equal_rates_take_wilsons_interval_exactly() -> None:
    # every cluster at 1/3: the float residuals of the per-cluster form need not be exactly
    # zero; the integer numerator is (N^2 * 5 - 2*N*Y*15 + Y^2 * 45 with N = 9, Y = 3 -> 0)
    sums = ClusterSums.of([1, 2], [3, 6])
    estimate = clustered_rate_from_sums(sums)
    assert estimate.standard_error == 0.0
    # Wilson for round(1/3 * 2) = 1 of 2 clusters: centre (0.5 + z^2/4) / (1 + z^2/2) = 0.5,
    # half-width z sqrt(0.5 * 0.5 / 2 + z^2 / 16) / (1 + z^2 / 2) = 0.40547 (z = 1.95996)
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((0.09453, 0.90547), abs=1e-5)
    _same(
        clustered_rate_from_sums(ClusterSums.of([0] * 30, [3] * 30)),
        clustered_rate([0] * 30, [3] * 30),
    )


def test_no_cluster_and_one_cluster_as_the_per_cluster_computation() -> None:
    _same(clustered_rate_from_sums(ClusterSums.of([], [])), clustered_rate([], []))
    _same(clustered_rate_from_sums(ClusterSums.of([0, 2], [0, 5])), clustered_rate([0, 2], [0, 5]))


def test_sums_of_disjoint_clusters_add_to_the_sums_of_their_union() -> None:
    rng = np.random.default_rng(9)
    trials = rng.integers(0, 10, 300)
    events = rng.binomial(trials, 0.2)
    parts = [ClusterSums.of(events[s], trials[s]) for s in (slice(0, 90), slice(90, 300))]
    added = [a + b for a, b in zip(astuple(parts[0]), astuple(parts[1]), strict=True)]
    assert ClusterSums(*added) == ClusterSums.of(events, trials)
