"""Decide every finding of a report with one multiplicity procedure, and write it back.

The sections compute their estimates and p-values (and, on their own, a per-family
verdict). This step gathers every tested hypothesis (:mod:`.hypotheses`), adjusts all
their p-values together (:mod:`llm_council.stats.inference.report_multiplicity`: family-wise by
default, or the false discovery rate), and rewrites each section's verdict fields
(``detected``, ``flagged``, leniency labels, position directions, favouritism spill-over
and blocs, causal-check flags) from that one decision, so every renderer, the dashboard
included, shows the same findings. ADR 0054.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from llm_council.bias_audit.report.analyses.causal_checks import CausalChecks
from llm_council.bias_audit.report.analyses.families import BiasFamilies
from llm_council.bias_audit.report.analyses.favouritism import Favouritism
from llm_council.bias_audit.report.analyses.position import with_verdict
from llm_council.bias_audit.report.finding import ERROR_RATES, FAMILY_WEIGHTS
from llm_council.bias_audit.report.fingerprint_hypotheses import fingerprint_verdicts
from llm_council.bias_audit.report.hypotheses import Hypothesis, Locator, report_hypotheses
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import fmt
from llm_council.stats.bias_effects.favouritism import (
    explain_spillover,
    mutual_blocs,
    spillover_weights,
)
from llm_council.stats.inference.nested_closed_test import (
    NestedPair,
    nested_family_holm_adjusted,
)
from llm_council.stats.inference.report_multiplicity import benjamini_yekutieli_adjusted

_SPILLOVER = "spill-over of a larger favouritism finding (its interval holds what that predicts)"


def adjusted_p_values(hypotheses: Sequence[Hypothesis], error_rate: str) -> np.ndarray:
    """Every hypothesis's report-wide adjusted p-value under ``error_rate``.

    ``fwer`` weighs each family by :data:`FAMILY_WEIGHTS` (ADR 0060) and tests a pair of
    nested hypotheses (the council's all-slots and edge tests) with their min-p test
    (ADR 0082); ``fdr`` is
    Benjamini-Yekutieli over all tests, unweighted.
    """
    if error_rate not in ERROR_RATES:
        raise ValueError(f"unknown error rate {error_rate!r} (expected one of {ERROR_RATES})")
    p_values = [item.finding.p_value for item in hypotheses]
    if error_rate == "fdr":
        return benjamini_yekutieli_adjusted(p_values)
    return nested_family_holm_adjusted(
        p_values,
        [item.finding.family for item in hypotheses],
        FAMILY_WEIGHTS,
        nested_pairs(hypotheses),
    )


def nested_pairs(hypotheses: Sequence[Hypothesis]) -> list[NestedPair]:
    """The pairs in which one hypothesis's null implies another's (ADR 0082), by index."""
    index_of = {item.locator: index for index, item in enumerate(hypotheses)}
    return [
        NestedPair(index, index_of[item.implies], item.combined_p)
        for index, item in enumerate(hypotheses)
        if item.implies is not None and item.implies in index_of
    ]


def procedure_text(
    error_rate: str, significance_level: float, n_tests: int, n_families: int
) -> str:
    """The procedure in words, with the numbers it ran on (the text header quotes it)."""
    level = f"{fmt(100 * significance_level, 0)}%"
    if error_rate == "fdr":
        return (
            f"false discovery rate {level} over {n_tests} tests "
            "(Benjamini-Yekutieli, valid under any dependence)"
        )
    return (
        f"family-wise {level} over {n_tests} tests in {n_families} families "
        "(closed test: weighted Holm across families, Holm within each; "
        "the council's nested position tests by their min-p test)"
    )


def _replace(items: list[Any], index: int, **changes: Any) -> None:
    items[index] = dataclasses.replace(items[index], **changes)


def _favouritism_verdicts(
    matrix: Favouritism, passed: dict[int, bool]
) -> tuple[Favouritism, set[int]]:
    """The matrix with flags from ``passed`` (cell index -> verdict), spill-over and blocs
    recomputed over those flags; also the cells that passed but are spill-over."""
    reviewers, models = matrix.reviewers, matrix.models
    shape = (len(reviewers), len(models))
    row = {name: index for index, name in enumerate(reviewers)}
    column = {name: index for index, name in enumerate(models)}
    where = [(row[c.reviewer], column[c.model]) for c in matrix.cells]
    estimate, low, high = (np.full(shape, np.nan) for _ in range(3))
    flags = np.zeros(shape, dtype=bool)
    for index, (cell, at) in enumerate(zip(matrix.cells, where, strict=True)):
        estimate[at], low[at], high[at] = (
            cell.effect.estimate,
            cell.effect.ci_low,
            cell.effect.ci_high,
        )
        flags[at] = passed.get(index, False) and not cell.confounded_with_slot
    pattern = np.asarray(matrix.design_pattern, dtype=bool)
    spill = (
        explain_spillover(estimate, low, high, flags, spillover_weights(pattern))
        if pattern.shape == shape and flags.any()
        else np.zeros(shape, dtype=bool)
    )
    cells = [
        dataclasses.replace(cell, flagged=bool(flags[at]), spillover=bool(spill[at]))
        for cell, at in zip(matrix.cells, where, strict=True)
    ]
    own_model: dict[int, int] = {}
    for cell, (r, m) in zip(matrix.cells, where, strict=True):
        if cell.is_self:
            own_model[r] = m
    positive = flags & ~spill & (estimate > 0)
    blocs = mutual_blocs(positive, [own_model.get(r) for r in range(len(reviewers))])
    spilled = {index for index, at in enumerate(where) if spill[at]}
    updated = dataclasses.replace(
        matrix, cells=cells, mutual_blocs=[[reviewers[i] for i in bloc] for bloc in blocs]
    )
    return updated, spilled


def _family_verdicts(
    families: BiasFamilies, verdict: Callable[[Locator], bool]
) -> tuple[BiasFamilies, set[int]]:
    anchoring = [
        dataclasses.replace(item, detected=verdict(("anchoring", i)))
        for i, item in enumerate(families.anchoring)
    ]
    matrix = families.favouritism
    spilled: set[int] = set()
    if matrix is not None:
        matrix, spilled = _favouritism_verdicts(
            matrix, {i: verdict(("favouritism", i)) for i in range(len(matrix.cells))}
        )
    amplified = families.amplification
    if amplified is not None:
        amplified = dataclasses.replace(amplified, excess_is_finding=verdict(("amplification", 0)))
    mimicry = families.style_mimicry
    if mimicry is not None:
        mimicry = dataclasses.replace(
            mimicry,
            reviewers=[
                dataclasses.replace(item, detected=verdict(("mimicry", i)))
                for i, item in enumerate(mimicry.reviewers)
            ],
        )
    reasoning = [
        dataclasses.replace(item, detected=verdict(("reasoning", i)))
        for i, item in enumerate(families.reasoning)
    ]
    drift = families.drift
    if drift is not None:
        series = []
        for i, item in enumerate(drift.series):
            detected = verdict(("drift", i))
            changed = item.likely_change_from if detected else None
            series.append(dataclasses.replace(item, detected=detected, changed_from=changed))
        drift = dataclasses.replace(drift, series=series)
    updated = dataclasses.replace(
        families,
        anchoring=anchoring,
        favouritism=matrix,
        amplification=amplified,
        style_mimicry=mimicry,
        reasoning=reasoning,
        drift=drift,
    )
    return updated, spilled


def _causal_verdicts(section: CausalChecks, verdict: Callable[[Locator], bool]) -> CausalChecks:
    reviewers = []
    for i, reviewer in enumerate(section.reviewers):
        changes = {}
        for attribute in ("slot_effect", "padding_effect", "identity_effect"):
            estimate = getattr(reviewer, attribute)
            if estimate is not None:
                changes[attribute] = dataclasses.replace(
                    estimate, finding=verdict(("causal", i, attribute))
                )
        reviewers.append(dataclasses.replace(reviewer, **changes))
    return dataclasses.replace(section, reviewers=reviewers)


def _core_verdicts(report: BiasReport, verdict: Callable[[Locator], bool]) -> dict[str, Any]:
    profiles = list(report.profiles)
    for i, profile in enumerate(profiles):
        if profile.leniency_label in ("harsh", "generous", "neutral"):
            label = (
                ("harsh" if profile.leniency.estimate < 0 else "generous")
                if verdict(("leniency", i))
                else "neutral"
            )
            _replace(profiles, i, leniency_label=label)
    position = report.position
    if position is not None:
        position = dataclasses.replace(
            position,
            council=with_verdict(
                position.council,
                # either of the council's tests (the edges, every slot: ADR 0076)
                verdict(("position-council", 0)) or verdict(("position-council-all", 0)),
            ),
            per_reviewer=[
                with_verdict(profile, verdict(("position", i)))
                for i, profile in enumerate(position.per_reviewer)
            ],
        )
    self_preference = [
        dataclasses.replace(item, detected=verdict(("self", i)))
        for i, item in enumerate(report.self_preference)
    ]
    return {"profiles": profiles, "position": position, "self_preference": self_preference}


def decide_findings(report: BiasReport, error_rate: str = "fwer") -> BiasReport:
    """``report`` with every verdict decided by one procedure over all its hypotheses.

    A hypothesis is a finding when its report-wide adjusted p is below the report's
    significance level and no section rule blocks it (a leniency below the material size,
    a slot-confounded cell, a favouritism cell that is spill-over of a larger finding).
    """
    hypotheses = report_hypotheses(report)
    adjusted = adjusted_p_values(hypotheses, error_rate)
    alpha = report.significance_level
    passes = {
        item.locator: bool(p < alpha and item.blocked_by is None)
        for item, p in zip(hypotheses, adjusted, strict=True)
    }

    def verdict(locator: Locator) -> bool:
        return passes.get(locator, False)

    changes = _core_verdicts(report, verdict)
    spilled: set[int] = set()
    if report.families is not None:
        changes["families"], spilled = _family_verdicts(report.families, verdict)
    if report.causal_checks is not None:
        changes["causal_checks"] = _causal_verdicts(report.causal_checks, verdict)
    if report.fingerprints is not None:  # ADR 0062
        changes["fingerprints"] = fingerprint_verdicts(report.fingerprints, verdict)
    n_families = len({item.finding.family for item in hypotheses})
    method = procedure_text(error_rate, alpha, len(hypotheses), n_families)
    tested = []
    for item, p in zip(hypotheses, adjusted, strict=True):
        spill = item.locator[0] == "favouritism" and int(item.locator[1]) in spilled
        finding = verdict(item.locator) and not spill
        if finding:
            rule = f"finding: adjusted p < {fmt(alpha)}, {method}"
        elif not p < alpha:
            rule = f"not a finding: adjusted p >= {fmt(alpha)}"
        elif item.blocked_by is not None:
            rule = f"not a finding: adjusted p < {fmt(alpha)}, but {item.blocked_by}"
        else:
            rule = f"not a finding: adjusted p < {fmt(alpha)}, but {_SPILLOVER}"
        tested.append(
            dataclasses.replace(item.finding, p_adjusted=float(p), rule=rule, finding=finding)
        )
    return dataclasses.replace(
        report,
        **changes,
        error_rate=error_rate,
        error_rate_method=method,
        hypotheses=tested,
        findings=[item for item in tested if item.finding],
    )
