"""The float path of the moderated variances and t tests equals their numpy path (ADR 0075).

Each case is computed twice: through the public function (which takes the float path for
a few entries) and through the same function with the float path switched off (the numpy
steps it had before). Random inputs, and the edges the numpy steps handle by their own
rules: NaN and infinite variances, zero and NaN df, infinite prior df, zero weights, a
0 / 0 and a division by zero.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llm_council.stats.reviewers import moderated_float_path, moderated_variance
from llm_council.stats.reviewers.moderated_float_path import _divide
from llm_council.stats.reviewers.moderated_variance import moderated_t_tests, moderated_variances


def _numpy_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(moderated_variance, "moderated_variances_floats", lambda *a: None)
    monkeypatch.setattr(moderated_variance, "moderated_t_tests_floats", lambda *a, **k: None)


def _same(left: np.ndarray, right: np.ndarray) -> bool:
    """Equal bit for bit (NaN where NaN): the same IEEE operations in the same order."""
    left, right = np.asarray(left, dtype=float), np.asarray(right, dtype=float)
    return left.shape == right.shape and bool(
        np.all((np.isnan(left) & np.isnan(right)) | (left == right))
    )


def _variance_cases() -> list[tuple[object, object, object, object]]:
    rng = np.random.default_rng(7)
    cases: list[tuple[object, object, object, object]] = []
    for size in (1, 3, 5, 9, 16):
        variances = rng.gamma(2.0, 1.0, size)
        dfs = rng.uniform(0.0, 3.0, size)
        cases.append((variances, dfs, rng.gamma(2.0, 1.0, size), rng.uniform(0.5, 40, size)))
        cases.append((variances, dfs, 1.3, 4.0))  # one prior for all (Smyth's common one)
        cases.append((variances, dfs, np.float64(1.3), np.inf))
    nan, inf = math.nan, math.inf
    edges = np.array([nan, inf, -inf, 0.0, 2.0, 1e308, 5.0])
    edge_dfs = np.array([1.0, 1.0, 1.0, 0.0, nan, 2.0, 0.0])
    cases.append((edges, edge_dfs, np.array([1.0, 2.0, 3.0, 0.0, 1.0, 1.0, 0.0]), 0.0))
    cases.append((edges, edge_dfs, np.ones(7), np.array([inf, -inf, nan, 0.0, 1.0, 3.0, 0.0])))
    cases.append((np.array([1, 2, 3]), np.array([1, 1, 2]), 2, 3))  # integers
    return cases


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the numpy path's
@pytest.mark.parametrize("case", range(len(_variance_cases())))
def test_moderated_variances_float_path_equals_numpy_path(
    case: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    arguments = _variance_cases()[case]
    assert moderated_float_path.moderated_variances_floats(*arguments) is not None
    fast = moderated_variances(*arguments)
    _numpy_path(monkeypatch)
    slow = moderated_variances(*arguments)
    assert all(_same(a, b) for a, b in zip(fast, slow, strict=True)), (fast, slow)


def _t_cases() -> list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(11)
    cases = []
    for reviewers, tests in ((3, 3), (5, 5), (5, 6), (9, 10), (4, 1)):
        weights = rng.uniform(0.0, 1.0, (reviewers, tests))
        weights[rng.random((reviewers, tests)) < 0.2] = 0.0
        cases.append(
            (
                rng.normal(0.0, 2.0, tests),
                weights,
                rng.gamma(2.0, 1.0, reviewers),
                rng.uniform(0.5, 30.0, reviewers),
            )
        )
    nan, inf = math.nan, math.inf
    cases.append(  # a zero total (no test), an infinite df, a NaN variance, a zero df
        (
            np.array([1.0, -2.0, 0.5, 3.0]),
            np.array([[0.0, 1.0, 0.5, 0.2], [0.0, 0.5, 0.5, 0.1], [0.0, 0.0, 1.0, 0.3]]),
            np.array([1.0, 2.0, nan]),
            np.array([inf, 0.0, 3.0]),
        )
    )
    cases.append((np.array([0.0, 1e-300]), np.ones((2, 2)), np.array([1e-300, 1.0]), np.ones(2)))
    return cases


@pytest.mark.parametrize("one_sided", [False, True])
@pytest.mark.parametrize("case", range(len(_t_cases())))
def test_moderated_t_tests_float_path_equals_numpy_path(
    case: int, one_sided: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    arguments = _t_cases()[case]
    fast = moderated_t_tests(*arguments, one_sided=one_sided)
    _numpy_path(monkeypatch)
    slow = moderated_t_tests(*arguments, one_sided=one_sided)
    for field in ("estimates", "standard_errors", "dfs", "p_values"):
        assert _same(getattr(fast, field), getattr(slow, field)), field


def test_a_t_test_by_hand() -> None:
    """Two reviewers, one estimate: V = 0.5 * 2 + 0.5 * 4 = 3, Welch-Satterthwaite df =
    3^2 / (1^2 / 4 + 2^2 / 6) = 9 / (0.25 + 0.6667) = 9.8182; t = 3 / sqrt(3) = 1.7321;
    two-sided p = 2 P(T_9.8182 > 1.7321): ``2 * scipy.stats.t.sf(math.sqrt(3), 9 / (0.25 +
    4 / 6))`` = 0.11449971282895864 (scipy 1.17)."""
    tests = moderated_t_tests(
        np.array([3.0]),
        np.array([[0.5], [0.5]]),
        np.array([2.0, 4.0]),
        np.array([4.0, 6.0]),
        one_sided=False,
    )
    assert tests.standard_errors[0] == pytest.approx(math.sqrt(3.0), rel=1e-15)
    assert tests.dfs[0] == pytest.approx(9.0 / (0.25 + 4.0 / 6.0), rel=1e-14)
    assert tests.p_values[0] == pytest.approx(0.11449971282895864, rel=1e-12)


def test_outside_the_float_path_the_numpy_path_answers() -> None:
    assert moderated_float_path.moderated_variances_floats([1.0, 2.0], [1, 1], 1.0, 1.0) is None
    assert moderated_float_path.moderated_variances_floats(np.ones((2, 2)), 1, 1, 1) is None
    assert moderated_float_path.moderated_variances_floats(np.ones(3), np.ones(2), 1, 1) is None
    large = np.ones(moderated_float_path.FLOAT_PATH_AT_MOST + 1)
    assert moderated_float_path.moderated_variances_floats(large, large, 1.0, 1.0) is None
    weights = np.ones((3, 2))
    assert (
        moderated_float_path.moderated_t_tests_floats(
            np.ones(3), weights, np.ones(3), np.ones(3), one_sided=True
        )
        is None
    )


def test_division_follows_numpy() -> None:
    with np.errstate(divide="ignore", invalid="ignore"):
        for numerator in (1.0, -1.0, 0.0, -0.0, math.nan, math.inf):
            for denominator in (0.0, -0.0, 2.0, math.inf):
                expected = float(np.float64(numerator) / np.float64(denominator))
                got = _divide(numerator, denominator)
                assert (math.isnan(expected) and math.isnan(got)) or got == expected, (
                    numerator,
                    denominator,
                )


def test_stdtr_floats_is_stdtr_on_its_path_and_none_off_it() -> None:
    from llm_council.stats.numerics.special_functions import (
        SCALAR_PATH_AT_MOST,
        stdtr,
        stdtr_floats,
    )

    dfs, ts = [0.7, 3.0, 12.5, 400.0], [-2.5, 0.3, -0.01, 4.0]
    assert stdtr_floats(dfs, ts) == np.asarray(stdtr(np.array(dfs), np.array(ts))).tolist()
    assert stdtr_floats([3.0], [math.nan]) is None  # an edge: stdtr's numpy path
    assert stdtr_floats([3.0], [0.0]) is None
    assert stdtr_floats([], []) is None
    many = [1.0] * (SCALAR_PATH_AT_MOST + 1)
    assert stdtr_floats(many, many) is None
