"""The report-wide multiplicity procedures against hand derivations, brute force and scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import false_discovery_control

from llm_council.stats.multiplicity import holm_adjusted
from llm_council.stats.report_multiplicity import (
    benjamini_yekutieli_adjusted,
    family_holm_adjusted,
)


def closed_test_adjusted(p: list[float], families: list[str]) -> list[float]:
    """Brute force: max over every intersection holding i of its weighted-Bonferroni p-value.

    The local test of the intersection I rejects at alpha when min_j p_j / w_j(I) <= alpha,
    w_j(I) = 1 / (families touched by I x members of I in j's family); its p-value is that
    minimum (capped at 1). Closed testing rejects H_i at alpha when every I holding i is
    rejected, so i's adjusted p-value is the largest local p over those I.
    """
    n = len(p)
    adjusted = [0.0] * n
    for size in range(1, n + 1):
        for subset in itertools.combinations(range(n), size):
            touched = {families[j] for j in subset}
            local = min(
                p[j] * len(touched) * sum(families[k] == families[j] for k in subset)
                for j in subset
            )
            for i in subset:
                adjusted[i] = max(adjusted[i], min(1.0, local))
    return adjusted


def test_family_holm_matches_a_hand_derivation() -> None:
    # A: 0.001, 0.02, 0.04; B: 0.01; C: 0.03, 0.5. Steps (p x families left x members left):
    # 1) A 0.001*3*3=0.009 (B 0.03, C 0.18)       -> A1 0.009
    # 2) B 0.01*3*1=0.03 (A 0.02*3*2=0.12)          -> B1 0.03
    # 3) B exhausted: A 0.02*2*2=0.08, C 0.03*2*2=0.12 -> A2 0.08
    # 4) A 0.04*2*1=0.08                             -> A3 max(0.08, 0.08) = 0.08
    # 5) C alone: 0.03*1*2=0.06                      -> C1 max(0.08, 0.06) = 0.08
    # 6) C 0.5*1*1                                   -> C2 0.5
    p = [0.001, 0.02, 0.04, 0.01, 0.03, 0.5]
    families = ["A", "A", "A", "B", "C", "C"]
    expected = [0.009, 0.08, 0.08, 0.03, 0.08, 0.5]
    assert family_holm_adjusted(p, families) == pytest.approx(expected)
    assert closed_test_adjusted(p, families) == pytest.approx(expected)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 1.0), st.sampled_from("abc")),
        min_size=1,
        max_size=7,
    )
)
def test_family_holm_is_the_closed_test(cells: list[tuple[float, str]]) -> None:
    p = [value for value, _ in cells]
    families = [family for _, family in cells]
    assert family_holm_adjusted(p, families) == pytest.approx(closed_test_adjusted(p, families))


def test_family_holm_reduces_to_holm() -> None:
    p = np.array([0.004, 0.03, 0.01, 0.2, 0.011])
    assert family_holm_adjusted(p, ["one"] * 5) == pytest.approx(holm_adjusted(p))
    assert family_holm_adjusted(p, list(range(5))) == pytest.approx(holm_adjusted(p))


def test_family_holm_leaves_untested_out() -> None:
    # the NaN neither counts in its family nor gets a value; family "x" is then empty
    adjusted = family_holm_adjusted([0.01, np.nan, 0.02, np.nan], ["a", "a", "b", "x"])
    # a: 0.01*2*1 = 0.02, then b: 0.02*1*1 = 0.02
    assert adjusted[[0, 2]] == pytest.approx([0.02, 0.02])
    assert np.isnan(adjusted[[1, 3]]).all()
    assert family_holm_adjusted([], []).size == 0
    with pytest.raises(ValueError, match="2 p-values but 1 family labels"):
        family_holm_adjusted([0.1, 0.2], ["a"])


def test_benjamini_yekutieli_matches_scipy_and_a_hand_value() -> None:
    # four p-values 0.01..0.04: BH gives 4 p_(i) / i = 0.04 each; c(4) = 25/12
    assert benjamini_yekutieli_adjusted([0.01, 0.02, 0.03, 0.04]) == pytest.approx(
        [25 / 12 * 0.04] * 4
    )
    rng = np.random.default_rng(3)
    p = rng.uniform(size=40) ** 3
    assert benjamini_yekutieli_adjusted(p) == pytest.approx(false_discovery_control(p, method="by"))


def test_benjamini_yekutieli_leaves_untested_out() -> None:
    adjusted = benjamini_yekutieli_adjusted([0.01, np.nan, 0.04])
    # m = 2, c = 1.5: 0.04*1.5*2/2 = 0.06; 0.01*1.5*2/1 = 0.03
    assert adjusted[[0, 2]] == pytest.approx([0.03, 0.06])
    assert np.isnan(adjusted[1])
