"""Text and CSV of the decisions-affected section (ADR 0046): the debiased vs raw winner."""

from __future__ import annotations

from llm_council.bias_audit.report.analyses.decisions import DecisionsAffected, WinnerChanges
from llm_council.bias_audit.report.render.csv_cells import CsvRow, interval_row

_SECTION = "decisions_affected"


def _share_text(changes: WinnerChanges) -> str:
    share = changes.share_changed
    if changes.n_sessions == 0:
        return "no sessions"
    return (
        f"{changes.n_changed}/{changes.n_sessions} sessions "
        f"({share.estimate:.1%}, 95% CI {share.ci_low:.1%}-{share.ci_high:.1%})"
    )


def decisions_text_lines(decisions: DecisionsAffected) -> list[str]:
    """The section as text lines: the whole window, then one line per week."""
    lines = [
        "",
        "Decisions affected (debiased vs raw winner; adjustments fitted on this window, "
        f"{decisions.n_adjusted_reviewers} reviewers adjusted):",
        f"  whole window: winner changed in {_share_text(decisions.overall)}",
    ]
    for week in decisions.weekly:
        lines.append(f"  week of {week.week_start}: {_share_text(week)}")
    if decisions.n_untimed_sessions:
        lines.append(f"  ({decisions.n_untimed_sessions} sessions without a readable time)")
    return lines


def decisions_csv_rows(decisions: DecisionsAffected) -> list[CsvRow]:
    """One row for the window and one per week: the share of sessions whose winner changed."""
    rows = [
        interval_row(
            _SECTION,
            "all",
            "winner_changed_share",
            decisions.overall.share_changed,
            decisions.overall.n_sessions,
        )
    ]
    rows += [
        interval_row(
            _SECTION,
            f"week {week.week_start}",
            "winner_changed_share",
            week.share_changed,
            week.n_sessions,
        )
        for week in decisions.weekly
    ]
    return rows
