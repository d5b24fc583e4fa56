"""The dashboard's findings header: the report's findings list, worded, and what was untested.

The findings are decided once, for the whole report, by one multiplicity procedure
(:mod:`..report_verdicts`, ADR 0054); this module only words ``report.findings``, it never
tests or decides anything itself. Alongside them it lists what could not be tested (and
why), so "no finding" is never confused with "nothing measured".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from llm_council.bias_audit.report.finding import Finding
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import fmt, fmt_p


@dataclass(frozen=True)
class FindingRow:
    """One finding as the header shows it: who, which bias, how big, how sure."""

    subject: str  # a reviewer id, or "council"
    bias: str
    size: str  # estimate with its 95% interval (when it has one), in the estimator's unit
    certainty: str  # the report-wide adjusted p, and the test's own p
    section: str  # id of the dashboard section holding the details
    family: str  # the bias family, for the header's counts (leniency, position, ...)


@dataclass(frozen=True)
class Untested:
    """A bias the report could not test on this store, and why."""

    bias: str
    reason: str


@dataclass(frozen=True)
class FindingsSummary:
    findings: list[FindingRow]
    untested: list[Untested]


def p_text(value: float) -> str:
    """``p=0.013``, ``p<1e-4`` or ``p n/a`` (fmt_p's ``<1e-4`` must not follow an ``=``)."""
    shown = fmt_p(value)
    return f"p{shown}" if shown.startswith("<") else f"p={shown}" if shown != "n/a" else "p n/a"


def size_text(finding: Finding) -> str:
    """The estimate, its 95% interval when it has one, and its unit."""
    digits = 3 if finding.unit.endswith("r") else 2
    interval = (
        f" [{fmt(finding.ci_low, digits)}, {fmt(finding.ci_high, digits)}]"
        if math.isfinite(finding.ci_low) and math.isfinite(finding.ci_high)
        else ""
    )
    return f"{fmt(finding.estimate, digits)}{interval} {finding.unit}"


def certainty_text(finding: Finding, error_rate: str) -> str:
    """The report-wide adjusted p (named by the error rate) and the test's own p."""
    promise = "false discovery rate" if error_rate == "fdr" else "family-wise"
    return f"adjusted {p_text(finding.p_adjusted)} ({promise}); alone {p_text(finding.p_value)}"


def _some(names: list[str], shown: int = 4) -> str:
    """The first ``shown`` names, then how many more (a long list would bury the header)."""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return ", ".join(names[:shown]) + more


def _untested(report: BiasReport) -> list[Untested]:
    untested: list[Untested] = []
    add = untested.append
    if report.profiles and all(p.leniency_label == "not identified" for p in report.profiles):
        add(Untested("leniency", "forced-choice scale: every session's scores share one total"))
    if report.length is None:
        add(Untested("length", "not enough scored records"))
    position = report.position
    if position is None:
        add(Untested("position", "needs sessions with 2+ scored candidates"))
    else:
        if not position.council.identified:
            add(Untested("position (council)", position.council.direction))
        unidentified = [p.subject for p in position.per_reviewer if not p.identified]
        if unidentified:
            add(Untested("position per reviewer", "not identified for " + _some(unidentified)))
    if not report.self_preference:
        add(Untested("self-preference", "no self-reviews in the store (reviewers recused)"))
    if report.leaderboard is None:
        add(Untested("leaderboard", "no connected ranked comparisons"))
    if report.causal_checks is None:
        add(
            Untested(
                "causal checks",
                "no live check reviews in the store (LLM_COUNCIL_BIAS_CHECK_PROBABILITY is 0)",
            )
        )
    else:
        minimum = report.causal_checks.min_sessions
        for reviewer in report.causal_checks.reviewers:
            kinds = (
                ("re-shuffle", reviewer.slot_effect, reviewer.reshuffle_sessions),
                ("repeat", reviewer.repeat, reviewer.repeat_sessions),
                ("padding", reviewer.padding_effect, reviewer.padding_sessions),
            )
            short = [f"{kind} ({n})" for kind, value, n in kinds if value is None]
            if short:
                add(
                    Untested(
                        f"causal checks ({reviewer.reviewer})",
                        f"fewer than {minimum} sessions: " + ", ".join(short),
                    )
                )
    families = report.families
    if families is None:
        add(Untested("anchoring, favouritism, drift, amplification", "not computed"))
        return untested
    for note in families.notes:
        add(Untested("families", note))
    unidentified = [a.reviewer for a in families.anchoring if not a.identified]
    if unidentified:
        add(
            Untested(
                "anchoring",
                "not identified (3 or fewer answers a review, rank points or a "
                "forced-choice scale) for " + _some(unidentified),
            )
        )
    thin = [
        a.reviewer
        for a in families.anchoring
        if a.identified and not math.isfinite(a.conditional.p_value)
    ]
    if thin:
        add(Untested("anchoring", "fewer than 20 informative sessions for " + _some(thin)))
    amplified = families.amplification
    if amplified is not None and amplified.n_agreeing == 0:
        add(
            Untested(
                "amplification",
                f"no session (of {amplified.n_sessions}) had its reviewers agreeing strongly "
                f"(mean pairwise r >= {fmt(amplified.agreement_threshold, 1)}), the only "
                "sessions screened",
            )
        )
    if families.drift is None:
        add(Untested("drift", "no readable timestamps"))
    else:
        skipped = families.drift.series_skipped
        if skipped:
            what = f"all {len(skipped)} series" if not families.drift.series else _some(skipped)
            add(Untested("drift", f"fewer than 3 weeks of data: {what} not tested"))
    return untested


def dashboard_findings(report: BiasReport) -> FindingsSummary:
    """The report's findings, worded for the header, and every bias it could not test."""
    rows = [
        FindingRow(
            finding.subject,
            finding.bias,
            size_text(finding),
            certainty_text(finding, report.error_rate),
            finding.section,
            finding.family,
        )
        for finding in report.findings
    ]
    return FindingsSummary(rows, _untested(report))
