"""Wilson interval and sign test against published values and scipy."""

from __future__ import annotations

import math

import pytest
from scipy import stats as scipy_stats

from llm_council.stats.inference.proportions import sign_test_p_value, wilson_interval


@pytest.mark.parametrize(
    ("successes", "n", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, Table I, method 3 (Wilson score)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0000, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_matches_newcombe_table(
    successes: int, n: int, low: float, high: float
) -> None:
    got_low, got_high = wilson_interval(successes, n)
    assert got_low == pytest.approx(low, abs=5e-5)
    assert got_high == pytest.approx(high, abs=5e-5)


@pytest.mark.parametrize(("successes", "n"), [(3, 10), (47, 50), (500, 1000), (10, 10)])
def test_wilson_interval_matches_scipy(successes: int, n: int) -> None:
    reference = scipy_stats.binomtest(successes, n).proportion_ci(0.9, method="wilson")
    low, high = wilson_interval(successes, n, confidence=0.9)
    assert low == pytest.approx(reference.low, abs=1e-9)
    assert high == pytest.approx(reference.high, abs=1e-9)


def test_wilson_interval_empty_is_nan_and_bad_counts_raise() -> None:
    assert all(math.isnan(x) for x in wilson_interval(0, 0))
    with pytest.raises(ValueError, match="successes=5, n=3"):
        wilson_interval(5, 3)


def test_sign_test_p_value_hand_derivation() -> None:
    # 0 of 5 under p = 1/2: two-sided P = 2 * (1/2)^5 = 0.0625
    assert sign_test_p_value(0, 5) == pytest.approx(0.0625)
    # 5 of 10 is the centre: P = 1
    assert sign_test_p_value(5, 10) == pytest.approx(1.0)
    assert sign_test_p_value(0, 0) == 1.0
