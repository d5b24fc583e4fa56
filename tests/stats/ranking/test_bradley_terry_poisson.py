"""The per-session Poisson bootstrap of Bradley-Terry: replicate tables that add across
sessions exactly, against a per-session loop; intervals against the multinomial bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from llm_council.stats.inference.poisson_weights import poisson_weights, unit_keys
from llm_council.stats.ranking.bradley_terry import (
    bradley_terry_mm,
    bradley_terry_session_bootstrap,
)
from llm_council.stats.ranking.bradley_terry_poisson import (
    bradley_terry_from_tables,
    poisson_resampled_tables,
)


def _session_wins(n_sessions: int, strengths: list[float], seed: int) -> np.ndarray:
    """Each session: every pair compared twice, won with the Bradley-Terry probability."""
    rng = np.random.default_rng(seed)
    k = len(strengths)
    wins = np.zeros((n_sessions, k, k))
    for i in range(k):
        for j in range(i + 1, k):
            p = 1 / (1 + np.exp(strengths[j] - strengths[i]))
            won = rng.binomial(2, p, size=n_sessions)
            wins[:, i, j], wins[:, j, i] = won, 2 - won
    return wins


def test_replicate_tables_are_the_weighted_sums_session_by_session() -> None:
    wins = _session_wins(30, [0.5, 0.0, -0.5], seed=1)
    keys = unit_keys([f"s{i:02d}" for i in range(30)], seed=5)
    tables = poisson_resampled_tables(wins, keys, 120)
    weights = poisson_weights(keys, np.arange(120))
    for b in (0, 49, 50, 119):  # across the batch boundary
        expected = sum(weights[b, s] * wins[s] for s in range(30))
        np.testing.assert_array_equal(tables[b], expected)


def test_tables_of_disjoint_sessions_add_to_the_tables_of_the_union_exactly() -> None:
    wins = _session_wins(40, [0.3, 0.1, 0.0, -0.4], seed=2)
    ids = [f"session-{i}" for i in range(40)]
    keys = unit_keys(ids, seed=0)
    whole = poisson_resampled_tables(wins, keys, 60)
    parts = poisson_resampled_tables(wins[:25], keys[:25], 60) + poisson_resampled_tables(
        wins[25:], keys[25:], 60
    )
    np.testing.assert_array_equal(whole, parts)
    assert np.all(whole == np.round(whole))


def test_the_fit_is_mm_and_the_intervals_agree_with_the_multinomial_bootstrap() -> None:
    truth = [0.6, 0.2, -0.2, -0.6]
    wins = _session_wins(300, truth, seed=3)
    keys = unit_keys([str(i) for i in range(300)], seed=0)
    poisson = bradley_terry_from_tables(wins.sum(axis=0), poisson_resampled_tables(wins, keys, 400))
    multinomial = bradley_terry_session_bootstrap(
        wins, n_resamples=400, rng=np.random.default_rng(0)
    )
    np.testing.assert_array_equal(poisson.strength, bradley_terry_mm(wins.sum(axis=0)).strength)
    np.testing.assert_array_equal(poisson.strength, multinomial.strength)
    # both estimate the same sampling spread: 400 replicates each, se of an se ~ 4%
    np.testing.assert_allclose(poisson.standard_error, multinomial.standard_error, rtol=0.15)
    assert np.all(poisson.ci_low < poisson.strength) and np.all(poisson.strength < poisson.ci_high)
    assert poisson.n_unconverged_resamples == 0


def test_a_model_that_never_wins_keeps_an_infinite_bound_and_no_replicates_gives_nan() -> None:
    wins = np.zeros((6, 2, 2))
    wins[:, 0, 1] = 1  # 0 always beats 1: no finite MLE
    keys = unit_keys([str(i) for i in range(6)], seed=0)
    fit = bradley_terry_from_tables(wins.sum(axis=0), poisson_resampled_tables(wins, keys, 20))
    assert np.isneginf(fit.ci_low[1])
    empty = bradley_terry_from_tables(wins.sum(axis=0), np.zeros((0, 2, 2)))
    assert np.isnan(empty.ci_low).all() and empty.n_unconverged_resamples == 0


@pytest.mark.parametrize("n_members", [3, 9])
def test_the_interval_covers_the_truth_about_as_often_as_claimed(n_members: int) -> None:
    """40 stores of 60 sessions; the 95% interval of the strongest item covers its truth.
    A loose check (binomial se of the rate ~3.5%); the coverage study is in ADR 0074."""
    truth = np.linspace(0.5, -0.5, n_members)
    truth -= truth.mean()
    covered = 0
    for store in range(40):
        wins = _session_wins(60, truth.tolist(), seed=100 + store)
        keys = unit_keys([f"{store}-{s}" for s in range(60)], seed=0)
        fit = bradley_terry_from_tables(wins.sum(axis=0), poisson_resampled_tables(wins, keys, 100))
        covered += int(fit.ci_low[0] <= truth[0] <= fit.ci_high[0])
    assert covered >= 32  # 95% expected: 38; 32 or fewer has probability < 0.2%
