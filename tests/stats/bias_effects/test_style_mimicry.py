"""The style-mimicry slopes against an independent dummy-variable regression, exact data,
and the identification problem they exist to solve (style correlated with quality)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from generators.independent_council import CouncilSpec, generate_sessions
from generators.style_similarity import StyleSpec, add_similarity, styled_arrays
from llm_council.stats.bias_effects.style_mimicry import mimicry_slopes


def _small_panel(seed: int) -> dict[str, np.ndarray]:
    """12 sessions x 4 members, every reviewer scoring the 3 other answers."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[float]] = {
        k: [] for k in ("score", "similarity", "log_words", "reviewer", "answer", "session")
    }
    for session in range(12):
        quality = rng.normal(6, 1, 4)
        words = rng.integers(50, 400, 4)
        for r in range(4):
            for c in range(4):
                if r == c:
                    continue
                similarity = rng.uniform(0.2, 0.8)
                score = quality[c] + 0.3 * r + 1.5 * (r == 1) * similarity + rng.normal(0, 0.7)
                rows["score"].append(score)
                rows["similarity"].append(similarity)
                rows["log_words"].append(float(np.log(words[c])))
                rows["reviewer"].append(r)
                rows["answer"].append(session * 4 + c)
                rows["session"].append(session)
    return {name: np.asarray(values) for name, values in rows.items()}


def _dummy_regression(panel: dict[str, np.ndarray], n_reviewers: int) -> np.ndarray:
    """The slopes of the full dummy-variable regression: one indicator per answer and one per
    (reviewer, session) (the fixed effects), then the same slope and length columns."""
    reviewer = panel["reviewer"].astype(int)
    answers, answer_index = np.unique(panel["answer"], return_inverse=True)
    n = reviewer.size
    fixed = np.zeros((n, answers.size))
    fixed[np.arange(n), answer_index] = 1.0
    onehot = np.zeros((n, n_reviewers))
    onehot[np.arange(n), reviewer] = 1.0
    slopes = onehot * panel["similarity"][:, None]
    _, review_index = np.unique(
        reviewer * 1_000_000 + panel["session"].astype(int), return_inverse=True
    )
    reviews = np.zeros((n, int(review_index.max()) + 1))
    reviews[np.arange(n), review_index] = 1.0
    design = np.hstack([slopes, onehot[:, 1:] * panel["log_words"][:, None], fixed, reviews])
    coefficients, *_ = np.linalg.lstsq(design, panel["score"], rcond=None)
    return np.asarray(coefficients[:n_reviewers])


def _jackknife_reference(panel: dict[str, np.ndarray], n_reviewers: int) -> np.ndarray:
    """Slopes, delete-one-session jackknife (CV3) standard errors and t(C-1) p-values, by
    re-fitting the dummy-variable regression once per left-out session (no shortcuts):
    V = (C-1)/C * sum_c (b_(-c) - b)^2 per slope (MacKinnon, Nielsen & Webb 2023)."""
    full = _dummy_regression(panel, n_reviewers)
    sessions = np.unique(panel["session"])
    deleted = np.array(
        [
            _dummy_regression(
                {name: values[panel["session"] != s] for name, values in panel.items()},
                n_reviewers,
            )
            for s in sessions
        ]
    )
    n_clusters = sessions.size
    se = np.sqrt((n_clusters - 1) / n_clusters * ((deleted - full) ** 2).sum(axis=0))
    p = 2 * scipy_stats.t.sf(np.abs(full / se), n_clusters - 1)
    return np.vstack([full, se, p])


def test_slopes_match_the_dummy_variable_regression() -> None:
    panel = _small_panel(seed=3)
    fit = mimicry_slopes(**panel, n_reviewers=4)  # type: ignore[arg-type]
    reference = _jackknife_reference(panel, 4)
    np.testing.assert_allclose([s.estimate for s in fit.slopes], reference[0], rtol=1e-8)
    np.testing.assert_allclose([s.standard_error for s in fit.slopes], reference[1], rtol=1e-8)
    np.testing.assert_allclose([s.p_value for s in fit.slopes], reference[2], rtol=1e-6)
    assert fit.n_clusters == 12 and fit.n_observations == 12 * 12
    # the interval is estimate +- t_{0.975, C-1} se
    critical = scipy_stats.t.ppf(0.975, 11)
    first = fit.slopes[0]
    assert first.ci_high - first.estimate == pytest.approx(critical * first.standard_error)


