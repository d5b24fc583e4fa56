r"""The session's risk under one error rate: Holm over the three risk families.

``overall_bias_risk`` counts the risk flags of three families (position, harsh or
generous reviewers, self-preference). Each family tested at the significance level
alone let an honest council read non-``low`` in 10-15% of sessions (ADR 0050). Here the
families share the level:

1. each tested family has a gate p-value :math:`p_f`: the smallest of its own
   family-adjusted p-values (Holm within leniency, Bonferroni within self-preference)
   among the tests whose effect reaches its floor (1 when none does); it is a valid
   p-value for "no bias of this kind", since restricting a Bonferroni minimum to a
   subset can only make it larger;
2. over the :math:`k` tested families, Holm (1979): with the gates sorted,
   :math:`p_{(1)} \le \dots \le p_{(k)}`,

   .. math:: \tilde p_{(i)} = \max_{j \le i} \min\bigl(1, (k - j + 1)\, p_{(j)}\bigr);

3. a family is flagged when :math:`\tilde p_f < \alpha`; its own tests (which reviewers,
   which self-reviews) then run at the level Holm gave it, :math:`\alpha / (k - i + 1)`
   for the family at rank i; a family not reached gets level 0.

Holm's procedure is the closed test (Marcus, Peritz & Gabriel 1976) of the families'
intersection hypotheses with Bonferroni local tests, so the chance that any family with
no bias is flagged is at most :math:`\alpha`, whatever the other families hold; with an
honest council (every family null) the session reads non-``low`` in at most
:math:`\alpha` of sessions. Naming within a flagged family is a test of the family's
elementary hypotheses at the family's level (Goeman & Solari 2010's sequential
rejection, one level down: the hierarchical scheme of Goeman & Finos 2012); the
guarantee is stated for the families. References: Holm (1979), Scand. J. Statist.
6:65-70; Marcus, Peritz & Gabriel (1976), Biometrika 63:655-660; Goeman & Solari (2010),
Ann. Statist. 38:3782-3810; Goeman & Finos (2012), Stat. Appl. Genet. Mol. Biol. 11(4).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from llm_council.bias_audit.session.result import RiskLevel
from llm_council.stats.inference.multiplicity import holm_adjusted

#: the risk families, in the order results list them
RISK_FAMILIES = ("position", "leniency", "self_preference")

#: the family behind each risk flag of ``flags_raised``
FAMILY_FLAGS = {
    "position": "position_bias_detected",
    "leniency": "harsh_or_generous_reviewers",
    "self_preference": "self_preference_detected",
}


class RiskFamilyOutcome(Protocol):
    """What the session's procedure reads from a family's outcome."""

    @property
    def tested(self) -> bool: ...

    @property
    def gate_p_value(self) -> float | None: ...


def family_gates(outcomes: Mapping[str, RiskFamilyOutcome]) -> dict[str, float | None]:
    """The gate p-values of the families that were tested (the input of :func:`session_risk`)."""
    return {name: outcome.gate_p_value for name, outcome in outcomes.items() if outcome.tested}


@dataclass(frozen=True)
class SessionRisk:
    """The session procedure's numbers for the tested families, in
    :data:`RISK_FAMILIES` order: each gate p-value, its Holm-adjusted value and the
    level the family's own tests run at (0 when the family is not flagged)."""

    error_rate: float
    p_values: Mapping[str, float]
    p_values_adjusted: Mapping[str, float]
    levels: Mapping[str, float]

    @property
    def tested(self) -> list[str]:
        return list(self.p_values)

    def level(self, family: str) -> float:
        """The level of ``family``'s own tests (0 for a family not tested or not flagged)."""
        return self.levels.get(family, 0.0)


def session_risk(gates: Mapping[str, float | None], error_rate: float) -> SessionRisk:
    """Holm over the tested families' gate p-values (see the module docstring).

    ``gates``: family -> gate p-value, for the families that were tested only (None:
    tested, but no test's effect reached its floor, so the gate is 1).
    """
    tested = [family for family in RISK_FAMILIES if family in gates]
    unknown = set(gates) - set(RISK_FAMILIES)
    if unknown:
        raise ValueError(f"unknown risk families {sorted(unknown)}")
    p_values: dict[str, float] = {}
    for family in tested:
        gate = gates[family]
        p_values[family] = 1.0 if gate is None or not math.isfinite(gate) else float(gate)
    values = np.array([p_values[family] for family in tested])
    adjusted = holm_adjusted(values).tolist() if tested else []
    # rank i (1-based) in ascending order, ties in RISK_FAMILIES order as holm_adjusted's
    # stable sort: that family's Holm level is alpha / (k - i + 1)
    order = np.argsort(values, kind="stable").tolist()
    n_tested = len(tested)
    levels: dict[str, float] = {}
    for rank, index in enumerate(order):
        family = tested[index]
        flagged = adjusted[index] < error_rate
        levels[family] = error_rate / (n_tested - rank) if flagged else 0.0
    return SessionRisk(
        error_rate=error_rate,
        p_values=p_values,
        p_values_adjusted=dict(zip(tested, adjusted, strict=True)),
        levels={family: levels[family] for family in tested},
    )


def risk_level(flag_count: int, tests_run: int) -> RiskLevel:
    """``not_tested`` when no risk test ran: "no flag" from no test is not "low"."""
    if flag_count == 0:
        return "low" if tests_run else "not_tested"
    return "medium" if flag_count == 1 else "high"
