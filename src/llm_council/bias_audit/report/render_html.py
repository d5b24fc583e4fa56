"""One self-contained HTML file: inline CSS and SVG, no script, nothing fetched.

Plots: score by display position, reviewer leniency (forest plot), length vs score with the
fitted line, self-preference per reviewer, and the leaderboard, each with 95% intervals.
The full text report follows the plots, so every number in a picture is also in words.
"""

from __future__ import annotations

from html import escape

from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.render_text import fmt, fmt_p, render_text, slot_letter
from llm_council.bias_audit.report.svg_plots import forest_plot, heatmap_plot, scatter_plot

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 860px; color: #1d232a; line-height: 1.45; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
figure { margin: 1.2em 0; } figcaption { font-size: 0.9em; color: #4a5561; max-width: 640px; }
svg { background: #fff; border: 1px solid #d9dee3; }
svg .title { font-size: 13px; font-weight: 600; }
svg .label, svg .tick, svg .axis { font-size: 11px; }
svg .grid { stroke: #eef1f4; } svg .reference { stroke: #8a96a3; stroke-dasharray: 4 3; }
svg .interval { stroke: #2f6db3; stroke-width: 2.5; } svg circle.mark { fill: #163d6b; }
svg circle.point { fill: #2f6db3; fill-opacity: 0.35; }
svg .fit { stroke: #c2410c; stroke-width: 2.5; }
svg .frame { fill: none; stroke: #d9dee3; }
.warning { background: #fff4e5; border-left: 4px solid #c2410c; padding: 0.4em 0.8em; }
pre { background: #f6f8fa; padding: 1em; overflow-x: auto; font-size: 12px; }
"""


def _figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def render_html(report: BiasReport) -> str:
    """The report as one HTML document with five inline SVG plots."""
    sections: list[str] = []
    since = f" since {escape(report.since)}" if report.since else ""
    since += f" until {escape(report.until)}" if report.until else ""
    sections.append(
        f"<p>{report.n_records} records{since} from <code>{escape(report.store)}</code>: "
        f"{report.n_sessions} sessions, {report.n_reviewers} reviewers, {report.n_models} models. "
        "All intervals are 95% and treat sessions, not records, as the unit.</p>"
    )
    for warning in report.warnings:
        sections.append(f'<p class="warning">{escape(warning)}</p>')

    if report.position is not None:
        position = report.position
        council = position.council
        sections.append("<h2>Score by display position</h2>")
        verdict = (
            f"Council-wide slot effects: F({council.test_df[0]}, {council.test_df[1]}) = "
            f"{fmt(council.test_statistic)}, p = {fmt_p(council.test_p_value)}; "
            f"direction: {council.direction}."
            if council.identified
            else f"Council-wide slot effects: {council.direction}."
        )
        sections.append(
            _figure(
                forest_plot(
                    "Mean score by display slot",
                    [f"slot {slot_letter(slot)}" for slot in position.positions],
                    [m.estimate for m in position.mean_score],
                    [m.ci_low for m in position.mean_score],
                    [m.ci_high for m in position.mean_score],
                    axis_label="mean score (session-clustered 95% CI)",
                    reference=None,
                    plot_id="plot-position",
                ),
                verdict,
            )
        )
        reviewers = position.per_reviewer
        sections.append(
            _figure(
                heatmap_plot(
                    "Slot effect per reviewer",
                    [profile.subject for profile in reviewers],
                    [f"slot {slot_letter(slot)}" for slot in position.positions],
                    [[e.estimate for e in profile.slot_effect] for profile in reviewers],
                    [[(e.ci_low, e.ci_high) for e in profile.slot_effect] for profile in reviewers],
                    row_notes=[
                        f"{profile.direction}{', flagged' if profile.flagged else ''}"
                        f" ({profile.basis})"
                        for profile in reviewers
                    ],
                    plot_id="plot-position-by-reviewer",
                ),
                "Points vs the reviewer's own average slot (within answers when reviewers saw "
                "different orders, else across sessions; session-clustered intervals in the "
                "tooltips); flagged when the "
                "reviewer's Wald test survives Holm's correction across reviewers at "
                f"{fmt(100 * position.significance_level, 0)}%.",
            )
        )

    sections.append("<h2>Reviewer leniency</h2>")
    profiles = report.profiles
    sections.append(
        _figure(
            forest_plot(
                "Leniency vs the reference reviewers on the same answers",
                [profile.reviewer for profile in profiles],
                [profile.leniency.estimate for profile in profiles],
                [profile.leniency.ci_low for profile in profiles],
                [profile.leniency.ci_high for profile in profiles],
                axis_label="points above (+) or below (-) the others",
                plot_id="plot-leniency",
            ),
            "Each reviewer's mean paired deviation from the reference reviewers (outliers removed "
            "by a Holm step-down); harsh/generous when the step-down flags it (5% family-wise).",
        )
    )

    if report.length is not None:
        length = report.length
        sections.append("<h2>Length vs score</h2>")
        sections.append(
            _figure(
                scatter_plot(
                    "Score vs answer length (sample of records)",
                    length.sample_words,
                    length.sample_scores,
                    x_label="answer length, words (log scale)",
                    y_label="score",
                    fitted_line=(length.fitted_intercept, length.fitted_slope),
                    log_x=True,
                    plot_id="plot-length",
                ),
                f"Pooled within-session r = {fmt(length.pooled.estimate, 3)} "
                f"[{fmt(length.pooled.ci_low, 3)}, {fmt(length.pooled.ci_high, 3)}] over "
                f"{length.n_sessions} sessions; line: least squares of score on ln(words).",
            )
        )

    sections.append("<h2>Self-preference</h2>")
    if report.self_preference:
        items = report.self_preference
        sections.append(
            _figure(
                forest_plot(
                    "Bonus to its own answer (joint model)",
                    [item.reviewer for item in items],
                    [item.adjusted.estimate for item in items],
                    [item.adjusted.ci_low for item in items],
                    [item.adjusted.ci_high for item in items],
                    axis_label="points (session-clustered 95% CI)",
                    plot_id="plot-self-preference",
                ),
                "Holding the reviewer's leniency, the slot and its taste for length fixed.",
            )
        )
    else:
        sections.append("<p>No self-reviews in the store (reviewers were recused).</p>")

    if report.leaderboard is not None:
        entries = report.leaderboard.entries
        sections.append("<h2>Leaderboard</h2>")
        sections.append(
            _figure(
                forest_plot(
                    "Bradley-Terry strength from rankings",
                    [entry.model for entry in entries],
                    [entry.strength.estimate for entry in entries],
                    [entry.strength.ci_low for entry in entries],
                    [entry.strength.ci_high for entry in entries],
                    axis_label="centred log strength (session bootstrap 95% CI)",
                    plot_id="plot-leaderboard",
                ),
                f"{report.leaderboard.n_resamples} bootstrap resamples of sessions; "
                "self-reviews excluded. Length-controlled strengths are in the text below.",
            )
        )

    if report.families is not None:
        from llm_council.bias_audit.report.render_families import families_html_sections

        sections.extend(families_html_sections(report.families))
    sections.append("<h2>Full report</h2>")
    sections.append(f"<pre>{escape(render_text(report))}</pre>")
    body = "\n".join(sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>llm-council bias report</title><style>{_STYLE}</style></head>"
        f"<body><h1>llm-council bias report</h1>\n{body}\n</body></html>\n"
    )
