"""One session's bias estimates for the monitor (stats/monitor/monitor_session_effects.py), against
the audit's own additive fit and explicit refits."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from llm_council.stats.design.additive_model import fit_additive_two_way
from llm_council.stats.monitor.monitor_session_effects import effect_design, session_effects
from llm_council.stats.sessions.session_tests import reviewer_offset_tests, self_preference_tests

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from generators.independent_council import CouncilSpec, generate_session  # noqa: E402


def _table(n: int, seed: int, missing: tuple[tuple[int, int], ...] = ()) -> np.ndarray:
    rng = np.random.default_rng(seed)
    table = np.rint(np.clip(6 + rng.standard_normal((n, n)) * 1.5, 1, 10))
    for r, c in missing:
        table[r, c] = np.nan
    return table


@pytest.mark.parametrize(
    ("n", "missing"), [(3, ()), (4, ((0, 2),)), (5, ()), (9, ((1, 3), (4, 0), (8, 2)))]
)
def test_leniency_and_self_preference_match_the_audits_fit(
    n: int, missing: tuple[tuple[int, int], ...]
) -> None:
    table = _table(n, seed=n, missing=missing)
    fitted = table.copy()
    np.fill_diagonal(fitted, np.nan)
    fit = fit_additive_two_way(fitted)
    assert fit is not None
    design = effect_design(~np.isnan(fitted), np.arange(n))
    assert design is not None
    estimates, variances = session_effects(design, table, np.full(n, -1))
    offsets = reviewer_offset_tests(fit)
    np.testing.assert_allclose(estimates[:, 0], [t.estimate for t in offsets], atol=1e-10)
    # k = c'(X'X)^-1 c, the audit's variance of the contrast per unit of noise
    for r in range(n):
        contrast = fit.reviewer_vs_others_contrast(r)
        assert variances[r, 0] == pytest.approx(contrast @ fit.covariance_unscaled @ contrast)
    own = [(r, r, float(table[r, r])) for r in range(n)]
    selfs = self_preference_tests(fit, own)
    np.testing.assert_allclose(estimates[:, 2], [t.estimate for t in selfs], atol=1e-10)
    for r in range(n):
        cell = fit.cell_vector(r, r)
        assert variances[r, 2] == pytest.approx(1 + cell @ fit.covariance_unscaled @ cell)
    assert np.isnan(estimates[:, 1]).all()  # no first slot given


@pytest.mark.parametrize("n", [3, 5, 9])
def test_slot_preference_is_the_prediction_error_of_a_refit_without_the_cell(n: int) -> None:
    table = _table(n, seed=10 + n)
    fitted = table.copy()
    np.fill_diagonal(fitted, np.nan)
    first = np.array([(r + 1) % n for r in range(n)])  # never its own answer
    design = effect_design(~np.isnan(fitted), np.arange(n))
    assert design is not None
    estimates, variances = session_effects(design, table, first)
    for r in range(n):
        c = int(first[r])
        without = fitted.copy()
        without[r, c] = np.nan
        refit = fit_additive_two_way(without)
        if refit is None:  # 3 members: the cell's removal leaves no residual df
            continue
        cell = refit.cell_vector(r, c)
        assert estimates[r, 1] == pytest.approx(table[r, c] - cell @ refit.coefficients)
        # 1 / M_ii equals the refit's prediction variance 1 + x'(X'X)^-1 x (Cook &
        # Weisberg 1982, sec. 2.2)
        assert variances[r, 1] == pytest.approx(1 + cell @ refit.covariance_unscaled @ cell)


def test_a_fit_with_one_residual_df_gives_no_slot_estimate() -> None:
    # a complete 3-member council: 6 fitted cells, 5 parameters, one residual df, so
    # every reviewer's leave-one-out residual is the same residual up to sign and scale
    # (k = 1/M_ii = 6): not monitored. Leniency and self-preference still are.
    table = _table(3, seed=5)
    fitted = table.copy()
    np.fill_diagonal(fitted, np.nan)
    design = effect_design(~np.isnan(fitted), np.arange(3))
    assert design is not None
    estimates, variances = session_effects(design, table, np.array([1, 2, 0]))
    assert np.isnan(estimates[:, 1]).all() and np.isnan(variances[:, 1]).all()
    assert np.isfinite(estimates[:, [0, 2]]).all()
    # 4 members with 3 cells missing: 9 fitted cells, 7 parameters, two residual df
    four = _table(4, seed=6, missing=((0, 1), (2, 3), (3, 0)))
    mask = ~np.isnan(four) & ~np.eye(4, dtype=bool)
    four_design = effect_design(mask, np.arange(4))
    assert four_design is not None and int(mask.sum()) - 7 == 2
    assert np.isfinite(four_design.loo_k).any()


def test_a_first_slot_on_the_own_answer_or_an_unscored_one_gives_no_slot_estimate() -> None:
    table = _table(4, seed=3, missing=((1, 2),))
    fitted = table.copy()
    np.fill_diagonal(fitted, np.nan)
    design = effect_design(~np.isnan(fitted), np.arange(4))
    assert design is not None
    estimates, _ = session_effects(design, table, np.array([0, 2, 3, -1]))
    assert np.isnan(estimates[0, 1])  # its own answer
    assert np.isnan(estimates[1, 1])  # not scored
    assert np.isfinite(estimates[2, 1]) and np.isnan(estimates[3, 1])


def test_a_batch_equals_its_sessions_one_by_one() -> None:
    tables = np.stack([_table(5, seed=s) for s in range(6)])
    firsts = np.stack([np.random.default_rng(s).permutation(5) for s in range(6)])
    design = effect_design(~np.eye(5, dtype=bool), np.arange(5))
    assert design is not None
    batch, batch_k = session_effects(design, tables, firsts)
    for s in range(6):
        one, one_k = session_effects(design, tables[s], firsts[s])
        np.testing.assert_allclose(batch[s], one, atol=1e-12)
        np.testing.assert_allclose(batch_k[s], one_k, atol=1e-12)


def test_unidentified_tables_give_no_design() -> None:
    assert effect_design(np.ones((1, 4), dtype=bool), [-1]) is None  # one reviewer
    # two blocks that share no answer: the reviewers' offsets are not comparable
    disconnected = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]], bool)
    assert effect_design(disconnected, [-1, -1, -1, -1]) is None
    # as many cells as parameters: no noise left to fit
    assert effect_design(~np.eye(2, dtype=bool), [0, 1]) is None


def test_constant_judges_give_finite_estimates() -> None:
    # every judge gives 7 to everything: every effect is exactly 0
    table = np.full((4, 4), 7.0)
    design = effect_design(~np.eye(4, dtype=bool), np.arange(4))
    assert design is not None
    estimates, variances = session_effects(design, table, np.array([1, 2, 3, 0]))
    np.testing.assert_allclose(estimates, 0.0, atol=1e-12)
    assert (variances > 0).all()


@pytest.mark.parametrize(
    ("bias", "column", "expected"),
    [
        ({"leniency": [-1.0, 0, 0, 0, 0]}, 0, -1.0),  # judge 0 harsh by 1 point
        ({"slot_effects": [[1.0], [], [], [], []]}, 1, 1.0),  # +1 on the answer it saw first
        ({"self_bias": [1.5, 0, 0, 0, 0]}, 2, 1.5),  # +1.5 on its own answer
    ],
)
def test_estimates_are_unbiased_on_the_independent_generator(
    bias: dict[str, list[float]], column: int, expected: float
) -> None:
    # 5 members, integer scores clipped to 1-10, per-reviewer shuffled orders, noise SDs
    # 0.5-1.5; one bias at a time (a first-slot bump also moves the judge's own leniency
    # by a quarter of it, which is why they are not drawn together here)
    spec = CouncilSpec(n_members=5, noise_sds=list(np.linspace(0.5, 1.5, 5)), **bias)  # type: ignore[arg-type]
    rng = np.random.default_rng(5)
    members = spec.members()
    design = effect_design(~np.eye(5, dtype=bool), np.arange(5))
    assert design is not None
    found = []
    for index in range(300):
        session = generate_session(spec, rng, session_index=index)
        table = np.array(
            [[session.stage2_scores[r][c] for c in members] for r in members], dtype=float
        )
        shown = session.position_mapping
        first = np.array([members.index(min(shown[r], key=shown[r].get)) for r in members])
        estimates, _ = session_effects(design, table, first)
        found.append(estimates[0, column])
    # SE of the mean: at most about 1.3 / sqrt(240) = 0.08 points
    assert float(np.nanmean(found)) == pytest.approx(expected, abs=0.2)