def test_exact_slope_is_recovered_whatever_quality_and_leniency() -> None:
    # y = quality of the answer + reviewer leniency + 2 * similarity for reviewer 0 only,
    # no noise: reviewer 0's slope is 2 and the others' 0, exactly
    rng = np.random.default_rng(0)
    panel = _small_panel(seed=0)
    quality = rng.normal(0, 3, int(panel["answer"].max()) + 1)
    reviewer = panel["reviewer"].astype(int)
    panel["score"] = (
        quality[panel["answer"].astype(int)]
        + np.array([0.0, -1.0, 2.0, 0.5])[reviewer]
        + 2.0 * (reviewer == 0) * panel["similarity"]
    )
    fit = mimicry_slopes(**panel, n_reviewers=4)  # type: ignore[arg-type]
    np.testing.assert_allclose([s.estimate for s in fit.slopes], [2.0, 0.0, 0.0, 0.0], atol=1e-9)


def test_no_similarity_variation_within_answers_gives_no_estimate() -> None:
    panel = _small_panel(seed=1)
    panel["similarity"] = np.full_like(panel["similarity"], 0.4)
    fit = mimicry_slopes(**panel, n_reviewers=4)  # type: ignore[arg-type]
    assert all(np.isnan(s.estimate) for s in fit.slopes)


def test_missing_values_are_left_out_and_an_absent_reviewer_is_nan() -> None:
    panel = _small_panel(seed=2)
    panel["score"][:5] = np.nan
    panel["similarity"][5:9] = np.nan
    fit = mimicry_slopes(**panel, n_reviewers=5)  # type: ignore[arg-type]
    assert fit.n_observations == 12 * 12 - 9
    assert np.isnan(fit.slopes[4].estimate) and fit.slopes[4].n_clusters == 0
    assert np.isfinite(fit.slopes[1].estimate)


def test_empty_input() -> None:
    empty = np.array([])
    fit = mimicry_slopes(empty, empty, empty, empty, empty, empty, n_reviewers=3)
    assert fit.n_observations == 0 and all(np.isnan(s.estimate) for s in fit.slopes)


def test_style_correlated_with_quality_is_not_read_as_mimicry() -> None:
    # The null that matters: good answers resemble good answers, nobody mimics. A naive
    # correlation of score with similarity is then strongly positive; the within-answer
    # slopes are not.
    sessions = generate_sessions(CouncilSpec(n_members=5), n_sessions=300, seed=11)
    styled = add_similarity(sessions, StyleSpec(style_quality=0.15), seed=12)
    arrays = styled_arrays(styled)
    naive = scipy_stats.pearsonr(arrays["similarity"], arrays["score"])
    assert naive.statistic > 0.2 and naive.pvalue < 1e-10
    fit = mimicry_slopes(**arrays, n_reviewers=5)  # type: ignore[arg-type]
    assert all(s.p_value > 0.01 for s in fit.slopes), [s.p_value for s in fit.slopes]


def test_a_mimicking_reviewer_is_found_on_the_second_generator() -> None:
    sessions = generate_sessions(CouncilSpec(n_members=5), n_sessions=300, seed=21)
    styled = add_similarity(
        sessions, StyleSpec(style_quality=0.15, mimicry=[8.0, 0, 0, 0, 0]), seed=22
    )
    fit = mimicry_slopes(**styled_arrays(styled), n_reviewers=5)  # type: ignore[arg-type]
    mimic = fit.slopes[0]
    assert mimic.p_value < 1e-4
    # the 1-10 clip (scores at the ceiling cannot rise) attenuates the true 8 points per
    # unit on the observed scale; rounding blurs it; the sign and size stay
    assert 5.0 < mimic.ci_low < mimic.estimate < mimic.ci_high < 8.5
    assert all(abs(s.estimate) < 1.5 for s in fit.slopes[1:])


def _drifting_panel(n_members: int, n_sessions: int, seed: int) -> dict[str, np.ndarray]:
    """No mimicry. Reviewer 0's leniency rises 0.02 points a session, and so does the level
    of its similarity to everything (its own answers grow more generic over the same weeks):
    with one leniency per reviewer that reads as a slope; with one per review it must not."""
    rng = np.random.default_rng(seed)
    rows: dict[str, list[float]] = {
        k: [] for k in ("score", "similarity", "log_words", "reviewer", "answer", "session")
    }
    for session in range(n_sessions):
        quality = rng.normal(6, 1, n_members)
        pair = rng.uniform(0.2, 0.6, (n_members, n_members))
        pair = (pair + pair.T) / 2  # symmetric, as every similarity is
        level = np.zeros(n_members)
        level[0] = 0.3 * session / n_sessions
        for r in range(n_members):
            for c in range(n_members):
                if r == c:
                    continue
                similarity = pair[r, c] + level[r] + level[c]
                drift = 0.02 * session * (r == 0)
                rows["score"].append(quality[c] + drift + rng.normal(0, 0.7))
                rows["similarity"].append(similarity)
                rows["log_words"].append(5.0)
                rows["reviewer"].append(r)
                rows["answer"].append(session * n_members + c)
                rows["session"].append(session)
    return {name: np.asarray(values) for name, values in rows.items()}


