"""The dashboard: one self-contained HTML file (inline CSS and SVG, no script, nothing fetched).

Read top to bottom in about a minute: the findings header (the report's findings list,
and what could not be tested), one card per reviewer, then the plots (position, leniency,
length, self-preference), the leaderboard with raw / length-controlled / adjusted side by
side, the bias families (favouritism heat map and whatever ``render_families`` adds), the
causal checks and the method notes, with the full text report folded at the end so every
number in a picture is also in words.
"""

from __future__ import annotations

from html import escape

from llm_council.bias_audit.report.dashboard.dashboard_cards import reviewer_cards, reviewer_name
from llm_council.bias_audit.report.dashboard.dashboard_findings import (
    FindingsSummary,
    dashboard_findings,
)
from llm_council.bias_audit.report.dashboard.dashboard_monitor import monitor_section_html
from llm_council.bias_audit.report.dashboard.dashboard_plots import (
    leaderboard_section,
    length_section,
    leniency_section,
    position_section,
    section,
    self_preference_section,
)
from llm_council.bias_audit.report.dashboard.dashboard_style import DASHBOARD_CSS, METHOD_NOTES
from llm_council.bias_audit.report.dashboard.dashboard_tables import causal_table, decisions_table
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.render.effective_judges_note import effective_judges_note_html
from llm_council.bias_audit.report.render.render_families import families_html_sections
from llm_council.bias_audit.report.render.render_text import render_text
from llm_council.infra.safe_text import terminal_safe


def _safe(text: str) -> str:
    """Text that may quote untrusted ids: control and bidi characters shown, then escaped."""
    return escape(terminal_safe(text))


def _findings_html(summary: FindingsSummary, report: BiasReport) -> str:
    method = _safe(report.error_rate_method or "no test ran")
    if summary.findings:
        rows = "".join(
            f'<tr><td>{reviewer_name(f.subject)}</td><td><a href="#{f.section}">'
            f"{_safe(f.bias)}</a></td><td>{_safe(f.size)}</td><td>{_safe(f.certainty)}</td>"
            "</tr>"
            for f in summary.findings
        )
        counts: dict[str, int] = {}
        for finding in summary.findings:
            counts[finding.family] = counts.get(finding.family, 0) + 1
        chips = "".join(
            f'<span class="chip">{escape(family)} <b>{count}</b></span>'
            for family, count in counts.items()
        )
        body = (
            f'<p class="lead">{len(summary.findings)} finding(s) of one procedure over the '
            f"whole report: {method}. Sizes carry 95% intervals.</p>"
            f'<p class="chips">{chips}</p>'
            '<table class="grid-table" id="findings-table"><thead><tr><th>who</th>'
            "<th>bias</th><th>how big</th><th>how sure</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>"
        )
    else:
        body = (
            f'<p class="lead nothing">No finding at the report\'s error rate ({method}). '
            "That bounds, not rules out, each bias: read the intervals below.</p>"
        )
    if summary.untested:
        items = "".join(
            f"<li><b>{_safe(u.bias)}</b>: {_safe(u.reason)}</li>" for u in summary.untested
        )
        body += f'<div class="untested"><h3>Could not be tested here</h3><ul>{items}</ul></div>'
    return f'<section id="findings" class="panel wide"><h2>Findings</h2>{body}</section>'


def _causal_html(report: BiasReport) -> str:
    if report.causal_checks is None:
        body = (
            "<p>No live check reviews in this store. Set "
            "<code>LLM_COUNCIL_BIAS_CHECK_PROBABILITY</code> (e.g. 0.1) to re-ask a sample of "
            "reviewers with the answers re-shuffled, repeated or padded.</p>"
        )
    else:
        checks = report.causal_checks
        body = (
            f"<p>{checks.n_check_reviews} check reviews. Each re-asks a reviewer about the same "
            "answers with one thing changed, so the difference is causal; the observational "
            "estimate of the same bias sits next to it. Intervals are session-clustered; "
            f"p-values are per test (not corrected); kinds need {checks.min_sessions}+ "
            f"sessions.</p>{causal_table(report, checks)}"
        )
    return section("section-causal", "Causal checks (live re-asks)", body, css="panel wide")


def render_html(report: BiasReport) -> str:
    """The report as one self-contained HTML dashboard."""
    window = f" since {escape(report.since)}" if report.since else ""
    window += f" until {escape(report.until)}" if report.until else ""
    parts = [
        f'<header class="top"><h1>llm-council bias dashboard</h1><p class="meta">'
        f"{report.n_records} records{window} from <code>{reviewer_name(report.store)}</code>: "
        f"{report.n_sessions} sessions, {report.n_reviewers} reviewers, {report.n_models} "
        f"models; generated {escape(report.generated_at)}. All intervals are 95% and treat "
        "sessions, not records, as the unit.</p></header>"
    ]
    parts += [f'<p class="warning">{_safe(warning)}</p>' for warning in report.warnings]
    parts.append(_findings_html(dashboard_findings(report), report))
    parts.append(
        section("section-reviewers", "Reviewers", reviewer_cards(report), css="panel wide")
    )
    plots = []
    if report.position is not None:
        plots.append(position_section(report.position))
    plots += [leniency_section(report), length_section(report), self_preference_section(report)]
    parts.append(f'<div class="plots">{"".join(plots)}</div>')
    if report.leaderboard is not None:
        parts.append(leaderboard_section(report.leaderboard))
        parts.append(effective_judges_note_html())  # not identified from scores (ADR 0025)
    if report.families is not None:
        family_parts = families_html_sections(report.families)
        if family_parts:
            parts.append(
                f'<section id="section-families" class="panel wide families">'
                f"{''.join(family_parts)}</section>"
            )
    parts.append(_causal_html(report))
    if report.decisions is not None:
        parts.append(
            section(
                "section-decisions",
                "Decisions affected (debiased vs raw winner, adjustments fitted on this window)",
                decisions_table(report.decisions),
                css="panel wide",
            )
        )
    if report.reliability is not None:  # ADR 0062
        from llm_council.bias_audit.report.render.render_reliability import (
            reliability_html_section,
        )

        parts.append(reliability_html_section(report.reliability))
    if report.fingerprints is not None:  # ADR 0062
        from llm_council.bias_audit.report.render.render_fingerprints import (
            fingerprints_html_section,
        )

        parts.append(fingerprints_html_section(report.fingerprints))
    if report.monitor is not None:
        parts.append(monitor_section_html(report.monitor))
    notes = "".join(f"<li>{escape(note)}</li>" for note in METHOD_NOTES)
    parts.append(
        section(
            "section-method",
            "Method notes",
            f"<ul>{notes}</ul><details><summary>Full text report</summary>"
            f"<pre>{escape(render_text(report))}</pre></details>",
            css="panel wide",
        )
    )
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>llm-council bias dashboard</title><style>{DASHBOARD_CSS}</style></head>"
        f"<body>\n{body}\n</body></html>\n"
    )
