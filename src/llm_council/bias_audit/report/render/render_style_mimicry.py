"""Text, CSV and HTML pieces of the style-mimicry section (called by ``render_families``).

Reviewer ids are hostile text: the text renderer makes every line terminal-safe and the
CSV writer neutralises formula cells; the HTML here escapes every id (``html.escape``) and
the forest plot shortens and escapes its labels itself.
"""

from __future__ import annotations

import math
from html import escape

from llm_council.bias_audit.report.analyses.style_mimicry import ReviewerMimicry, StyleMimicry
from llm_council.bias_audit.report.dashboard.svg_plots import forest_plot
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, fmt_p
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text, interval_row


def style_mimicry_text_lines(mimicry: StyleMimicry | None) -> list[str]:
    """The section as text lines (starting with a blank line); none without similarities."""
    if mimicry is None:
        return []
    lines = [
        "",
        "=== Style mimicry (scores vs similarity to the reviewer's own answer) ===",
        f"{mimicry.method} (for reference; verdicts: the report-wide procedure at "
        f"{fmt(mimicry.significance_level)}). Slope in points per "
        f"unit of similarity (0..1); per sd = the slope times the sd of that reviewer's "
        f"similarity within an answer. {mimicry.n_scores_with_similarity} scores with a "
        f"similarity in {mimicry.n_sessions} sessions.",
    ]
    for item in mimicry.reviewers:
        flag = (
            "not identified"
            if not math.isfinite(item.slope.estimate)
            else "MIMICRY"
            if item.detected
            else "none detected"
        )
        lines.append(
            f"  {item.reviewer}: slope {fmt_interval(item.slope)} points "
            f"({fmt(item.points_per_sd)} per sd {fmt(item.within_answer_sd, 3)}; Holm p="
            f"{fmt_p(item.holm_p)}, {flag}); {item.n_sessions} sessions, {item.n_scores} scores"
        )
    return lines


def style_mimicry_csv_rows(mimicry: StyleMimicry | None) -> list[CsvRow]:
    """Rows of the report CSV: the slope with its interval, per-sd effect, Holm p."""
    if mimicry is None:
        return []
    rows: list[CsvRow] = []
    for item in mimicry.reviewers:
        rows.append(
            interval_row("style_mimicry", item.reviewer, "slope", item.slope, item.n_scores)
        )
        rows.append(
            (
                "style_mimicry",
                item.reviewer,
                "points_per_sd",
                cell_text(item.points_per_sd),
                "",
                "",
                cell_text(item.holm_p),
                cell_text(item.n_sessions),
            )
        )
    return rows


def style_mimicry_html_section(mimicry: StyleMimicry | None) -> list[str]:
    """A forest plot of the per-sd effects and a table with every reviewer's numbers."""
    if mimicry is None or not mimicry.reviewers:
        return []
    items = mimicry.reviewers
    plot = forest_plot(
        "Style mimicry: points per sd of similarity to own answer",
        [item.reviewer for item in items],
        [item.points_per_sd for item in items],
        [item.slope.ci_low * item.within_answer_sd for item in items],
        [item.slope.ci_high * item.within_answer_sd for item in items],
        axis_label="points per sd (session-clustered 95% CI)",
        plot_id="plot-style-mimicry",
    )
    rows = "".join(
        f"<tr><td>{escape(item.reviewer)}</td><td>{escape(fmt_interval(item.slope))}</td>"
        f"<td>{escape(fmt(item.points_per_sd))}</td><td>{escape(fmt_p(item.holm_p))}</td>"
        f"<td>{_flag_cell(item)}</td><td>{item.n_sessions}</td></tr>"
        for item in items
    )
    caption = (
        f"{mimicry.method} (for reference); flagged: a finding of the report-wide procedure "
        f"at {fmt(mimicry.significance_level)}."
    )
    return [
        "<h2>Style mimicry</h2>",
        f"<figure>{plot}<figcaption>{escape(caption)}</figcaption></figure>",
        "<table><thead><tr><th>reviewer</th><th>slope (points per unit similarity)</th>"
        "<th>points per sd</th><th>Holm p</th><th>flagged</th><th>sessions</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>",
    ]


def _flag_cell(item: ReviewerMimicry) -> str:
    if not math.isfinite(item.slope.estimate):
        return "not identified"
    return "yes" if item.detected else "no"
