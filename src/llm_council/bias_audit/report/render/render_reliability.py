"""Text, CSV and HTML of the council reliability section (alpha and score resolution).

Reviewer ids are hostile text: the text renderer makes every line terminal-safe, the CSV
writer neutralises formula cells, and the HTML shows each id through ``reviewer_name``
(escaped, control characters made visible). An undefined alpha is printed as its reason,
never as ``nan``.
"""

from __future__ import annotations

from html import escape

from llm_council.bias_audit.report.analyses.reliability import (
    CANNOT_RANK_LEVELS,
    CouncilAlpha,
    CouncilReliability,
    ReviewerResolution,
)
from llm_council.bias_audit.report.dashboard.dashboard_cards import reviewer_name
from llm_council.bias_audit.report.number_format import fmt, fmt_interval
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text, interval_row

MEANING = (
    "Krippendorff's alpha: how far the reviewers' scores of the same answer agree beyond "
    "chance (1 = identical, 0 = chance, < 0 = systematic disagreement). Agreement, not "
    "correctness: judges sharing one blind spot agree perfectly. Descriptive: not a test, "
    "not part of the findings or their error-rate procedure."
)
UNIT = (
    "Unit = one answer in one session, rated by the other members (self-reviews are missing "
    "cells); coders = reviewers; 95% intervals resample whole sessions."
)


def _scale_text(scale: tuple[float, float]) -> str:
    return f"{scale[0]:g}-{scale[1]:g}"


def _alpha_text(alpha: CouncilAlpha) -> str:
    if alpha.undefined_reason:
        return f"undefined ({alpha.undefined_reason})"
    return fmt_interval(alpha.alpha, 3)


def _resolution_text(item: ReviewerResolution) -> str:
    unused = ", ".join(str(level) for level in item.unused_levels) or "none"
    text = (
        f"  {item.reviewer}: {fmt(item.effective_levels)} effective levels "
        f"({item.distinct_levels} distinct) on {_scale_text(item.scale)}; unused: {unused}; "
        f"{item.n_scores} scores"
    )
    if item.cannot_rank:
        text += f" -- CANNOT RANK (uses <= {CANNOT_RANK_LEVELS:g} levels effectively)"
    return text


def reliability_text_lines(section: CouncilReliability | None) -> list[str]:
    """The section as text lines, starting with a blank line."""
    if section is None:
        return []
    lines = ["", "=== Council reliability (descriptive, not a finding) ===", MEANING, UNIT]
    add = lines.append
    if not section.alphas:
        add("  Alpha: not applicable (no reviewer gives scores: rankings only).")
    else:
        add(
            f"  {section.n_units} answers rated by 2+ reviewers, {section.n_sessions} sessions, "
            f"{section.n_ratings} scores on {_scale_text(section.scale or (0.0, 0.0))}; "
            f"{section.resamples} session resamples."
        )
        for alpha in section.alphas:
            add(f"  Alpha ({alpha.metric}): {_alpha_text(alpha)}")
        defined = [alpha for alpha in section.alphas if not alpha.undefined_reason]
        if defined and len(section.reviewers) >= 3:
            add("  Alpha without each reviewer (change from alpha; > 0: it disagrees most):")
            for index, reviewer in enumerate(section.reviewers):
                parts = [
                    f"{alpha.metric} {fmt(alpha.without[index].estimate, 3)} "
                    f"(change {fmt_interval(alpha.change_without[index], 3)})"
                    for alpha in defined
                ]
                add(f"    {reviewer}: " + "; ".join(parts))
    if section.other_scale_records:
        add(f"  {section.other_scale_records} scores on another scale left out of alpha.")
    if section.rank_only_reviewers:
        add(
            "  Rankings only (left out; score resolution not applicable): "
            + ", ".join(section.rank_only_reviewers)
        )
    add("Score resolution: effective levels = 2^entropy of the reviewer's scores.")
    if not section.resolution:
        add("  not applicable (no reviewer gives scores: rankings only)")
    lines.extend(_resolution_text(item) for item in section.resolution)
    return lines


def reliability_csv_rows(section: CouncilReliability | None) -> list[CsvRow]:
    """Rows in the report CSV's columns (section ``reliability`` / ``score_resolution``)."""
    if section is None:
        return []
    rows: list[CsvRow] = []
    for alpha in section.alphas:
        metric = f"alpha_{alpha.metric}"
        rows.append(interval_row("reliability", "council", metric, alpha.alpha, section.n_units))
        for index, reviewer in enumerate(section.reviewers):
            rows.append(
                interval_row(
                    "reliability", reviewer, f"{metric}_without", alpha.without[index], None
                )
            )
            rows.append(
                interval_row(
                    "reliability",
                    reviewer,
                    f"{metric}_change_without",
                    alpha.change_without[index],
                    None,
                )
            )
    for item in section.resolution:
        n = cell_text(item.n_scores)
        for metric, value in (
            ("effective_levels", cell_text(item.effective_levels)),
            ("distinct_levels", cell_text(item.distinct_levels)),
            ("unused_levels", cell_text(len(item.unused_levels))),
            ("cannot_rank", cell_text(int(item.cannot_rank))),
        ):
            rows.append(("score_resolution", item.reviewer, metric, value, "", "", "", n))
    return rows


def reliability_html_section(section: CouncilReliability | None) -> str:
    """One dashboard panel: alpha per metric, alpha without each reviewer, resolution."""
    if section is None:
        return ""
    parts = [f"<p>{escape(MEANING)} {escape(UNIT)}</p>"]
    if section.alphas:
        alpha_rows = "".join(
            f"<tr><td>{escape(alpha.metric)}</td><td>{escape(_alpha_text(alpha))}</td></tr>"
            for alpha in section.alphas
        )
        parts.append(
            "<table><thead><tr><th>metric</th><th>alpha [95% CI]</th></tr></thead>"
            f"<tbody>{alpha_rows}</tbody></table>"
        )
        defined = [alpha for alpha in section.alphas if not alpha.undefined_reason]
        if defined and len(section.reviewers) >= 3:
            head = "".join(f"<th>change without, {escape(a.metric)}</th>" for a in defined)
            body = "".join(
                f"<tr><td>{reviewer_name(reviewer)}</td>"
                + "".join(
                    f"<td>{escape(fmt_interval(a.change_without[index], 3))}</td>" for a in defined
                )
                + "</tr>"
                for index, reviewer in enumerate(section.reviewers)
            )
            parts.append(
                f"<table><thead><tr><th>reviewer</th>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>"
            )
    else:
        parts.append("<p>Alpha: not applicable (rankings only).</p>")
    if section.resolution:
        body = "".join(
            f"<tr><td>{reviewer_name(item.reviewer)}</td><td>{escape(fmt(item.effective_levels))}</td>"
            f"<td>{item.distinct_levels}</td>"
            f"<td>{escape(', '.join(str(v) for v in item.unused_levels) or 'none')}</td>"
            f"<td>{'cannot rank' if item.cannot_rank else ''}</td></tr>"
            for item in section.resolution
        )
        parts.append(
            "<table><thead><tr><th>reviewer</th><th>effective levels</th><th>distinct</th>"
            f"<th>unused levels</th><th>note</th></tr></thead><tbody>{body}</tbody></table>"
        )
    else:
        parts.append("<p>Score resolution: not applicable (rankings only).</p>")
    return (
        '<section id="section-reliability" class="panel wide"><h2>Council reliability '
        f"(descriptive)</h2>{''.join(parts)}</section>"
    )
