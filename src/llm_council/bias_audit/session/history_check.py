r"""The history's flags checked against the session-only path's (ADR 0071).

A reviewer's history makes its noise known to the moderated tests; when the judge's noise
changed since (a model update), the history understates it and an honest council flags
(issue 34 item 2). The noise screen (ADR 0051, 0059) sees each judge on 2-3 residual df
and misses a 16-fold change in a quarter to a half of the sessions (ADR 0070). This
module makes the risk flags valid whatever the history holds, by an intersection-union
test (Berger 1982; Berger & Hsu 1996): each risk family's p-value is

.. math:: p_f = \max\bigl(p_f^{\text{history}},\ p_f^{\text{session}}\bigr),

:math:`p_f^{\text{session}}` the same family's p-value on the session-only path (each
reviewer's noise moderated toward the default prior, the randomization slot test), and a
reviewer is named harsh, generous or self-preferring only when both paths name it.
Since :math:`P(p_f \le t) \le P(p_f^{\text{session}} \le t) \le t` under the family's null
whenever the session-only p-value is valid, the session's Holm over the families
(:mod:`~llm_council.bias_audit.session.session_risk`) keeps the session-only path's error
rate, measured at or under 5% + 2 SE without history; a stale history can only lower it.
The price is power: a flag needs the session-only path's evidence too (ADR 0071's table).
Each family's own elementary tests keep the same rule (the larger p-value per reviewer,
and per self-review), so naming within a flagged family keeps the session-only step-down's
family-wise rate. References: Berger, R. L. (1982), "Multiparameter hypothesis testing
and acceptance sampling", Technometrics 24:295-300; Berger, R. L. & Hsu, J. C. (1996),
"Bioequivalence trials, intersection-union tests and equivalence confidence sets",
Statist. Sci. 11:283-319, sec. 2.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from llm_council.bias_audit.session.family_leniency import LeniencyOutcome
from llm_council.bias_audit.session.family_self_preference import SelfPreferenceOutcome
from llm_council.bias_audit.session.moderated_noise import ModeratedNoise
from llm_council.bias_audit.session.thresholds import AuditThresholds
from llm_council.stats.inference.effect_floors import reaches_floor

#: ``indicator_only["history_check"]`` when the session-only path checked the history's
HISTORY_CHECK_NOTE = (
    "history_session_check = 'intersection-union' (ADR 0071): each risk p-value is the "
    "larger of the one with the reviewers' history and the session-only one (default "
    "prior, randomization slot test), and a reviewer is named only when both name it, so "
    "a history written under other noise cannot raise the session's error rate"
)


def history_checked(
    thresholds: AuditThresholds, history: Mapping[str, object], priors: ModeratedNoise | None
) -> bool:
    """Does the session-only path check this session's flags? Only when the check is on
    and some reviewer's prior came from the store (its history or the store's prior)."""
    if thresholds.history_session_check != "intersection-union" or not history:
        return False
    return priors is not None and any(source in ("history", "store") for source in priors.sources)


def session_scale(thresholds: AuditThresholds) -> float:
    """:math:`s = \\alpha / \\gamma` (at most 1): the factor the session-only path's
    p-values enter by, :math:`\\gamma` = ``history_session_check_level`` (default
    :math:`\\alpha`, ``significance_level``: s = 1, the plain intersection-union test)."""
    gamma = thresholds.history_session_check_level
    if gamma is None:
        return 1.0
    return min(1.0, thresholds.significance_level / gamma)


def larger_p_value(
    history: float | None, session: float | None, scale: float = 1.0
) -> float | None:
    """:math:`\\max(p_h, s\\,p_s)`, the intersection-union p-value (``scale`` s = 1) or
    its looser form (s < 1: the session-only leg at level :math:`\\alpha / s`); None when
    either is None (a test the session-only path could not run gives the history's no
    support)."""
    if history is None or session is None:
        return None
    return max(history, scale * session)


def _larger_p_values(
    history: Mapping[str, float | None], session: Mapping[str, float | None], scale: float
) -> dict[str, float | None]:
    return {name: larger_p_value(p, session.get(name), scale) for name, p in history.items()}


def _both(first: Sequence[str], second: Sequence[str]) -> list[str]:
    return [name for name in first if name in second]


def checked_leniency(
    history: LeniencyOutcome, session: LeniencyOutcome, offset_floor: float, scale: float = 1.0
) -> LeniencyOutcome:
    """The leniency family under the intersection-union rule: each reviewer's larger
    Holm-adjusted p-value, harsh (generous) only when both step-downs name it so, and the
    gate the least of those larger p-values over the reviewers whose offset reaches
    ``offset_floor`` (the offsets are the same contrasts of the same fit on both paths;
    only their standard errors differ). At the step-down's first step (level 0, nobody
    named) that gate is at least the session-only path's, so it is as valid as that one.
    ``session`` ran at the history's level over ``scale`` (its names are at that level)."""
    p_values = _larger_p_values(history.p_values, session.p_values, scale)
    eligible = [
        p
        for name, p in p_values.items()
        if p is not None
        and history.offsets.get(name) is not None
        and reaches_floor(abs(history.offsets[name]), offset_floor)  # type: ignore[arg-type]
    ]
    named = history.detected or session.detected
    return dataclasses.replace(
        history,
        p_values=p_values,
        harsh=_both(history.harsh, session.harsh),
        generous=_both(history.generous, session.generous),
        gate_p_value=min(eligible) if eligible and not named else None,
    )


def checked_self_preference(
    history: SelfPreferenceOutcome, session: SelfPreferenceOutcome, scale: float = 1.0
) -> SelfPreferenceOutcome:
    """The self-preference family under the intersection-union rule: each self-review's
    larger Bonferroni-adjusted p-value and the pooled mean's larger p-value; the
    estimates are the history path's (the same prediction errors; the pooled mean's
    precision weights differ, and either path's pooled p-value is a valid Bonferroni
    member, so the larger one is too)."""
    return dataclasses.replace(
        history,
        p_values=_larger_p_values(history.p_values, session.p_values, scale),
        pooled_p_value=larger_p_value(history.pooled_p_value, session.pooled_p_value, scale),
    )
