"""The session's moderated reviewer noise (ADR 0045), packaged for the audit.

Chooses each fitted reviewer's prior (:mod:`~llm_council.bias_audit.session.noise_priors`),
checks each history against the session's own noise and gives a reviewer whose noise
moved the default prior instead (:mod:`llm_council.stats.reviewers.noise_drift`, ADR 0051), or,
with ``noise_drift_replacement = "session-estimate"``, its own session noise (ADR 0070),
moderates the fit's per-reviewer variances toward it
(:mod:`llm_council.stats.sessions.moderated_session_tests`), turns the moderated self-preference
tests into :class:`~llm_council.stats.sessions.session_tests.ContrastTest` with their Bonferroni
factors, and says in a note where each reviewer's noise came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from llm_council.bias_audit.session.noise_priors import (
    History,
    reviewer_priors,
    slot_adjusted_history,
)
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.reviewers.moderated_variance import moderated_variances
from llm_council.stats.reviewers.noise_drift import (
    NoiseDrift,
    council_noise_drift,
    residual_sum_of_squares_moments,
    reviewer_noise_given_others,
    step_down_noise_drift,
)
from llm_council.stats.sessions.moderated_session_tests import (
    ReviewerVariances,
    fit_annihilator,
    moderate,
    moderated_self_preference_tests,
    reviewer_residual_variances,
    session_prior,
)
from llm_council.stats.sessions.session_tests import ContrastTest
from llm_council.stats.slots.slot_adjusted_fit import with_slot_effects


@dataclass(frozen=True)
class ModeratedNoise:
    """The moderated noise of the session's fit (per fitted reviewer): the priors it was
    moderated toward, where each came from, and the moderated variances."""

    variances: np.ndarray
    dfs: np.ndarray
    sources: list[str]
    noise: ReviewerVariances
    #: reviewers whose session noise left their history (ADR 0051): name -> (variance
    #: ratio RSS_r / E RSS_r, p-value); their prior is the default instead
    moved: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: the rest of the council's noise, as a whole, left its histories (ADR 0059): the
    #: council-wide ratio and its upper-tail p-value; every reviewer with history not in
    #: ``moved`` then has the default prior too (None: not moved, or not tested)
    council_moved: tuple[float, float] | None = None
    #: each reviewer's upper-tail p-value in the noise screen's last step (NaN: not
    #: screened; None: no screen ran), read by the slot test's guard (ADR 0059, amendment)
    screen_p_values: np.ndarray | None = None
    #: each screened reviewer's Satterthwaite df of its session residual sum of squares
    #: in the screen's last step (NaN: not screened; None: no screen ran)
    screen_dfs: np.ndarray | None = None


#: the priors, each reviewer's source, the moved reviewers and the council-wide move
Priors = tuple[
    np.ndarray,
    np.ndarray,
    list[str],
    dict[str, tuple[float, float]],
    tuple[float, float] | None,
    NoiseDrift | None,
]


def _without_moved_history(
    fit: AdditiveFit,
    names: Sequence[str],
    thresholds: AuditThresholds,
    priors: tuple[np.ndarray, np.ndarray, list[str]],
) -> Priors:
    r"""The priors with every reviewer whose session noise left its history given the
    default prior instead: its session variance moderated toward ``prior_noise_sd``
    updated by the pooled variance, as without history; or, with
    ``noise_drift_replacement = "session-estimate"`` (ADR 0070), toward
    :math:`\max(s_{0r}^2, \hat\sigma_r^2)` on the screen's session df :math:`\nu_r`,
    :math:`\hat\sigma_r^2` its session variance with the others at their priors
    (:func:`~llm_council.stats.reviewers.noise_drift.reviewer_noise_given_others`, Rao 1970).

    First each reviewer, by the step-down of
    :func:`~llm_council.stats.reviewers.noise_drift.step_down_noise_drift` at ``noise_drift_level``;
    then the reviewers it kept, together, by the upper-tail test of
    :func:`~llm_council.stats.reviewers.noise_drift.council_noise_drift` at
    ``noise_drift_council_level`` (the moved ones counted at the variance the audit now
    gives them), which moves them all when the council as a whole is noisier than its
    histories (ADR 0059). In this order one judge gone noisy moves alone."""
    variances, dfs, sources = priors
    tested = np.array([source == "history" for source in sources])
    checks = thresholds.noise_drift_level > 0.0 or thresholds.noise_drift_council_level > 0.0
    if not checks or not tested.any() or fit.residual_df == 0:
        return variances, dfs, sources, {}, None, None
    default_variance, default_df = session_prior(
        fit, thresholds.prior_noise_sd**2, thresholds.prior_noise_df
    )
    own, own_df = reviewer_residual_variances(fit)
    replacement, replacement_df = moderated_variances(own, own_df, default_variance, default_df)
    annihilator = fit_annihilator(fit)
    estimate_replaces = thresholds.noise_drift_replacement == "session-estimate"
    if estimate_replaces:
        estimates = reviewer_noise_given_others(annihilator, fit.rows, fit.residuals, variances)
        _, screen_dfs = residual_sum_of_squares_moments(annihilator, fit.rows, variances)
        usable = tested & np.isfinite(estimates) & np.isfinite(screen_dfs)
        replacement = np.where(usable, np.maximum(variances, estimates), replacement)
        replacement_df = np.where(usable, screen_dfs, replacement_df)
    moved: dict[str, tuple[float, float]] = {}
    moved_indexes: list[int] = []
    screen: NoiseDrift | None = None
    if thresholds.noise_drift_level > 0.0:
        drift = step_down_noise_drift(
            annihilator,
            fit.rows,
            fit.residuals,
            variances,
            dfs,
            replacement,
            tested,
            level=thresholds.noise_drift_level,
            alternative=thresholds.noise_drift_alternative,
        )
        moved_indexes = list(drift.moved)
        screen = drift
        for index in drift.moved:
            moved[names[index]] = (float(drift.ratios[index]), float(drift.p_values[index]))
    council_moved: tuple[float, float] | None = None
    remaining = tested.copy()
    remaining[moved_indexes] = False
    if thresholds.noise_drift_council_level > 0.0 and remaining.any():
        expected, expected_df = variances.copy(), dfs.copy()
        expected[moved_indexes] = replacement[moved_indexes]
        expected_df[moved_indexes] = replacement_df[moved_indexes]
        council = council_noise_drift(
            annihilator, fit.rows, fit.residuals, expected, expected_df, remaining
        )
        if council.p_value < thresholds.noise_drift_council_level:  # NaN compares False
            council_moved = (council.ratio, council.p_value)
            moved_indexes += np.flatnonzero(remaining).tolist()
    if not moved_indexes:
        return variances, dfs, sources, {}, None, screen
    variances, dfs, sources = variances.copy(), dfs.copy(), list(sources)
    for index in moved_indexes:
        if estimate_replaces and tested[index]:
            variances[index], dfs[index] = replacement[index], replacement_df[index]
            sources[index] = "session"
        else:
            variances[index], dfs[index], sources[index] = default_variance, default_df, "default"
    return variances, dfs, sources, moved, council_moved, screen


def _packaged(
    fit: AdditiveFit,
    variances: np.ndarray,
    dfs: np.ndarray,
    sources: list[str],
    moved: dict[str, tuple[float, float]],
    council_moved: tuple[float, float] | None,
    screen: NoiseDrift | None,
) -> ModeratedNoise:
    """The moderated noise of ``fit`` toward these priors, with the screen's findings."""
    return ModeratedNoise(
        variances,
        dfs,
        sources,
        moderate(fit, variances, dfs),
        moved,
        council_moved,
        None if screen is None else screen.p_values,
        None if screen is None else screen.session_dfs,
    )


