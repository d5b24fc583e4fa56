"""The anytime monitor's e-process, confidence sequence and learnt noise (stats/monitor/anytime_monitor.py)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
from scipy import integrate, stats

from llm_council.stats.monitor.anytime_monitor import (
    MonitorSettings,
    MonitorSums,
    boundary_excess,
    cells_estimated,
    cells_log_threshold,
    combined_log_e,
    confidence_sequence,
    fold_session,
    learnt_noise_variance,
    log_e_above,
    log_e_values,
    log_threshold,
)

#: known noise: the learnt scale is 1 (both priors weigh 1e12 df at tau0 = 1; the
#: small-sample inflation nu / (nu - 1) is then 1 + 1e-12)
KNOWN_NOISE = MonitorSettings(prior_noise_sd=1.0, prior_noise_df=1e12, pooled_prior_df=1e12)


def _mixture_by_quadrature(s: float, v: float, rho: float) -> float:
    """The definition: integral over theta >= 0 of exp(theta S - theta^2 V / 2) times the
    half-normal density 2 phi(theta; 0, rho)."""

    def integrand(theta: float) -> float:
        return (
            math.exp(theta * s - theta * theta * v / 2.0)
            * 2.0
            * stats.norm.pdf(theta, scale=math.sqrt(rho))
        )

    value, _ = integrate.quad(integrand, 0.0, np.inf, limit=200)
    return value


@pytest.mark.parametrize(
    ("s", "v", "rho"),
    [(0.0, 1.0, 0.25), (3.0, 10.0, 0.25), (-4.0, 10.0, 0.25), (12.0, 40.0, 1.0), (5.0, 2.0, 0.1)],
)
def test_the_closed_form_mixture_equals_its_integral(s: float, v: float, rho: float) -> None:
    assert math.exp(float(log_e_above(s, v, rho))) == pytest.approx(
        _mixture_by_quadrature(s, v, rho), rel=1e-7
    )


def _centred_mixture_by_quadrature(s: float, v: float, rho: float, m: float) -> float:
    """The definition with the prior N(m, rho) cut to theta >= 0 (renormalised)."""
    mass = stats.norm.sf(0.0, loc=m, scale=math.sqrt(rho))

    def integrand(theta: float) -> float:
        density = stats.norm.pdf(theta, loc=m, scale=math.sqrt(rho)) / mass
        return math.exp(theta * s - theta * theta * v / 2.0) * density

    near, _ = integrate.quad(integrand, 0.0, m, limit=400)
    far, _ = integrate.quad(integrand, m, np.inf, limit=400)
    return near + far


@pytest.mark.parametrize(
    ("s", "v", "rho", "m"),
    [
        (0.0, 1.0, 0.03, 0.5),
        (3.0, 10.0, 0.03, 0.5),
        (-4.0, 10.0, 0.0625, 0.5),
        (12.0, 40.0, 0.03, 0.5),
        (5.0, 2.0, 0.25, 0.2),
        (20.0, 60.0, 0.03, 1.0),
    ],
)
def test_the_centred_mixture_equals_its_integral(s: float, v: float, rho: float, m: float) -> None:
    assert math.exp(float(log_e_above(s, v, rho, m))) == pytest.approx(
        _centred_mixture_by_quadrature(s, v, rho, m), rel=1e-7
    )


def test_the_centred_mixture_by_hand() -> None:
    # rho = 0.25, m = 0.5, V = 0, S = 0: every integrand is 1, so E = 1
    assert float(log_e_above(0.0, 0.0, 0.25, 0.5)) == pytest.approx(0.0, abs=1e-12)
    # S = 4, V = 12, rho = 0.25, m = 0.5: a = 4, b = 4 + 2 = 6,
    # log E = -log 2 + 0.25 * 36 / 8 - 0.25 / 0.5 + log Phi(6 * 0.25) - log Phi(1)
    expected = (
        -math.log(2.0) + 1.125 - 0.5 + math.log(stats.norm.cdf(1.5)) - math.log(stats.norm.cdf(1.0))
    )
    assert float(log_e_above(4.0, 12.0, 0.25, 0.5)) == pytest.approx(expected, rel=1e-12)


def test_the_default_prior_is_centred_on_one_point() -> None:
    # the effect that matters, 1 point, is delta0 + 0.5: the prior's centre; SD ~0.17
    settings = MonitorSettings()
    assert settings.delta0 + settings.prior_mean == pytest.approx(1.0)
    assert math.sqrt(settings.prior_scale) == pytest.approx(0.173, abs=1e-3)


def test_the_bonferroni_count_is_the_cells_ever_estimated() -> None:
    n = np.array([[[3, 0, 3], [3, 0, 3], [3, 0, 2]], [[0, 0, 0], [0, 0, 0], [0, 0, 0]]])
    assert cells_estimated(n).tolist() == [6, 1]
    np.testing.assert_allclose(
        cells_log_threshold(0.05, n)[:, 0, 0], [math.log(120.0), math.log(20.0)]
    )
    # fold_session's default threshold: two cells estimated, log(2 / 0.05)
    sums = fold_session(MonitorSums.empty((1, 2)), [[9.0, 9.0]], [[1.0, 1.0]], KNOWN_NOISE)
    explicit = fold_session(
        MonitorSums.empty((1, 2)), [[9.0, 9.0]], [[1.0, 1.0]], KNOWN_NOISE, math.log(40.0)
    )
    assert sums.confirmed_at.tolist() == explicit.confirmed_at.tolist()
    assert sums.peak_log_e[0, 0] == pytest.approx(explicit.peak_log_e[0, 0])


def test_hand_values_of_the_mixture() -> None:
    # S = 0: 2 / sqrt(1 + rho V) * Phi(0) = (1 + rho V)^(-1/2); V = 0: 2 Phi(0) = 1
    assert float(log_e_above(0.0, 12.0, 0.25)) == pytest.approx(-0.5 * math.log(4.0))
    assert float(log_e_above(0.0, 0.0, 0.25)) == pytest.approx(0.0)
    # S = 4, V = 12, rho = 0.25: a = 4; log 2 - log 2 + 0.25*16/8 + log Phi(4 * 0.25)
    expected = 0.5 + math.log(stats.norm.cdf(1.0))
    assert float(log_e_above(4.0, 12.0, 0.25)) == pytest.approx(expected, rel=1e-12)


def test_the_two_sides_mirror_and_their_mean_is_the_combined_e_value() -> None:
    sides = log_e_values([3.0, -3.0], [10.0, 10.0], 0.2, 0.25)
    assert sides[0, 0] == pytest.approx(sides[1, 1]) and sides[0, 1] == pytest.approx(sides[1, 0])
    mean = (math.exp(sides[0, 0]) + math.exp(sides[0, 1])) / 2.0
    assert float(combined_log_e(sides[0])) == pytest.approx(math.log(mean))


def test_threshold_is_bonferroni_over_reviewers_and_biases() -> None:
    assert log_threshold(0.05, 3, 3) == pytest.approx(math.log(180.0))
    assert log_threshold(0.05, 5, 3) == pytest.approx(math.log(300.0))


def test_the_boundary_is_the_root_of_the_one_sided_e_value() -> None:
    v = np.array([0.5, 5.0, 50.0, 500.0])
    target = math.log(2.0 * 9 / 0.05)
    root = boundary_excess(v, 0.25, target)
    np.testing.assert_allclose(log_e_above(root, v, 0.25), target, atol=1e-9)
    # below the two-sided mixture's closed-form boundary (Howard et al. 2021, eq. 3.5-ish:
    # sqrt((1 + rho V)(2 log(1/alpha') + log(1 + rho V)) / rho)), since Phi >= 1/2 for S >= 0
    a = 1.0 + 0.25 * v
    two_sided = np.sqrt(a * (2.0 * target + np.log(a)) / 0.25)
    assert (root < two_sided).all() and (root > 0.5 * two_sided).all()


@pytest.mark.parametrize("m", [0.2, 0.5, 2.0])
def test_the_boundary_root_with_a_centred_prior(m: float) -> None:
    v = np.array([0.5, 5.0, 50.0, 500.0, 5000.0])
    target = math.log(2.0 * 6 / 0.05)
    root = boundary_excess(v, 0.03, target, m)
    np.testing.assert_allclose(log_e_above(root, v, 0.03, m), target, atol=1e-9)
    assert (root > 0).all()


def test_the_confidence_sequence_is_centred_and_infinite_without_data() -> None:
    low, high = confidence_sequence([10.0, 0.0], [20.0, 0.0], 0.25, math.log(40.0))
    assert low[0] < 0.5 < high[0] and (low[0] + high[0]) / 2 == pytest.approx(0.5)
    assert low[1] == -np.inf and high[1] == np.inf


def test_learnt_noise_by_hand() -> None:
    # one reviewer, one bias, x = 1 and 3 with k = 1: RSS = 2 on 1 df
    sums = MonitorSums.empty((1, 1))
    settings = MonitorSettings()  # tau0 = 1.5, d1 = 2, d0 = 12
    assert settings.pooled_prior_df == 12.0
    for x in (1.0, 3.0):
        sums = fold_session(sums, [[x]], [[1.0]], settings, 100.0)
    pooled = (2 * 2.25 + 2.0) / (2 + 1)  # 2.1667
    cell = (12 * pooled + 2.0) / (12 + 1)
    inflated = cell * 13 / 12  # nu' = 13
    assert float(learnt_noise_variance(sums, settings)[0, 0]) == pytest.approx(inflated)
    # before any data: the prior tau0^2 inflated by nu' / (nu' - 1) = 12 / 11
    empty = MonitorSums.empty((1, 1))
    assert float(learnt_noise_variance(empty, settings)[0, 0]) == pytest.approx(2.25 * 12 / 11)


def test_the_first_weights_use_only_earlier_sessions() -> None:
    # the first session's weight is the prior's, whatever its own estimate
    settings = MonitorSettings()
    one = fold_session(MonitorSums.empty((1,)), [5.0], [2.0], settings, 100.0)
    other = fold_session(MonitorSums.empty((1,)), [-7.0], [2.0], settings, 100.0)
    assert one.precision[0] == other.precision[0] == pytest.approx(1.0 / (2.0 * 2.25 * 12 / 11))


def test_missing_cells_leave_the_sums_alone_and_confirmation_sticks() -> None:
    settings = KNOWN_NOISE
    sums = MonitorSums.empty((2,))
    threshold = math.log(20.0)
    for _ in range(40):
        sums = fold_session(sums, [2.0, np.nan], [1.0, 1.0], settings, threshold)
    assert sums.n.tolist() == [40, 0] and sums.precision[1] == 0.0
    at = int(sums.confirmed_at[0])
    assert 0 < at < 40
    # the effect disappears: the confirmation stays, with its session count
    for _ in range(200):
        sums = fold_session(sums, [0.0, np.nan], [1.0, 1.0], settings, threshold)
    assert int(sums.confirmed_at[0]) == at


@pytest.mark.parametrize(
    "field", ["delta0", "alpha", "prior_scale", "prior_mean", "prior_noise_sd", "prior_noise_df"]
)
def test_bad_settings_name_the_field(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        MonitorSettings(**{field: math.nan})
    with pytest.raises(ValueError, match="alpha"):
        MonitorSettings(alpha=1.0)


def _first_crossings(
    mean: float, delta0: float, n_streams: int, n_sessions: int, seed: int
) -> np.ndarray:
    """Known-variance normal estimates (k = 1) of ``mean``; each stream's confirmation
    session (0: never) at alpha = 0.05 for one (reviewer, bias)."""
    rng = np.random.default_rng(seed)
    settings = MonitorSettings(
        delta0=delta0, prior_noise_sd=1.0, prior_noise_df=1e12, pooled_prior_df=1e12
    )
    sums = MonitorSums.empty((n_streams, 1))
    threshold = math.log(1 / 0.05)
    for _ in range(n_sessions):
        x = mean + rng.standard_normal((n_streams, 1))
        sums = fold_session(sums, x, np.ones_like(x), settings, threshold)
    return sums.confirmed_at[:, 0]


def test_monte_carlo_level_at_the_boundary_of_the_null() -> None:
    # the worst case of |mu| <= delta0: mu = delta0 exactly. Ville: P(ever) <= alpha = 5%;
    # 2000 streams of 500 sessions, SE of a 5% rate 0.49%
    crossed = _first_crossings(0.5, 0.5, 2000, 500, seed=11) > 0
    assert crossed.mean() <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / 2000)
    assert crossed.mean() > 0.005  # the threshold can fire: it is not vacuous


def test_monte_carlo_inside_the_null_is_rarer_and_outside_is_found() -> None:
    inside = _first_crossings(0.3, 0.5, 1000, 500, seed=12) > 0
    assert inside.mean() <= 0.01
    outside = _first_crossings(1.0, 0.5, 500, 200, seed=13)
    # drift 0.5 a session, unit noise: log E ~ S^2 / 2V - log(rho V)/2 reaches log 20 near
    # n = 30; every stream crosses within 200
    assert (outside > 0).all() and 15 <= float(np.median(outside)) <= 50


def test_the_learnt_noise_of_one_table_in_python_floats_equals_the_array_path_bit_for_bit() -> None:
    """``learnt_noise_rows`` (one session's table, ADR 0053 fourth amendment) against the
    array formula on a batch axis, which keeps the numpy path: random sums with empty cells,
    cells of one session (no df), zero residuals and varied settings."""
    rng = np.random.default_rng(2026)
    for trial in range(300):
        shape = (int(rng.integers(1, 10)), 3)
        n = rng.integers(0, 40, size=shape) * (rng.random(shape) > 0.2)
        inv_k = np.where(n > 0, rng.random(shape) * n * 2.0, 0.0)
        x_over_k = np.where(n > 0, rng.normal(0, 3, shape) * inv_k, 0.0)
        spread = np.where(rng.random(shape) > 0.1, rng.random(shape) * 5.0, 0.0)
        x2_over_k = np.where(n > 0, x_over_k**2 / np.where(inv_k > 0, inv_k, 1.0) + spread * n, 0.0)
        sums = replace(
            MonitorSums.empty(shape),
            n=n.astype(np.int64),
            inv_k_sum=inv_k,
            x_over_k_sum=x_over_k,
            x2_over_k_sum=x2_over_k,
        )
        settings = MonitorSettings(
            prior_noise_df=float(rng.choice([0.0, 2.0, 3.5])),
            prior_noise_sd=float(rng.uniform(0.2, 2.0)),
            pooled_prior_df=float(rng.choice([0.0, 1.0, 12.0])),
        )
        batched = replace(
            sums,
            **{
                name: getattr(sums, name)[None]
                for name in ("n", "inv_k_sum", "x_over_k_sum", "x2_over_k_sum")
            },
        )
        by_rows = learnt_noise_variance(sums, settings)
        by_arrays = learnt_noise_variance(batched, settings)[0]
        assert by_rows.shape == shape
        np.testing.assert_array_equal(by_rows, by_arrays, err_msg=f"trial {trial}")
