"""Text, CSV and HTML of the fingerprint segments section (ADR 0062).

Model ids and reviewer ids are hostile text: the text renderer makes every line
terminal-safe, the CSV writer neutralises formula cells, the HTML escapes them through
``reviewer_name``. Hashes are shown shortened to 12 hex digits.
"""

from __future__ import annotations

from html import escape
from typing import Any

from llm_council.bias_audit.report.analyses.fingerprints import (
    FingerprintHistory,
    FingerprintSegment,
    SegmentChange,
)
from llm_council.bias_audit.report.dashboard.dashboard_cards import reviewer_name
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, fmt_p
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text, interval_row

_NAMES = {
    "provider": "provider",
    "model": "model id",
    "prompt_sha256": "prompt",
    "rubric_sha256": "rubric",
    "temperature": "temperature",
    "scale": "scale",
    "options_sha256": "options",
}


def _value(name: str, value: Any) -> str:
    if value is None:
        return "none"
    if name.endswith("_sha256") and isinstance(value, str):
        return value[:12]
    if isinstance(value, list):
        return "-".join(f"{item:g}" if isinstance(item, float) else str(item) for item in value)
    return str(value)


def change_text(change: SegmentChange) -> str:
    """``model id changed: a -> b`` for each component, or why none can be named."""
    if not change.components:
        return "fingerprint first recorded (or no longer recorded): components not comparable"
    return "; ".join(
        f"{_NAMES.get(item.component, item.component)} changed: "
        f"{_value(item.component, item.before)} -> {_value(item.component, item.after)}"
        for item in change.components
    )


def _signed(value: float) -> str:
    text = fmt(value)
    return f"+{text}" if value == value and value > 0 else text


def _segment_text(segment: FingerprintSegment) -> str:
    model = (
        "unrecorded"
        if segment.fingerprint is None
        else _value("model", segment.fingerprint["model"])
    )
    return (
        f"    {model}: sessions {segment.first_session} .. {segment.last_session} "
        f"({segment.n_sessions} sessions, {segment.first_time or '?'} .. "
        f"{segment.last_time or '?'}); leniency {fmt_interval(segment.leniency)}"
    )


def _verdict(change: SegmentChange) -> str:
    if change.difference.p_value != change.difference.p_value:
        return "not tested (a segment has fewer than 3 sessions with paired scores)"
    flag = "FINDING" if change.finding else "not a finding"
    return f"p={fmt_p(change.difference.p_value)}, {flag}"


def fingerprints_text_lines(section: FingerprintHistory | None) -> list[str]:
    """The section as text lines, starting with a blank line; none for a store without
    fingerprints."""
    if section is None:
        return []
    lines = [
        "",
        "=== Reviewer fingerprints: history split where a reviewer's set-up changed ===",
        "Leniency per segment: mean of its score minus the other reviewers' mean on the same "
        "answer (relative: a change that moves every judge alike does not show); 95% "
        "session-clustered t intervals; a change is a finding only through the report-wide "
        "procedure.",
    ]
    add = lines.append
    add(
        f"  {section.n_reviewers_with_fingerprints} reviewers with fingerprints, "
        f"{section.n_reviewers_single_fingerprint} of them with one fingerprint throughout."
    )
    if section.n_invalid_fingerprints:
        add(
            f"  {section.n_invalid_fingerprints} stored fingerprints failed validation and "
            "were read as unrecorded."
        )
    for reviewer in section.reviewers:
        add(f"  {reviewer.reviewer}: {len(reviewer.segments)} segments")
        for index, segment in enumerate(reviewer.segments):
            lines.append(_segment_text(segment))
            if index < len(reviewer.changes):
                change = reviewer.changes[index]
                after = reviewer.segments[index + 1].leniency.estimate
                add(
                    f"    -> {change_text(change)}; leniency {_signed(segment.leniency.estimate)}"
                    f" -> {_signed(after)}, difference {fmt_interval(change.difference)} "
                    f"({_verdict(change)})"
                )
    return lines


def fingerprints_csv_rows(section: FingerprintHistory | None) -> list[CsvRow]:
    """Rows in the report CSV's columns (section ``fingerprint_segment`` / ``_change``)."""
    if section is None:
        return []
    rows: list[CsvRow] = []
    for reviewer in section.reviewers:
        for index, segment in enumerate(reviewer.segments):
            rows.append(
                interval_row(
                    "fingerprint_segment",
                    reviewer.reviewer,
                    f"leniency:{index}",
                    segment.leniency,
                    segment.n_sessions,
                )
            )
        for change in reviewer.changes:
            components = ",".join(item.component for item in change.components) or "unknown"
            rows.append(
                interval_row(
                    "fingerprint_change",
                    reviewer.reviewer,
                    f"leniency_difference:{change.index}:{components}",
                    change.difference,
                    None,
                )
            )
    rows.append(
        (
            "fingerprint_summary",
            "council",
            "reviewers_with_fingerprints",
            cell_text(section.n_reviewers_with_fingerprints),
            "",
            "",
            "",
            "",
        )
    )
    return rows


def fingerprints_html_section(section: FingerprintHistory | None) -> str:
    """One dashboard panel: a row per segment, the change under it."""
    if section is None:
        return ""
    body = []
    for reviewer in section.reviewers:
        for index, segment in enumerate(reviewer.segments):
            model = "unrecorded" if segment.fingerprint is None else segment.fingerprint["model"]
            body.append(
                f"<tr><td>{reviewer_name(reviewer.reviewer)}</td>"
                f"<td>{reviewer_name(str(model))}</td>"
                f"<td>{escape(segment.first_session)} .. {escape(segment.last_session)}</td>"
                f"<td>{segment.n_sessions}</td>"
                f"<td>{escape(fmt_interval(segment.leniency))}</td></tr>"
            )
            if index < len(reviewer.changes):
                change = reviewer.changes[index]
                body.append(
                    f'<tr class="{"flagged" if change.finding else "change"}"><td></td>'
                    f'<td colspan="3">{reviewer_name(change_text(change))}</td>'
                    f"<td>difference {escape(fmt_interval(change.difference))} "
                    f"({escape(_verdict(change))})</td></tr>"
                )
    summary = (
        f"{section.n_reviewers_with_fingerprints} reviewers with fingerprints, "
        f"{section.n_reviewers_single_fingerprint} with one throughout."
    )
    table = (
        "<table><thead><tr><th>reviewer</th><th>model id</th><th>sessions</th><th>n</th>"
        f"<th>leniency [95% CI]</th></tr></thead><tbody>{''.join(body)}</tbody></table>"
        if body
        else ""
    )
    return (
        '<section id="section-fingerprints" class="panel wide"><h2>Reviewer fingerprints '
        f"(history split where a set-up changed)</h2><p>{escape(summary)}</p>{table}</section>"
    )
