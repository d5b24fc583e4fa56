"""The weighted slot Wald test against an independent derivation and its null rate."""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

from llm_council.stats.additive_model import fit_additive_two_way
from llm_council.stats.slot_wald import slot_wald_test


def _session(
    rng: np.random.Generator, n: int, slot_a: float, sds: np.ndarray, *, shared: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Design, scores, slots and per-cell variances of one council, self-reviews left out."""
    quality = rng.normal(0.0, 1.5, n)
    table = np.full((n, n), np.nan)
    slot_table = np.full((n, n), -1)
    shared_order = rng.permutation(n)
    for r in range(n):
        order = shared_order if shared else rng.permutation(n)
        for slot, c in enumerate(order.tolist()):
            if c == r:
                continue
            table[r, c] = quality[c] + slot_a * (slot == 0) + sds[r] * rng.standard_normal()
            slot_table[r, c] = slot
    fit = fit_additive_two_way(table)
    assert fit is not None
    slots = slot_table[fit.rows, fit.columns]
    return fit.design, fit.observed, slots, sds[fit.rows] ** 2


def _weighted_rss(design: np.ndarray, y: np.ndarray, weights: np.ndarray) -> float:
    root = np.sqrt(weights)
    solution, *_ = np.linalg.lstsq(design * root[:, None], y * root, rcond=None)
    residual = (y - design @ solution) * root
    return float(residual @ residual)


def test_the_statistic_is_the_weighted_extra_sum_of_squares() -> None:
    # Known variances: the Wald statistic of the slot effects equals the drop in the
    # weighted residual sum of squares when the slot indicators are added (the extra sum
    # of squares principle; Searle 1987, sec. 6), computed here by two plain lstsq fits.
    rng = np.random.default_rng(3)
    sds = np.array([0.5, 0.8, 1.1, 1.3, 1.5])
    design, y, slots, variances = _session(rng, 5, 1.0, sds)
    result = slot_wald_test(design, y, slots, variances, math.inf)
    assert result is not None
    values = np.unique(slots)
    indicators = (slots[:, None] == values[None, 1:]).astype(float)
    weights = 1.0 / variances
    extra = _weighted_rss(design, y, weights) - _weighted_rss(
        np.hstack([design, indicators]), y, weights
    )
    k = values.size - 1
    assert result.numerator_df == k
    assert math.isclose(result.statistic * k, extra, rel_tol=1e-9)
    assert math.isclose(result.p_value, stats.chi2.sf(extra, k), rel_tol=1e-9)
    # with estimated variances the same statistic is referred to F(k, nu)
    finite = slot_wald_test(design, y, slots, variances, 12.0)
    assert finite is not None
    assert math.isclose(finite.p_value, stats.f.sf(extra / k, k, 12.0), rel_tol=1e-9)
    # effects are centred: the count-weighted mean is 0
    weighted_mean = sum(result.effects[s] * result.counts[s] for s in result.counts)
    assert abs(weighted_mean) < 1e-9


def test_the_null_rate_is_the_level_and_a_slot_effect_is_found() -> None:
    rng = np.random.default_rng(11)
    sds = np.linspace(0.5, 1.5, 5)
    null_p = [slot_wald_test(*_session(rng, 5, 0.0, sds), math.inf) for _ in range(1500)]
    biased_p = [slot_wald_test(*_session(rng, 5, 2.0, sds), math.inf) for _ in range(1500)]
    # a few random order sets confound slots with answers: those are not tested
    tested = [result.p_value for result in null_p if result is not None]
    powered = [result.p_value for result in biased_p if result is not None]
    assert len(tested) > 1400 and len(powered) > 1400
    runs = len(tested)
    rejections = sum(p < 0.05 for p in tested)
    # ~1500 runs: binomial SE of 5% is 0.56%, so 3.3%-6.7% is 3 SE either side
    assert 0.033 < rejections / runs < 0.067
    # known noise, 5 members, +2 on slot A: about 71% (the ceiling ADR 0047 quotes)
    assert 0.62 < sum(p < 0.05 for p in powered) / len(powered) < 0.80


def test_no_test_where_the_design_or_the_variances_do_not_allow_one() -> None:
    rng = np.random.default_rng(2)
    sds = np.ones(4)
    design, y, slots, variances = _session(rng, 4, 2.0, sds, shared=True)
    # one shared order: slots are the answers' own effects, not identified
    assert slot_wald_test(design, y, slots, variances, math.inf) is None
    design, y, slots, variances = _session(rng, 4, 2.0, sds)
    bad = variances.copy()
    bad[0] = 0.0
    assert slot_wald_test(design, y, slots, bad, math.inf) is None
    bad[0] = math.nan
    assert slot_wald_test(design, y, slots, bad, math.inf) is None
    assert slot_wald_test(design, y, np.zeros_like(slots), variances, math.inf) is None
    assert slot_wald_test(design, y, slots, variances, 0.0) is None
    assert slot_wald_test(design, y[:-1], slots, variances, math.inf) is None
