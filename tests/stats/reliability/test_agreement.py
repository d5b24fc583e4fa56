"""Cohen's kappa and its Fleiss-Cohen-Everitt standard error against hand derivations."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_council.stats.reliability.agreement import (
    agreement_table,
    cohen_kappa,
    cohen_kappa_from_table,
    landis_koch_label,
)


def test_kappa_and_standard_error_hand_derivation() -> None:
    # table [[20, 5], [10, 15]], n = 50
    # p_o = 35/50 = 0.70; rows (0.5, 0.5), cols (0.6, 0.4); p_e = 0.5*0.6 + 0.5*0.4 = 0.50
    # kappa = (0.70 - 0.50) / (1 - 0.50) = 0.40
    # FCE (1969) variance numerator, with 1 - kappa = 0.6:
    #   diagonal: 0.4*(1 - 1.1*0.6)^2 + 0.3*(1 - 0.9*0.6)^2 = 0.04624 + 0.06348 = 0.10972
    #   off-diag: 0.36 * (0.1*(0.6+0.5)^2 + 0.2*(0.4+0.5)^2) = 0.36 * 0.283 = 0.10188
    #   minus (0.4 - 0.5*0.6)^2 = 0.01            -> 0.2016
    # variance = 0.2016 / (50 * 0.5^2) = 0.016128; SE = 0.126996
    result = cohen_kappa_from_table([[20, 5], [10, 15]])
    assert result.kappa == pytest.approx(0.40)
    assert result.observed_agreement == pytest.approx(0.70)
    assert result.expected_agreement == pytest.approx(0.50)
    assert result.standard_error == pytest.approx(math.sqrt(0.016128), rel=1e-9)
    assert result.ci_low == pytest.approx(0.40 - 1.959964 * 0.126996, abs=1e-5)
    assert result.n == 50


def test_kappa_three_categories_hand_derivation() -> None:
    # rater 1: a a b b t t a b ; rater 2: a b b b t a a b  (n = 8)
    # agreements: items 1,3,4,5,7,8 -> p_o = 6/8 = 0.75
    # rater 1 marginals a 3/8, b 3/8, t 2/8; rater 2: a 3/8, b 4/8, t 1/8
    # p_e = (9 + 12 + 2)/64 = 23/64; kappa = (0.75 - 23/64)/(1 - 23/64) = (25/64)/(41/64) = 25/41
    first = list("aabbttab")
    second = list("abbbtaab")
    result = cohen_kappa(first, second, categories=["a", "b", "t"])
    assert result.kappa == pytest.approx(25 / 41)


def test_kappa_undefined_when_one_category_only() -> None:
    result = cohen_kappa(["a", "a"], ["a", "a"], categories=["a", "b"])
    assert math.isnan(result.kappa)
    assert result.observed_agreement == 1.0
    assert landis_koch_label(result.kappa) == "undefined"


def test_agreement_table_rejects_unknown_category() -> None:
    with pytest.raises(ValueError, match="'x'"):
        agreement_table(["a", "x"], ["a", "a"], ["a", "b"])


@pytest.mark.parametrize(
    ("kappa", "word"),
    [
        (-0.1, "poor"),
        (0.0, "slight"),
        (0.2, "slight"),
        (0.35, "fair"),
        (0.6, "moderate"),
        (0.7, "substantial"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
    ],
)
def test_landis_koch_bands(kappa: float, word: str) -> None:
    assert landis_koch_label(kappa) == word


@given(st.lists(st.tuples(st.sampled_from("abt"), st.sampled_from("abt")), min_size=1, max_size=60))
def test_kappa_is_symmetric_and_bounded(items: list[tuple[str, str]]) -> None:
    first = [x for x, _ in items]
    second = [y for _, y in items]
    forward = cohen_kappa(first, second, "abt")
    backward = cohen_kappa(second, first, "abt")
    if math.isnan(forward.kappa):
        assert math.isnan(backward.kappa)
    else:
        assert forward.kappa == pytest.approx(backward.kappa)
        assert -1.0 <= forward.kappa <= 1.0
        assert forward.standard_error >= 0.0


def test_weighted_kappa_by_hand_and_against_the_unweighted_formula():
    import numpy as np

    from llm_council.stats.reliability.agreement import (
        _kappa_with_weights,
        cohen_kappa_from_table,
        weighted_kappa_from_table,
    )

    table = np.array([[20, 5, 1], [4, 10, 3], [2, 6, 25]], dtype=float)
    # hand derivation (linear weights 1, 0.5, 0): n = 76; p_o = (20+10+25 + 0.5*(5+4+3+6))/76
    # = 64/76; rows = (26, 17, 33)/76, cols = (26, 21, 29)/76;
    # p_e = sum w_ij r_i c_j = [26*(26+10.5) + 17*(13+21+14.5) + 33*(10.5+29)]/76^2
    p_o = 64 / 76
    p_e = (26 * 36.5 + 17 * 48.5 + 33 * 39.5) / 76**2
    result = weighted_kappa_from_table(table, "linear")
    assert result.kappa == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-12)
    # with identity agreement weights the weighted formula is Cohen's kappa, SE included
    nominal = _kappa_with_weights(table, np.eye(3), 0.95)
    plain = cohen_kappa_from_table(table.astype(int))
    assert nominal.kappa == pytest.approx(plain.kappa, abs=1e-12)
    assert nominal.standard_error == pytest.approx(plain.standard_error, abs=1e-12)
    # quadratic kappa = 1 - sum d^2 p_o / sum d^2 p_e (Cohen 1968, disagreement form)
    d2 = np.subtract.outer(np.arange(3), np.arange(3)) ** 2
    p = table / table.sum()
    expected = 1 - (d2 * p).sum() / (p.sum(1) @ d2 @ p.sum(0))
    assert weighted_kappa_from_table(table, "quadratic").kappa == pytest.approx(expected)


def test_weighted_kappa_refuses_bad_tables():
    from llm_council.stats.reliability.agreement import weighted_kappa_from_table

    with pytest.raises(ValueError, match="square"):
        weighted_kappa_from_table([[1, 2, 3]])
    with pytest.raises(ValueError, match="negative"):
        weighted_kappa_from_table([[1, -2], [0, 1]])
    with pytest.raises(ValueError, match="unknown weights"):
        weighted_kappa_from_table([[1, 2], [0, 1]], "cubic")  # type: ignore[arg-type]
