"""The dashboard's findings header: every flag the report's estimators raised, in one list.

A finding is only ever a flag an estimator already set (a Holm-corrected label, a detected
interval, a test below the significance level); this module reads those flags and words
them, it never tests anything itself. Alongside them it lists what could not be tested
(and why), so "nothing flagged" is never confused with "nothing measured".
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_council.bias_audit.report.analyses.causal_checks import CausalChecks, CheckEstimate
from llm_council.bias_audit.report.analyses.families import BiasFamilies
from llm_council.bias_audit.report.estimates import Interval
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, fmt_p


@dataclass(frozen=True)
class Finding:
    """One flagged bias: who, which bias, how big (with interval), how sure."""

    subject: str  # a reviewer id, or "council"
    bias: str
    size: str  # estimate with its 95% interval, in the estimator's unit
    certainty: str  # the corrected p-value or the rule that decided the flag
    section: str  # id of the dashboard section holding the details
    family: str  # the bias family, for the header's counts (leniency, position, ...)


@dataclass(frozen=True)
class Untested:
    """A bias the report could not test on this store, and why."""

    bias: str
    reason: str


@dataclass(frozen=True)
class FindingsSummary:
    findings: list[Finding]
    untested: list[Untested]


def p_text(value: float) -> str:
    """``p=0.013``, ``p<1e-4`` or ``p n/a`` (fmt_p's ``<1e-4`` must not follow an ``=``)."""
    shown = fmt_p(value)
    return f"p{shown}" if shown.startswith("<") else f"p={shown}" if shown != "n/a" else "p n/a"


def _points(interval: Interval, digits: int = 2) -> str:
    return f"{fmt_interval(interval, digits)} points"


def _check_size(estimate: CheckEstimate, unit: str) -> str:
    return (
        f"{fmt(estimate.estimate)} [{fmt(estimate.ci_low)}, {fmt(estimate.ci_high)}] {unit} "
        f"({estimate.n_sessions} sessions)"
    )


def _weekly(mean: float, standard_error: float) -> str:
    """A weekly mean with its +-1.96 se interval (the drift module's weekly intervals)."""
    return f"{fmt(mean)} [{fmt(mean - 1.96 * standard_error)}, {fmt(mean + 1.96 * standard_error)}]"


def _profile_findings(report: BiasReport) -> list[Finding]:
    findings = []
    for profile in report.profiles:
        if profile.leniency_label in ("harsh", "generous"):
            findings.append(
                Finding(
                    profile.reviewer,
                    f"leniency: {profile.leniency_label}",
                    f"{_points(profile.leniency)} vs the reference reviewers",
                    f"Holm step-down {p_text(profile.leniency_p_holm)}",
                    "section-reviewers",
                    "leniency",
                )
            )
    position = report.position
    if position is not None:
        council = position.council
        if council.identified and council.test_p_value < position.significance_level:
            findings.append(
                Finding(
                    "council",
                    f"position: {council.direction}",
                    f"trend {fmt_interval(council.trend, 3)} points per slot later",
                    f"Wald F({council.test_df[0]}, {council.test_df[1]})="
                    f"{fmt(council.test_statistic)}, {p_text(council.test_p_value)}",
                    "section-position",
                    "position",
                )
            )
        for slot_profile in position.per_reviewer:
            if slot_profile.flagged:
                findings.append(
                    Finding(
                        slot_profile.subject,
                        f"position: {slot_profile.direction}",
                        f"trend {fmt_interval(slot_profile.trend, 3)} points per slot later",
                        f"Holm {p_text(slot_profile.adjusted_p_value)} across reviewers",
                        "section-position",
                        "position",
                    )
                )
    length = report.length
    if length is not None and length.pooled.excludes_zero():
        direction = "longer" if length.pooled.estimate > 0 else "shorter"
        findings.append(
            Finding(
                "council",
                f"length: {direction} answers score higher",
                f"within-session r = {fmt_interval(length.pooled, 3)}",
                f"95% interval excludes 0, {p_text(length.pooled.p_value)}",
                "section-length",
                "length",
            )
        )
    for item in report.self_preference:
        if item.detected:
            findings.append(
                Finding(
                    item.reviewer,
                    "self-preference",
                    f"{_points(item.adjusted)} to its own answer (joint model)",
                    "95% interval excludes 0 (per reviewer, not corrected across reviewers)",
                    "section-self",
                    "self-preference",
                )
            )
    return findings


def _reviewer_finding(
    reviewer: str, bias: str, size: str, holm_p: float, family: str | None = None
) -> Finding:
    """A per-reviewer family flag, Holm-corrected across reviewers."""
    return Finding(
        reviewer,
        bias,
        size,
        f"Holm {p_text(holm_p)} across reviewers",
        "section-families",
        family or bias.split(":")[0],
    )


def _family_findings(families: BiasFamilies) -> list[Finding]:
    findings = [
        _reviewer_finding(
            item.reviewer,
            # the test is two-sided: a negative r is a contrast effect, not a pull
            "anchoring" if item.conditional.estimate > 0 else "anchoring: contrast (pushed away)",
            f"conditional r = {fmt_interval(item.conditional, 3)}",
            item.holm_p,
        )
        for item in families.anchoring
        if item.detected
    ]
    matrix = families.favouritism
    if matrix is not None:
        for cell in matrix.cells:
            if not cell.flagged or cell.spillover:
                continue
            kind = (
                "self-preference (favouritism matrix)"
                if cell.is_self
                else f"{'favours' if cell.effect.estimate > 0 else 'disfavours'} {cell.model}"
            )
            findings.append(
                Finding(
                    cell.reviewer,
                    kind,
                    _points(cell.effect),
                    f"Holm {p_text(cell.holm_p)} over {len(matrix.cells)} cells",
                    "section-families",
                    "favouritism",
                )
            )
        for bloc in matrix.mutual_blocs:
            findings.append(
                Finding(
                    ", ".join(bloc),
                    "mutual-favour bloc",
                    "each favours the others (flagged cells both ways)",
                    matrix.correction,
                    "section-families",
                    "favouritism",
                )
            )
    amplified = families.amplification
    if amplified is not None and amplified.excess_p_value < amplified.significance_level:
        findings.append(
            Finding(
                "council",
                "amplification",
                f"{amplified.n_suspect} suspect of {amplified.n_agreeing} agreeing sessions "
                f"(about {fmt(amplified.expected_by_chance, 1)} expected by chance)",
                f"one-sided binomial {p_text(amplified.excess_p_value)}",
                "section-families",
                "amplification",
            )
        )
    mimicry = families.style_mimicry
    findings += [
        _reviewer_finding(
            item.reviewer,
            "style mimicry",
            f"{fmt_interval(item.slope, 2)} points per unit of similarity to its own answer "
            f"({fmt(item.points_per_sd, 2)} per sd), answer quality fixed",
            item.holm_p,
        )
        for item in (mimicry.reviewers if mimicry is not None else [])
        if item.detected
    ]
    findings += [
        _reviewer_finding(
            item.reviewer,
            "reasoning-chain bias",
            f"{fmt_interval(item.points_per_doubling, 2)} points per doubling of its "
            "rationale, on the same answers as the others",
            item.holm_p,
            family="reasoning",
        )
        for item in families.reasoning
        if item.detected
    ]
    if families.drift is not None:
        for series in families.drift.series:
            if series.detected:
                first = _weekly(series.weekly_mean[0], series.weekly_se[0])
                last = _weekly(series.weekly_mean[-1], series.weekly_se[-1])
                findings.append(
                    Finding(
                        series.reviewer,
                        f"drift of {series.quantity.replace('_', ' ')}",
                        f"first week {first}, last week {last}; changed from the week of "
                        f"{series.changed_from}",
                        f"CUSUM, Holm {p_text(series.holm_p)} over all series",
                        "section-reviewers",
                        "drift",
                    )
                )
    return findings


def _causal_findings(section: CausalChecks, significance_level: float) -> list[Finding]:
    findings = []
    for reviewer in section.reviewers:
        checks = (
            ("causal position (re-shuffle)", reviewer.slot_effect, "points per slot later"),
            ("causal verbosity (padding)", reviewer.padding_effect, "points for padding"),
            ("self-recognition (identity)", reviewer.identity_effect, "points when signed"),
        )
        for bias, estimate, unit in checks:
            if estimate is not None and estimate.detected(significance_level):
                findings.append(
                    Finding(
                        reviewer.reviewer,
                        bias,
                        _check_size(estimate, unit),
                        f"{p_text(estimate.p_value)} (per test, not corrected)",
                        "section-causal",
                        "causal checks",
                    )
                )
    return findings


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
    if families.drift is None:
        add(Untested("drift", "no readable timestamps"))
    else:
        skipped = families.drift.series_skipped
        if skipped:
            what = f"all {len(skipped)} series" if not families.drift.series else _some(skipped)
            add(Untested("drift", f"fewer than 3 weeks of data: {what} not tested"))
    return untested


def dashboard_findings(report: BiasReport) -> FindingsSummary:
    """Every flag the report raised, and every bias it could not test."""
    findings = _profile_findings(report)
    if report.families is not None:
        findings += _family_findings(report.families)
    if report.causal_checks is not None:
        findings += _causal_findings(report.causal_checks, report.significance_level)
    return FindingsSummary(findings, _untested(report))
