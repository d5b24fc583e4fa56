"""The report's findings as text (the header block) and as CSV rows; formatting only.

What is a finding was decided once, for the whole report (:mod:`..report_verdicts`).
"""

from __future__ import annotations

from llm_council.bias_audit.report.dashboard.dashboard_findings import certainty_text, size_text
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text


def findings_text_lines(report: BiasReport) -> list[str]:
    """The header block: every finding, or "no finding at the report's error rate"."""
    method = report.error_rate_method or "no hypothesis could be tested"
    lines = ["", f"=== Findings ({method}) ==="]
    if not report.findings:
        lines.append("  No finding at the report's error rate.")
    for finding in report.findings:
        lines.append(
            f"  {finding.subject}: {finding.bias}: {size_text(finding)}; "
            f"{certainty_text(finding, report.error_rate)}"
        )
    if report.hypotheses:
        lines.append(
            f"  {len(report.hypotheses)} estimates tested, {len(report.findings)} finding(s); "
            "the others stay in their sections below, not findings, with their own p-values "
            "(the CSV and JSON list every test with its adjusted p)."
        )
    return lines


def findings_csv_rows(report: BiasReport) -> list[CsvRow]:
    """Two rows per tested hypothesis: its estimate with its own p, then its adjusted p.

    ``section`` is ``finding`` or ``not_a_finding``; ``metric`` is ``family|bias`` (and
    ``|p_adjusted`` on the second row, whose ``p_value`` cell holds the adjusted p).
    """
    rows: list[CsvRow] = []
    for item in report.hypotheses:
        section = "finding" if item.finding else "not_a_finding"
        metric = f"{item.family}|{item.bias}"
        rows.append(
            (
                section,
                item.subject,
                metric,
                cell_text(item.estimate),
                cell_text(item.ci_low),
                cell_text(item.ci_high),
                cell_text(item.p_value),
                "",
            )
        )
        rows.append(
            (
                section,
                item.subject,
                f"{metric}|p_adjusted",
                "",
                "",
                "",
                cell_text(item.p_adjusted),
                "",
            )
        )
    return rows
