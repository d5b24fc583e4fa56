"""The variance-ratio drift test of a reviewer's noise against its history (ADR 0051)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from llm_council.stats.design.design_cache import fit_additive_two_way_cached
from llm_council.stats.reviewers.noise_drift import (
    TIE_TOLERANCE,
    clearly_below,
    council_noise_drift,
    residual_sum_of_squares_moments,
    reviewer_noise_given_others,
    step_down_noise_drift,
    variance_ratio_p_value,
)
from llm_council.stats.sessions.moderated_session_tests import (
    reviewer_noise_expectation,
    reviewer_residual_variances,
)


@pytest.mark.parametrize(
    ("ratio", "numerator_df", "denominator_df"),
    [(0.05, 1.0, 20.0), (1.0, 2.2, 20.0), (3.7, 2.2, 66.0), (9.0, 0.7, 5.5), (0.4, 11.0, 10.0)],
)
def test_the_p_value_is_scipys_two_sided_f_tail(
    ratio: float, numerator_df: float, denominator_df: float
) -> None:
    distribution = stats.f(numerator_df, denominator_df)
    expected = min(1.0, 2.0 * min(distribution.cdf(ratio), distribution.sf(ratio)))
    assert variance_ratio_p_value(ratio, numerator_df, denominator_df) == pytest.approx(
        expected, rel=1e-9
    )


@pytest.mark.parametrize(
    ("ratio", "numerator_df", "denominator_df"),
    [(0.05, 1.0, 20.0), (1.0, 2.2, 10.0), (3.7, 2.2, 66.0), (9.0, 0.7, 5.5)],
)
def test_the_upper_tail_is_scipys_f_survival(
    ratio: float, numerator_df: float, denominator_df: float
) -> None:
    # ADR 0059: a session noisier than its history is the side that makes false flags
    expected = stats.f(numerator_df, denominator_df).sf(ratio)
    p_value = variance_ratio_p_value(ratio, numerator_df, denominator_df, alternative="greater")
    assert p_value == pytest.approx(expected, rel=1e-9)
    # a quiet session is never marked: its upper tail is near 1
    assert variance_ratio_p_value(1e-4, 2.0, 10.0, alternative="greater") > 0.99
    assert variance_ratio_p_value(2.5, 3.0, math.inf, alternative="greater") == pytest.approx(
        stats.chi2(3.0).sf(7.5), rel=1e-9
    )
    with pytest.raises(ValueError, match="alternative"):
        variance_ratio_p_value(1.0, 1.0, 2.0, alternative="less")


def test_an_infinite_history_df_is_the_chi_square_limit() -> None:
    # nu * x ~ chi2(nu) when the reference variance is exact
    expected = 2.0 * stats.chi2(3.0).sf(3.0 * 2.5)
    assert variance_ratio_p_value(2.5, 3.0, math.inf) == pytest.approx(expected, rel=1e-9)
    # the F tail tends to it
    assert variance_ratio_p_value(2.5, 3.0, 1e7) == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize(
    ("ratio", "numerator_df", "denominator_df"),
    [(math.nan, 1.0, 2.0), (math.inf, 1.0, 2.0), (-1.0, 1.0, 2.0), (1.0, 0.0, 2.0),
     (1.0, 1.0, math.nan), (1.0, math.nan, 3.0)],
)  # fmt: skip
def test_unusable_inputs_give_nan(ratio: float, numerator_df: float, denominator_df: float) -> None:
    assert math.isnan(variance_ratio_p_value(ratio, numerator_df, denominator_df))


def _design(n_members: int, missing: tuple[tuple[int, int], ...] = ()):  # type: ignore[no-untyped-def]
    table = np.arange(n_members * n_members, dtype=float).reshape(n_members, n_members) % 7
    np.fill_diagonal(table, np.nan)  # self-reviews are outside the fit
    for row, column in missing:
        table[row, column] = np.nan
    fit = fit_additive_two_way_cached(table)
    assert fit is not None
    annihilator = np.eye(fit.observed.size) - fit.design @ fit.covariance_unscaled @ fit.design.T
    return fit, annihilator


def test_equal_noise_gives_the_leverage_share_and_a_complete_trio_one_df() -> None:
    fit, annihilator = _design(3)
    expected, dfs = residual_sum_of_squares_moments(annihilator, fit.rows, np.full(3, 2.0))
    _, shares = reviewer_residual_variances(fit)
    # E RSS_r = sigma^2 d_r (tr S_r = sigma^2 sum_{i in r} M_ii)
    np.testing.assert_allclose(expected, 2.0 * shares, rtol=1e-12)
    # one residual df: every RSS_r is (sum_{i in r} u_i^2) (u'e)^2, a scaled chi2(1)
    np.testing.assert_allclose(dfs, 1.0, rtol=1e-9)


def test_the_expectation_is_raos_and_the_df_match_a_monte_carlo_variance() -> None:
    fit, annihilator = _design(5, missing=((0, 3), (4, 1)))
    variances = np.array([0.25, 4.0, 1.0, 0.5, 2.25])
    expected, dfs = residual_sum_of_squares_moments(annihilator, fit.rows, variances)
    # Rao's A: E RSS_r = sum_r' A_rr' sigma_r'^2
    np.testing.assert_allclose(expected, reviewer_noise_expectation(fit) @ variances, rtol=1e-10)
    # Monte Carlo: RSS_r of M e with e_i ~ N(0, sigma_g(i)^2); Var RSS_r = 2 E^2 / nu_r
    rng = np.random.default_rng(7)
    noise = rng.standard_normal((40_000, fit.observed.size)) * np.sqrt(variances[fit.rows])
    residuals = noise @ annihilator.T
    sums = np.stack([np.sum(residuals[:, fit.rows == r] ** 2, axis=1) for r in range(5)], axis=1)
    np.testing.assert_allclose(sums.mean(axis=0), expected, rtol=0.03)
    np.testing.assert_allclose(sums.var(axis=0), 2.0 * expected**2 / dfs, rtol=0.06)


def _drift_draws(  # type: ignore[no-untyped-def]
    true_variances: np.ndarray,
    prior_variances: np.ndarray,
    n_draws: int,
    seed: int,
    alternative: str = "two-sided",
    level: float = 0.1,
):
    fit, annihilator = _design(5)
    rng = np.random.default_rng(seed)
    moved_counts = np.zeros(5)
    first_moved = []
    for _ in range(n_draws):
        noise = rng.standard_normal(fit.observed.size) * np.sqrt(true_variances[fit.rows])
        drift = step_down_noise_drift(
            annihilator,
            fit.rows,
            annihilator @ noise,
            prior_variances,
            np.full(5, math.inf),  # the history's variances exact: chi-square reference
            np.full(5, 1.5**2),
            np.ones(5, dtype=bool),
            level=level,
            alternative=alternative,
        )
        for reviewer in drift.moved:
            moved_counts[reviewer] += 1
        first_moved.append(drift.moved[0] if drift.moved else -1)
    return moved_counts / n_draws, np.array(first_moved)


def test_with_the_historys_noise_each_reviewer_is_marked_at_about_the_level() -> None:
    variances = np.array([0.25, 0.5, 1.0, 1.5, 2.25])
    rates, first = _drift_draws(variances, variances, 2000, 1)
    # the first step of each reviewer is an exact-level test (Gaussian noise, exact
    # reference); the step-down adds a little. 2000 draws: SE of 0.1 is 0.0067
    first_rates = np.array([(first == r).mean() for r in range(5)])
    assert np.all(first_rates < 0.1 + 3 * 0.0067)
    assert np.all(rates > 0.06) and np.all(rates < 0.16)


def test_a_judge_gone_noisy_is_moved_and_does_not_drag_its_neighbours() -> None:
    history = np.array([0.25, 0.5, 1.0, 1.5, 2.25])
    now = history.copy()
    now[0] = 16.0 * history[0]  # 0.5 -> 2.0 points
    rates, first = _drift_draws(now, history, 800, 2)
    assert (first == 0).mean() > 0.6
    # once judge 0 is replaced, the others are tested against its new variance: they
    # are marked near the level, not at judge 0's rate
    assert np.all(rates[1:] < 0.2)
    assert rates[0] > 0.6


def test_the_upper_tailed_check_marks_the_noisier_judges_only() -> None:
    # ADR 0059: the SDs reversed, so judges 0-1 are noisier now and 3-4 quieter. Upper
    # tail at 0.3: the quieter ones are marked only through the step-down's
    # replacements (rarely); the two-sided check at 0.2 marks them too
    history = np.array([0.25, 0.5, 1.0, 1.5, 2.25])
    now = history[::-1].copy()
    upper, _ = _drift_draws(now, history, 600, 4, alternative="greater", level=0.3)
    both, _ = _drift_draws(now, history, 600, 4, alternative="two-sided", level=0.2)
    # measured: judge 0 (9x) 76% against 60%, judge 4 (1/9) 0.2% against 47%
    assert upper[0] > 0.7 and upper[0] > both[0]
    assert np.all(upper[3:] < 0.12)
    assert np.all(both[3:] > upper[3:])
    # with the history's own noise, each judge's first step is an exact 0.3-level test
    # of the upper tail (2000 draws: SE of 0.3 is 0.010)
    same = np.array([0.25, 0.5, 1.0, 1.5, 2.25])
    _, first = _drift_draws(same, same, 2000, 5, alternative="greater", level=0.3)
    first_rates = np.array([(first == r).mean() for r in range(5)])
    assert np.all(first_rates < 0.3 + 3 * 0.010)


def test_no_residual_information_is_not_tested() -> None:
    fit, annihilator = _design(4)
    drift = step_down_noise_drift(
        annihilator,
        fit.rows,
        np.zeros(fit.observed.size),  # scores fit the model exactly
        np.ones(4),
        np.full(4, 10.0),
        np.ones(4),
        np.array([True, True, False, True]),
        level=0.1,
    )
    # a residual sum of zero against a positive expectation: far below any history
    assert set(drift.moved) == {0, 1, 3}
    assert math.isnan(drift.p_values[2])


def test_the_council_ratio_sums_the_reviewers_and_its_df_match_a_monte_carlo() -> None:
    # ADR 0059: E_0 RSS_T is the tested reviewers' expectations summed (each Rao's);
    # Var RSS_T = 2 tr S_T^2 = 2 E^2 / nu_T, checked on 40,000 Gaussian draws
    fit, annihilator = _design(5, missing=((0, 3),))
    variances = np.array([0.25, 0.5, 1.0, 1.5, 2.25])
    tested = np.array([True, True, False, True, True])
    expected, _ = residual_sum_of_squares_moments(annihilator, fit.rows, variances)
    rng = np.random.default_rng(9)
    noise = rng.standard_normal((40_000, fit.observed.size)) * np.sqrt(variances[fit.rows])
    residuals = noise @ annihilator.T
    sums = np.sum(residuals[:, tested[fit.rows]] ** 2, axis=1)
    council = council_noise_drift(
        annihilator, fit.rows, residuals[0], variances, np.full(5, math.inf), tested
    )
    total = float(expected[tested].sum())
    assert council.ratio == pytest.approx(float(sums[0]) / total, rel=1e-12)
    assert sums.mean() == pytest.approx(total, rel=0.02)
    assert sums.var() == pytest.approx(2.0 * total**2 / council.session_df, rel=0.05)
    # exact history variances: the chi-square limit of the upper tail
    assert math.isinf(council.history_df)
    assert council.p_value == pytest.approx(
        stats.chi2(council.session_df).sf(council.session_df * council.ratio), rel=1e-9
    )


def test_the_council_historys_df_are_satterthwaites() -> None:
    # d_T = (sum a_r s_r^2)^2 / sum (a_r s_r^2)^2 / d_r; with every d_r = d and a_r s_r^2
    # equal it is R d (R reviewers' independent histories pooled), and one reviewer's
    # df bound nothing once the others' are infinite
    fit, annihilator = _design(4)
    _, shares = reviewer_residual_variances(fit)
    # variances making a_r s_r^2 equal: a complete 4-member council is symmetric, so
    # equal variances give equal parts
    council = council_noise_drift(
        annihilator, fit.rows, fit.residuals, np.ones(4), np.full(4, 10.0), np.ones(4, bool)
    )
    assert council.history_df == pytest.approx(40.0, rel=1e-9)
    assert np.allclose(shares, shares[0])
    one = council_noise_drift(
        annihilator,
        fit.rows,
        fit.residuals,
        np.ones(4),
        np.array([10.0, math.inf, math.inf, math.inf]),
        np.ones(4, bool),
    )
    assert one.history_df == pytest.approx(10.0 * 4**2, rel=1e-9)  # 1 / ((1/4)^2 / 10)


def test_the_council_check_finds_a_council_wide_rise_the_reviewers_miss() -> None:
    # 7 members, every judge 4/3 noisier than a 10-df history (x16/9 in variance): the
    # council-wide test at 0.1 finds it in most sessions; each judge's own test (1-4 df)
    # rarely. Honest sessions: the upper tail at 0.1 fires near 10% (Satterthwaite's
    # approximation; 2,000 draws, SE 0.7%)
    fit, annihilator = _design(7)
    history = np.linspace(0.5, 1.5, 7) ** 2
    rng = np.random.default_rng(12)

    def council_rate(true_variances: np.ndarray, draws: int) -> float:
        fired = 0
        for _ in range(draws):
            noise = rng.standard_normal(fit.observed.size) * np.sqrt(true_variances[fit.rows])
            council = council_noise_drift(
                annihilator,
                fit.rows,
                annihilator @ noise,
                history,
                np.full(7, 10.0),
                np.ones(7, bool),
            )
            fired += council.p_value < 0.1
        return fired / draws

    # the history's variances are themselves drawn on 10 df in the model; here they are
    # exact, so the F(., d_T) reference is conservative: at most the level plus 3 SE
    assert council_rate(history, 2000) < 0.1 + 3 * 0.0067
    assert council_rate(history * 16.0 / 9.0, 600) > 0.6


def test_nothing_tested_gives_nan() -> None:
    fit, annihilator = _design(4)
    council = council_noise_drift(
        annihilator, fit.rows, fit.residuals, np.ones(4), np.full(4, 10.0), np.zeros(4, bool)
    )
    assert math.isnan(council.p_value) and math.isnan(council.ratio)
    bad = council_noise_drift(
        annihilator,
        fit.rows,
        fit.residuals,
        np.full(4, math.nan),
        np.full(4, 10.0),
        np.ones(4, bool),
    )
    assert math.isnan(bad.p_value)


def test_a_reviewers_noise_given_the_others_is_unbiased_where_rss_over_df_is_not() -> None:
    # E RSS_r = sum_r' A_rr' sigma_r'^2 (Rao 1970), so with the others' variances exact,
    # (RSS_r - sum_{r' != r} A_rr' sigma_r'^2) / A_rr has mean sigma_r^2; checked on a
    # 40,000-draw Monte Carlo of a 5-member session with a missing cell, where judge 0
    # (SD 2) sits among quiet judges and RSS_0 / d_0 understates it
    fit, annihilator = _design(5, missing=((0, 3),))
    variances = np.array([4.0, 0.25, 0.5, 1.0, 0.25])
    rng = np.random.default_rng(11)
    draws = rng.standard_normal((40_000, fit.observed.size)) * np.sqrt(variances[fit.rows])
    estimates = np.array(
        [
            reviewer_noise_given_others(annihilator, fit.rows, annihilator @ e, variances)
            for e in draws[:4000]
        ]
    )
    # the formula by hand from Rao's A (an independent route to the same expectation)
    coefficients = reviewer_noise_expectation(fit)
    residuals = draws @ annihilator.T
    sums = np.stack([np.sum(residuals[:, fit.rows == r] ** 2, axis=1) for r in range(5)], axis=1)
    own = np.diag(coefficients)
    by_hand = (sums - (coefficients @ variances - own * variances)) / own
    np.testing.assert_allclose(estimates, by_hand[:4000], rtol=1e-9, atol=1e-12)
    standard_error = by_hand.std(axis=0) / math.sqrt(by_hand.shape[0])
    assert np.all(np.abs(by_hand.mean(axis=0) - variances) < 4.0 * standard_error)
    _, shares = reviewer_residual_variances(fit)
    naive = sums[:, 0].mean() / shares[0]
    assert naive < 0.8 * variances[0]  # RSS_0 / d_0 understates the noisy judge


def test_a_reviewer_without_residual_information_has_no_estimate() -> None:
    fit, annihilator = _design(3)
    estimates = reviewer_noise_given_others(annihilator, fit.rows, fit.residuals, np.ones(4))
    assert math.isnan(estimates[3])  # reviewer 3 has no cell in the fit
    assert np.all(np.isfinite(estimates[:3]))


@pytest.mark.parametrize("nudge", [-1e-15, 1e-15])
def test_a_tie_goes_to_the_lowest_index_whatever_the_last_bits(
    nudge: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ADR 0095: three reviewers with the same residuals and the same history tie exactly;
    BLAS kernels leave their p-values ~1e-15 apart in either order, and the first reviewer
    moved used to follow those bits (a 3-member council's audit then read a pooled
    self-preference of -0.24 on one CPU and +0.24 on another)."""
    import llm_council.stats.reviewers.noise_drift as noise_drift

    exact = noise_drift.variance_ratio_p_value

    def rounded(ratio: float, numerator_df: float, denominator_df: float, **kw: str) -> float:
        p_value = exact(ratio, numerator_df, denominator_df, **kw)
        return p_value * (1.0 + nudge * calls.pop(0))

    calls = [0.0, 1.0, 2.0] * 4  # reviewer 2 lowest with a negative nudge, 0 with a positive
    monkeypatch.setattr(noise_drift, "variance_ratio_p_value", rounded)
    drift = step_down_noise_drift(
        np.eye(6),
        np.array([0, 0, 1, 1, 2, 2]),
        np.full(6, 2.0),  # RSS 8 each against an expectation of 2 x 1: a ratio of 4
        np.ones(3),
        np.full(3, 10.0),
        np.ones(3),
        np.ones(3, dtype=bool),
        level=0.2,
    )
    assert drift.moved[0] == 0


def test_clearly_below_needs_more_than_the_tolerance() -> None:
    assert clearly_below(0.1, 0.2)
    assert not clearly_below(0.1 * (1 - TIE_TOLERANCE / 2), 0.1)
    assert clearly_below(0.1 * (1 - 2 * TIE_TOLERANCE), 0.1)
    assert not clearly_below(0.2, 0.1)
