"""The session's moderated reviewer noise (ADR 0045), packaged for the audit.

Chooses each fitted reviewer's prior (:mod:`~llm_council.bias_audit.session.noise_priors`),
moderates the fit's per-reviewer variances toward it
(:mod:`llm_council.stats.moderated_session_tests`), turns the moderated self-preference
tests into :class:`~llm_council.stats.session_tests.ContrastTest` with their Bonferroni
factors, and says in a note where each reviewer's noise came from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from llm_council.bias_audit.session.noise_priors import (
    History,
    reviewer_priors,
    slot_adjusted_history,
)
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.stats.additive_model import AdditiveFit
from llm_council.stats.moderated_session_tests import (
    ReviewerVariances,
    moderate,
    moderated_self_preference_tests,
)
from llm_council.stats.session_tests import ContrastTest
from llm_council.stats.slot_adjusted_fit import with_slot_effects


@dataclass(frozen=True)
class ModeratedNoise:
    """The moderated noise of the session's fit (per fitted reviewer): the priors it was
    moderated toward, where each came from, and the moderated variances."""

    variances: np.ndarray
    dfs: np.ndarray
    sources: list[str]
    noise: ReviewerVariances


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
    variances, dfs, sources = reviewer_priors(fit, names, thresholds, history)
    return ModeratedNoise(variances, dfs, sources, moderate(fit, variances, dfs))


def slot_moderated_noise(
    fit: AdditiveFit,
    display_indexes: np.ndarray,
    names: Sequence[str],
    thresholds: AuditThresholds,
    history: History,
) -> ModeratedNoise | None:
    """Moderated noise of the model with slot effects, for the slot test (ADR 0047): each
    reviewer's session variance from that model, moderated toward its slot-adjusted
    history. ``None`` unless every reviewer has one (the randomization test then runs)
    and the session's slots are identified."""
    if not thresholds.moderate_reviewer_noise or thresholds.equal_reviewer_noise:
        return None
    adjusted = slot_adjusted_history(history)
    if not adjusted or any(name not in adjusted for name in names):
        return None
    slot_fit = with_slot_effects(fit, display_indexes)
    if slot_fit is fit:
        return None
    variances, dfs, sources = reviewer_priors(slot_fit, names, thresholds, adjusted)
    if any(source != "history" for source in sources):
        return None  # too little residual information in a reviewer's history
    return ModeratedNoise(variances, dfs, sources, moderate(slot_fit, variances, dfs))


def moderated_self_preference(
    fit: AdditiveFit, fit_cells: list[tuple[int, int, float]], noise: ReviewerVariances
) -> tuple[list[ContrastTest], ContrastTest | None]:
    """Moderated self-preference tests as :class:`ContrastTest`: each self-review's p-value
    Bonferroni-adjusted by 2m (m self-reviews, and the pooled test shares the level), the
    pooled mean's left unadjusted (the audit flags it below half the level)."""
    moderated = moderated_self_preference_tests(fit, fit_cells, noise)
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
    return (
        f"{residual_df} residual degree(s) of freedom in this session: each reviewer's noise "
        f"variance is moderated toward a prior (Smyth 2004; {described}: 'history' is the "
        "reviewer's past sessions, 'store' the store's other reviewers, 'default' "
        "prior_noise_sd with the session's pooled variance); the estimates and the flags "
        "come from this session's scores"
    )