def moderated_noise(
    fit: AdditiveFit, names: Sequence[str], thresholds: AuditThresholds, history: History
) -> ModeratedNoise | None:
    """Moderated noise of ``fit`` (``names``: its reviewers, in row order), or ``None``
    when the thresholds ask for equal or session-only noise, or when the scores fit the
    model exactly and nobody has history (no noise of this council to scale the default
    by: the session-only path then says "not tested")."""
    if thresholds.equal_reviewer_noise or not thresholds.moderate_reviewer_noise:
        return None
    if fit.residual_variance == 0.0 and not any(name in history for name in names):
        return None
    variances, dfs, sources, moved, council_moved, screen = _without_moved_history(
        fit, names, thresholds, reviewer_priors(fit, names, thresholds, history)
    )
    return _packaged(fit, variances, dfs, sources, moved, council_moved, screen)


def slot_moderated_noise(
    fit: AdditiveFit,
    display_indexes: np.ndarray,
    names: Sequence[str],
    thresholds: AuditThresholds,
    history: History,
) -> ModeratedNoise | None:
    """Moderated noise of the model with slot effects, for the slot test (ADR 0047): each
    reviewer's session variance from that model, moderated toward its slot-adjusted
    history, or toward the default prior where the session's noise left it (ADR 0051).
    ``None`` unless every reviewer has a history (the randomization test then runs)
    and the session's slots are identified."""
    if not thresholds.moderate_reviewer_noise or thresholds.equal_reviewer_noise:
        return None
    adjusted = slot_adjusted_history(history)
    if not adjusted or any(name not in adjusted for name in names):
        return None
    slot_fit = with_slot_effects(fit, display_indexes)
    if slot_fit is fit:
        return None
    priors = reviewer_priors(slot_fit, names, thresholds, adjusted)
    if any(source != "history" for source in priors[2]):
        return None  # too little residual information in a reviewer's history
    # a reviewer whose noise moved keeps the Wald test, with its session variance
    # moderated toward the default (its df then bound the test's: F(k, min df))
    variances, dfs, sources, moved, council_moved, screen = _without_moved_history(
        slot_fit, names, thresholds, priors
    )
    return _packaged(slot_fit, variances, dfs, sources, moved, council_moved, screen)


