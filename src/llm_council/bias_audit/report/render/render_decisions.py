"""Text and CSV of the decisions-affected section (ADR 0046): the debiased vs raw winner."""

from __future__ import annotations

from llm_council.bias_audit.report.analyses.decisions import DecisionsAffected, WinnerChanges
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text, interval_row

_SECTION = "decisions_affected"


def _share_text(changes: WinnerChanges) -> str:
    if changes.n_sessions == 0:
        return "no sessions"
    share, by_adjustments = changes.share_changed, changes.share_changed_by_adjustments
    return (
        f"{changes.n_changed}/{changes.n_sessions} sessions "
        f"({share.estimate:.1%}, 95% CI {share.ci_low:.1%}-{share.ci_high:.1%}); "
        f"by the adjustments alone {changes.n_changed_by_adjustments} "
        f"({by_adjustments.estimate:.1%}, {by_adjustments.ci_low:.1%}-"
        f"{by_adjustments.ci_high:.1%}), ties at the top broken {changes.n_ties_broken}"
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
    """Two rows for the window and two per week: the share of sessions whose winner changed
    against the raw winner, and against the unadjusted mean-score winner."""
    rows = []
    for subject, changes in [("all", decisions.overall)] + [
        (f"week {week.week_start}", week) for week in decisions.weekly
    ]:
        rows.append(
            interval_row(
                _SECTION,
                subject,
                "winner_changed_share",
                changes.share_changed,
                changes.n_sessions,
            )
        )
        rows.append(
            interval_row(
                _SECTION,
                subject,
                "winner_changed_by_adjustments_share",
                changes.share_changed_by_adjustments,
                changes.n_sessions,
            )
        )
        rows.append(
            (_SECTION, subject, "top_ties_broken", cell_text(changes.n_ties_broken), "", "", "", "")
        )
    return rows
