"""Text and CSV of the anytime monitor's section (ADR 0053): each reviewer watching or confirmed."""

from __future__ import annotations

from llm_council.bias_audit.report.analyses.monitor import MonitorRow, MonitorSection
from llm_council.bias_audit.report.number_format import fmt
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text

_SECTION = "monitor"


def _bounds(row: MonitorRow) -> str:
    return f"[{fmt(row.low)}, {fmt(row.high)}]"


def _row_text(row: MonitorRow) -> str:
    if row.status == "not estimated":
        return f"  {row.reviewer} {row.bias}: not estimated (no session gave an estimate)"
    verdict = (
        f"CONFIRMED at session {row.confirmed_at_session} ({row.direction})"
        if row.status == "confirmed"
        else "watching"
    )
    return (
        f"  {row.reviewer} {row.bias}: {verdict}; effect {fmt(row.estimate)} points, "
        f"bounds {_bounds(row)} over {row.sessions} sessions"
    )


def monitor_text_lines(monitor: MonitorSection) -> list[str]:
    """The section as text lines: the settings and the guarantee, then one line per
    (reviewer, bias)."""
    if monitor.status != "ok":
        return ["", f"Anytime monitor (ADR 0053): unavailable: {monitor.reason}"]
    confirmed = ", ".join(monitor.confirmed) if monitor.confirmed else "none"
    lines = [
        "",
        f"Anytime monitor (ADR 0053): {monitor.sessions} sessions, practical null |effect| <= "
        f"{fmt(monitor.delta0)} points, alpha {monitor.alpha:g}; reviewers confirmed: "
        f"{confirmed}",
        f"  {monitor.note}",
    ]
    lines.extend(_row_text(row) for row in monitor.rows)
    return lines


def monitor_csv_rows(monitor: MonitorSection) -> list[CsvRow]:
    """Per (reviewer, bias): the effect with its confidence-sequence bounds (``n``: the
    sessions that gave an estimate), and the session count at confirmation (empty while
    watching); the p-value column is empty (an e-process has none). An unavailable
    monitor is one row whose subject says why."""
    if monitor.status != "ok":
        return [(_SECTION, f"unavailable: {monitor.reason}", "status", "", "", "", "", "")]
    rows: list[CsvRow] = []
    for row in monitor.rows:
        subject = f"{row.reviewer} {row.bias}"
        rows.append(
            (
                _SECTION,
                subject,
                "effect_points",
                cell_text(row.estimate),
                cell_text(row.low),
                cell_text(row.high),
                "",
                cell_text(row.sessions),
            )
        )
        rows.append(
            (
                _SECTION,
                subject,
                f"confirmed_at_session ({row.status})",
                cell_text(row.confirmed_at_session),
                "",
                "",
                "",
                cell_text(row.sessions),
            )
        )
    return rows