def moderated_self_preference(
    fit: AdditiveFit,
    fit_cells: list[tuple[int, int, float]],
    noise: ReviewerVariances,
    *,
    cell_rows: np.ndarray | None = None,
) -> tuple[list[ContrastTest], ContrastTest]:
    """Moderated self-preference tests as :class:`ContrastTest`: each self-review's p-value
    Bonferroni-adjusted by 2m (m self-reviews, and the pooled test shares the level), the
    pooled mean's left unadjusted (the audit flags it below half the level). ``cell_rows``:
    the self-reviews' design rows in ``fit`` when it is not the two-way fit (ADR 0050's
    prediction with slot effects)."""
    moderated = moderated_self_preference_tests(fit, fit_cells, noise, cell_rows=cell_rows)
    n_self = len(fit_cells)
    tests: list[ContrastTest] = []
    for index in range(n_self + 1):
        estimate = float(moderated.estimates[index])
        p_value = float(moderated.p_values[index])
        if p_value != p_value:  # NaN: the variance was not positive, no test
            tests.append(ContrastTest(estimate, None, None, None, None))
            continue
        error = float(moderated.standard_errors[index])
        factor = 2 * n_self if index < n_self else 1
        tests.append(
            ContrastTest(estimate, error, estimate / error, p_value, min(1.0, p_value * factor))
        )
    return tests[:n_self], tests[n_self]


def moderation_note(priors: ModeratedNoise, residual_df: int) -> str:
    """Where each reviewer's noise came from, for ``indicator_only["reviewers"]``."""
    counts = {source: priors.sources.count(source) for source in dict.fromkeys(priors.sources)}
    described = ", ".join(f"{count} from {source}" for source, count in counts.items())
    note = (
        f"{residual_df} residual degree(s) of freedom in this session: each reviewer's noise "
        f"variance is moderated toward a prior (Smyth 2004; {described}: 'history' is the "
        "reviewer's past sessions, 'store' the store's other reviewers, 'default' "
        "prior_noise_sd with the session's pooled variance"
        + (
            ", 'session' the reviewer's own noise in this session, the others held at their "
            "histories"
            if "session" in counts
            else ""
        )
        + "); the estimates and the flags come from this session's scores"
    )
    if priors.moved:
        moved = "; ".join(
            f"{name!r}: residual variance {ratio:.3g} times its history's, p = {p_value:.2g}"
            for name, (ratio, p_value) in priors.moved.items()
        )
        instead = (
            "toward its own noise in this session (at least its history's), on that estimate's df"
            if "session" in priors.sources
            else "toward the default prior instead, as a reviewer without history"
        )
        note += (
            f". Noise unlike its history in this session ({moved}; variance-ratio test, "
            f"ADR 0051 and 0059): moderated {instead}"
        )
    if priors.council_moved is not None:
        ratio, p_value = priors.council_moved
        others = "the other reviewers'" if priors.moved else "the reviewers'"
        note += (
            f". {others.capitalize()} noise, together, is unlike their histories in this "
            f"session (residual variance {ratio:.3g} times the histories', p = {p_value:.2g}; "
            "council-wide upper-tail variance-ratio test, ADR 0059): each is moderated "
            + (
                "toward its own noise in this session instead (ADR 0070)"
                if "session" in priors.sources
                else "toward the default prior instead, as without history"
            )
        )
    return note
