"""HTML tables of the dashboard: the three leaderboards side by side, the causal checks, and
the decisions the debiased aggregate would change (ADR 0046).

The leaderboard table puts each model's raw mean score, its Bradley-Terry strength, the
length-controlled strength and the joint model's adjusted mean in one row, with the rank
each view gives it, so a reader sees at a glance which places depend on length or on the
reviewers' biases. The causal table sets each reviewer's live-check estimates next to the
observational estimate of the same bias, so agreement (or not) is visible.
"""

from __future__ import annotations

import math
from html import escape

from llm_council.bias_audit.report.analyses.causal_checks import CausalChecks, CheckEstimate
from llm_council.bias_audit.report.analyses.decisions import DecisionsAffected
from llm_council.bias_audit.report.dashboard.dashboard_cards import reviewer_name
from llm_council.bias_audit.report.dashboard.dashboard_findings import p_text
from llm_council.bias_audit.report.estimates import Interval, Leaderboard
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import fmt, fmt_interval


def _ranks(values: list[float]) -> list[int | None]:
    """1 = largest; NaN values get no rank."""
    order = sorted((i for i, v in enumerate(values) if math.isfinite(v)), key=lambda i: -values[i])
    ranks: list[int | None] = [None] * len(values)
    for place, index in enumerate(order, start=1):
        ranks[index] = place
    return ranks


def _rank_cell(rank: int | None, reference: int | None) -> str:
    if rank is None:
        return "<td>n/a</td>"
    moved = ""
    if reference is not None and rank != reference:
        arrow, sign = ("up", "+") if rank < reference else ("down", "-")
        moved = f' <span class="moved {arrow}">{sign}{abs(rank - reference)}</span>'
    return f"<td>#{rank}{moved}</td>"


def _interval_cell(interval: Interval) -> str:
    return f"<td>{escape(fmt_interval(interval))}</td>"


def leaderboard_table(board: Leaderboard) -> str:
    """One row per model: raw / Bradley-Terry / length-controlled / adjusted, with ranks."""
    entries = board.entries
    raw_rank = _ranks([e.mean_score for e in entries])
    strength_rank = _ranks([e.strength.estimate for e in entries])
    length_rank = _ranks([e.length_controlled.estimate for e in entries])
    adjusted_rank = _ranks([e.adjusted_mean_score for e in entries])
    rows = []
    for i, entry in enumerate(entries):
        rows.append(
            f"<tr><th>{reviewer_name(entry.model)}</th>"
            f"<td>{fmt(entry.mean_score)}</td>{_rank_cell(raw_rank[i], None)}"
            f"{_interval_cell(entry.strength)}{_rank_cell(strength_rank[i], raw_rank[i])}"
            f"{_interval_cell(entry.length_controlled)}"
            f"{_rank_cell(length_rank[i], raw_rank[i])}"
            f"<td>{fmt(entry.adjusted_mean_score)}</td>"
            f"{_rank_cell(adjusted_rank[i], raw_rank[i])}"
            f"<td>{entry.n_comparisons}</td></tr>"
        )
    return (
        '<table class="grid-table" id="leaderboard-table"><thead><tr><th>model</th>'
        "<th>raw mean score</th><th>rank</th><th>Bradley-Terry [95% CI]</th><th>rank</th>"
        "<th>length-controlled [95% CI]</th><th>rank</th><th>adjusted mean</th><th>rank</th>"
        "<th>comparisons</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _check_cell(estimate: CheckEstimate | None, n_sessions: int, level: float) -> str:
    if estimate is None:
        return f'<td class="muted">too few ({n_sessions} sessions)</td>'
    flagged = ' class="flagged"' if estimate.finding else ""
    return (
        f"<td{flagged}>{fmt(estimate.estimate)} [{fmt(estimate.ci_low)}, "
        f"{fmt(estimate.ci_high)}] {p_text(estimate.p_value)} (n={estimate.n_sessions})</td>"
    )


def causal_table(report: BiasReport, section: CausalChecks) -> str:
    """Per reviewer: live re-shuffle vs observational position trend, padding, repeat."""
    level = report.significance_level
    observed = {
        p.subject: p.trend for p in (report.position.per_reviewer if report.position else [])
    }
    rows = []
    for checks in section.reviewers:
        trend = observed.get(checks.reviewer)
        repeat = checks.repeat
        repeat_cell = (
            f"<td>mean |change| {fmt(repeat.mean_abs_change.estimate)}, ICC "
            f"{fmt(repeat.icc.estimate)} [{fmt(repeat.icc.ci_low)}, {fmt(repeat.icc.ci_high)}]"
            "</td>"
            if repeat is not None
            else f'<td class="muted">too few ({checks.repeat_sessions} sessions)</td>'
        )
        identity = (
            _check_cell(checks.identity_effect, checks.identity_sessions, level)
            if checks.identity_sessions or checks.identity_effect is not None
            else '<td class="muted">not run (opt-in)</td>'
        )
        rows.append(
            f"<tr><th>{reviewer_name(checks.reviewer)}</th>"
            f"{_check_cell(checks.slot_effect, checks.reshuffle_sessions, level)}"
            f"<td>{escape(fmt_interval(trend, 3)) if trend is not None else 'n/a'}</td>"
            f"{_check_cell(checks.padding_effect, checks.padding_sessions, level)}"
            f"{identity}{repeat_cell}</tr>"
        )
    return (
        '<table class="grid-table" id="causal-table"><thead><tr><th>reviewer</th>'
        "<th>re-shuffle: pts per slot later (causal)</th>"
        "<th>observational trend, pts per slot</th><th>padding: pts gained</th>"
        "<th>identity: pts when signed as own</th><th>repeat: self-consistency</th>"
        "</tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def _share_cell(k: int, share: Interval) -> str:
    if not math.isfinite(share.estimate):
        return "<td>n/a</td>"
    return f"<td>{k} ({share.estimate:.1%}, {share.ci_low:.1%}-{share.ci_high:.1%})</td>"


def decisions_table(decisions: DecisionsAffected) -> str:
    """Decisions affected (ADR 0046): the window, then each week, one row each."""
    rows = []
    for label, changes in [("whole window", decisions.overall)] + [
        (f"week of {week.week_start}", week) for week in decisions.weekly
    ]:
        rows.append(
            f"<tr><th>{escape(label)}</th><td>{changes.n_sessions}</td>"
            f"{_share_cell(changes.n_changed, changes.share_changed)}"
            f"{_share_cell(changes.n_changed_by_adjustments, changes.share_changed_by_adjustments)}"
            f"<td>{changes.n_ties_broken}</td></tr>"
        )
    return (
        "<table><thead><tr><th></th><th>sessions</th><th>winner changed (debiased vs raw)</th>"
        "<th>by the adjustments alone</th><th>top ties broken</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )
