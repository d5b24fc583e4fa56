"""The dashboard's anytime-monitor panel (ADR 0053): one row per (reviewer, bias)."""

from __future__ import annotations

from html import escape

from llm_council.bias_audit.report.analyses.monitor import MonitorRow, MonitorSection
from llm_council.bias_audit.report.dashboard.dashboard_cards import reviewer_name
from llm_council.bias_audit.report.dashboard.dashboard_plots import section
from llm_council.bias_audit.report.number_format import fmt


def _row_html(row: MonitorRow) -> str:
    css = ' class="flagged"' if row.status == "confirmed" else ""
    if row.status == "confirmed":
        verdict = f"confirmed at session {row.confirmed_at_session} ({escape(row.direction)})"
    else:
        verdict = escape(row.status)
    return (
        f"<tr{css}><th>{reviewer_name(row.reviewer)}</th><td>{escape(row.bias)}</td>"
        f"<td>{verdict}</td><td>{escape(fmt(row.estimate))}</td>"
        f"<td>[{escape(fmt(row.low))}, {escape(fmt(row.high))}]</td><td>{row.sessions}</td></tr>"
    )


def monitor_section_html(monitor: MonitorSection) -> str:
    """The panel: settings, the guarantee note, and the table (or why it is unavailable)."""
    title = "Anytime monitor (valid at every look; not a finding)"
    if monitor.status != "ok":
        body = f"<p>Unavailable: {escape(monitor.reason)}</p>"
        return section("section-monitor", title, body, css="panel wide")
    header = (
        f"<p>{monitor.sessions} sessions; practical null |effect| &le; "
        f"{escape(fmt(monitor.delta0))} points; alpha {monitor.alpha:g}. "
        f"{escape(monitor.note)}</p>"
    )
    rows = "".join(_row_html(row) for row in monitor.rows)
    table = (
        "<table><thead><tr><th>reviewer</th><th>bias</th><th>status</th>"
        "<th>effect (points)</th><th>bounds (every look)</th><th>sessions</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )
    return section("section-monitor", title, header + table, css="panel wide")
