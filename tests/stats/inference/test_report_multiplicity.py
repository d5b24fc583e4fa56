"""The report-wide multiplicity procedures against hand derivations, brute force and scipy."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import false_discovery_control

from llm_council.stats.inference.multiplicity import holm_adjusted
from llm_council.stats.inference.report_multiplicity import (
    benjamini_yekutieli_adjusted,
    family_holm_adjusted,
)


def closed_test_adjusted(
    p: list[float], families: list[str], weights: dict[str, float] | None = None
) -> list[float]:
    """Brute force: max over every intersection holding i of its weighted-Bonferroni p-value.

    The local test of the intersection I rejects at alpha when min_j p_j / w_j(I) <= alpha,
    w_j(I) = (v_f / sum of v over the families touched by I) / (members of I in j's family
    f), v a family's weight (1 when not given); its p-value is that minimum (capped at 1).
    Closed testing rejects H_i at alpha when every I holding i is rejected, so i's adjusted
    p-value is the largest local p over those I.
    """
    weight = dict.fromkeys(families, 1.0) | (weights or {})
    n = len(p)
    adjusted = [0.0] * n
    for size in range(1, n + 1):
        for subset in itertools.combinations(range(n), size):
            total = sum(weight[family] for family in {families[j] for j in subset})
            local = min(
                p[j] * sum(families[k] == families[j] for k in subset) * total / weight[families[j]]
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


def test_weighted_family_holm_matches_a_hand_derivation() -> None:
    # A (weight 3): 0.01, 0.04; B (1): 0.002; C (1): 0.3. Step products are
    # p x members left x (weights of the families left / own weight):
    # 1) total 5: A 0.01*2*5/3 = 0.0333, B 0.002*1*5 = 0.01, C 1.5   -> B1 0.01
    # 2) total 4: A 0.01*2*4/3 = 0.02667, C 0.3*4 = 1.2             -> A1 0.02667
    # 3) total 4: A 0.04*1*4/3 = 0.05333                            -> A2 0.05333
    # 4) total 1: C 0.3                                             -> C1 0.3
    # Equal weights: B 0.002*3 = 0.006, then A 0.01*2*2 = 0.04, then A2 0.04*1*2 = 0.08
    # (no finding at 5%): the weight is the gain.
    p = [0.01, 0.04, 0.002, 0.3]
    families = ["A", "A", "B", "C"]
    weights = {"A": 3.0, "B": 1.0, "C": 1.0}
    expected = [0.08 / 3, 0.16 / 3, 0.01, 0.3]
    assert family_holm_adjusted(p, families, weights) == pytest.approx(expected)
    assert closed_test_adjusted(p, families, weights) == pytest.approx(expected)
    assert family_holm_adjusted(p, families)[:2] == pytest.approx([0.04, 0.08])


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 1.0), st.sampled_from("abc")),
        min_size=1,
        max_size=7,
    ),
    st.tuples(*[st.floats(0.05, 20.0)] * 3),
)
def test_weighted_family_holm_is_the_closed_test(
    cells: list[tuple[float, str]], raw_weights: tuple[float, float, float]
) -> None:
    p = [value for value, _ in cells]
    families = [family for _, family in cells]
    weights = dict(zip("abc", raw_weights, strict=True))
    assert family_holm_adjusted(p, families, weights) == pytest.approx(
        closed_test_adjusted(p, families, weights)
    )


def test_weighted_family_holm_holds_its_error_rate_under_the_global_null() -> None:
    """Monte Carlo: 20,000 reports of independent uniform p-values in four families of
    unequal size and weight; the share with any adjusted p <= 0.05 stays <= 5% + 3 se
    (Bonferroni's bound is exact for the first rejection: sum of the weights = 1)."""
    rng = np.random.default_rng(60)
    families = ["a"] * 5 + ["b"] + ["c"] * 25 + ["d"]
    weights = {"a": 1.0, "b": 6.0, "c": 0.5, "d": 6.0}
    p = rng.uniform(size=(20_000, len(families)))
    # the first rejection decides "any finding": min over j of p_j / w_j(all), the
    # weighted Bonferroni local test of the global null
    share = np.array([weights[f] / 13.5 / families.count(f) for f in families])
    any_finding = (p / share).min(axis=1) <= 0.05
    assert any_finding.mean() <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / 20_000)
    assert any_finding.mean() >= 0.05 - 3 * np.sqrt(0.05 * 0.95 / 20_000)  # and uses it all
    some = family_holm_adjusted(p[0], families, weights)
    assert (some.min() <= 0.05) == any_finding[0]


def test_family_weights_must_be_positive() -> None:
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="family weight of 'a'"):
            family_holm_adjusted([0.1], ["a"], {"a": bad})


def test_an_untested_family_takes_no_share() -> None:
    # weights name a family the report did not test: it is not in the total
    assert family_holm_adjusted([0.01], ["a"], {"a": 1.0, "z": 100.0}) == pytest.approx([0.01])
    # and NaN-only families neither
    adjusted = family_holm_adjusted([0.01, np.nan], ["a", "z"], {"a": 1.0, "z": 100.0})
    assert adjusted[0] == pytest.approx(0.01)


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