def test_a_drifting_judge_is_not_read_as_a_mimic() -> None:
    panel = _drifting_panel(5, 300, seed=5)
    found = mimicry_slopes(**panel, n_reviewers=5)
    drifting = found.slopes[0]
    # the old model (one leniency per reviewer) gave about 0.02 * 300 / 0.3 = 20 points per
    # unit here; within one review the drift is a constant and drops out
    assert abs(drifting.estimate) < 1.0 and drifting.p_value > 0.01


def test_three_members_are_not_identified() -> None:
    # a 3 x 3 grid without its diagonal leaves one residual direction, a cycle on which a
    # symmetric similarity sums to zero: no slope can be estimated, and none is made up
    panel = _drifting_panel(3, 100, seed=6)
    found = mimicry_slopes(**panel, n_reviewers=3)
    assert all(np.isnan(slope.estimate) for slope in found.slopes)


def test_a_repeated_review_falls_back_to_the_iteration_and_still_matches_least_squares() -> None:
    """A reviewer that scored one answer twice breaks the session tables (two observations
    in one cell); the slopes then come from alternating projections, still the dummy fit."""
    panel = _small_panel(seed=5)
    panel = {name: np.concatenate([values, values[:3]]) for name, values in panel.items()}
    panel["score"][-3:] += np.array([0.4, -0.2, 0.1])
    fit = mimicry_slopes(**panel, n_reviewers=4)  # type: ignore[arg-type]
    expected = _dummy_regression(panel, 4)
    np.testing.assert_allclose([s.estimate for s in fit.slopes], expected, rtol=1e-8)


def test_a_reviewer_index_outside_the_range_is_refused() -> None:
    panel = _small_panel(seed=7)
    panel["reviewer"][4] = -1
    with pytest.raises(ValueError, match=r"reviewer index -1 outside 0\.\.3"):
        mimicry_slopes(**panel, n_reviewers=4)  # type: ignore[arg-type]


def test_unequal_session_sizes_match_the_refitted_jackknife() -> None:
    """Sessions of different sizes take the padded (not reshaped) jackknife blocks."""
    panel = _small_panel(seed=8)
    keep = np.ones(panel["score"].size, dtype=bool)
    keep[[0, 13, 14, 40, 77]] = False
    panel = {name: values[keep] for name, values in panel.items()}
    fit = mimicry_slopes(**panel, n_reviewers=4)  # type: ignore[arg-type]
    reference = _jackknife_reference(panel, 4)
    np.testing.assert_allclose([s.estimate for s in fit.slopes], reference[0], rtol=1e-8)
    np.testing.assert_allclose([s.standard_error for s in fit.slopes], reference[1], rtol=1e-8)


def test_handed_over_columns_give_the_same_fit_and_are_freed_before_the_projection(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The report hands its columns over in a dict (10M-record peak): same numbers, and the
    score, similarity, length and answer columns are gone before the projection runs."""
    import weakref

    import llm_council.stats.bias_effects.style_mimicry as module

    panel = _small_panel(5)
    expected = mimicry_slopes(**panel, n_reviewers=4)  # type: ignore[arg-type]
    handed = {name: values.copy() for name, values in panel.items()}
    freed = ("score", "similarity", "log_words", "answer")
    watch = {name: weakref.ref(handed[name]) for name in freed}
    alive_at_projection: list[str] = []
    project = module.nested_two_way_residuals

    def watching(*args: object, **kwargs: object) -> object:
        alive_at_projection.extend(name for name, ref in watch.items() if ref() is not None)
        return project(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(module, "nested_two_way_residuals", watching)
    fit = module.mimicry_slopes_of_columns(handed, n_reviewers=4)
    assert handed == {}
    assert alive_at_projection == []
    assert fit.slopes == expected.slopes
    np.testing.assert_array_equal(fit.within_answer_sd, expected.within_answer_sd)
