"""Text, CSV and HTML pieces for anchoring, favouritism and drift (called by the renderers)."""

from __future__ import annotations

from html import escape

from llm_council.bias_audit.report.analyses.amplification import Amplification
from llm_council.bias_audit.report.analyses.anchoring import ReviewerAnchoring
from llm_council.bias_audit.report.analyses.drift import Drift
from llm_council.bias_audit.report.analyses.families import BiasFamilies
from llm_council.bias_audit.report.analyses.favouritism import Favouritism
from llm_council.bias_audit.report.dashboard.svg_heatmap import favouritism_heatmap
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, fmt_p, slot_letter
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text, interval_row
from llm_council.bias_audit.report.render.render_reasoning import (
    reasoning_csv_rows,
    reasoning_text_lines,
)
from llm_council.bias_audit.report.render.render_style_mimicry import (
    style_mimicry_csv_rows,
    style_mimicry_html_section,
    style_mimicry_text_lines,
)

#: weekly windows a drift series needs (``llm_council.stats.bias_effects.drift.weekly_series``: >= 3
# weeks)
MIN_DRIFT_WEEKS = 3


def counted(n: int, noun: str) -> str:
    """``1 session``, ``2 sessions``: a count with its noun in the right number."""
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def amplification_summary_line(amplified: Amplification) -> str:
    """The screen's one-line result, naming its denominator (the strongly agreeing sessions)."""
    order = "one shared order" if amplified.shared_order else "each reviewer's own order"
    gate = f"mean pairwise r >= {fmt(amplified.agreement_threshold, 1)}"
    if amplified.n_agreeing == 0:
        return (
            f"  Screen not run: no session (of {amplified.n_sessions}) had its reviewers "
            f"agreeing strongly ({gate}), and only such sessions are screened for scores "
            f"following display order ({order})."
        )
    of_all = (
        f" (of all {amplified.n_sessions})" if amplified.n_agreeing < amplified.n_sessions else ""
    )
    return (
        f"  {amplified.n_suspect} suspect of the {counted(amplified.n_agreeing, 'session')}"
        f"{of_all} where the reviewers agreed strongly ({gate}; {order}); about "
        f"{fmt(amplified.expected_by_chance, 1)} expected by chance (randomization test at "
        f"{fmt(amplified.significance_level)}); excess p={fmt_p(amplified.excess_p_value)}"
        + (", a finding" if amplified.excess_is_finding else ", not a finding")
    )


def _anchoring_lines(anchoring: list[ReviewerAnchoring]) -> list[str]:
    """The Anchoring section: each reviewer's conditional and design correlations."""
    if not anchoring:
        return []
    lines = [
        "",
        "=== Anchoring (pull toward the answers shown earlier) ===",
        "conditional r = corr(the other judges' consensus on the earlier answers minus on "
        "the rest, paired deviation) within slot: 0 when unanchored (also under drift and "
        "self-preference), > 0 when pulled; not identified with two answers a review; "
        "design r = corr(slot, score - running mean), which a position effect moves too. "
        "Holm p: across reviewers, for reference; verdicts: the report-wide procedure.",
    ]
    for item in anchoring:
        flag = (
            "not identified (3 or fewer answers a review, rank points or a forced-choice scale)"
            if not item.identified
            else ("ANCHORED" if item.conditional.estimate > 0 else "CONTRAST (pushed away)")
            if item.detected
            else "none detected"
        )
        lines.append(
            f"  {item.reviewer}: conditional r {fmt_interval(item.conditional, 3)} "
            f"(Holm p={fmt_p(item.holm_p)}, {flag}); design r "
            f"{fmt_interval(item.design_correlation, 3)}; {item.n_sessions} sessions"
        )
    return lines


def _favouritism_flag_lines(matrix: Favouritism) -> list[str]:
    """The flagged reviewer-model pairs, then those left unflagged as confounded with a slot."""
    flagged = [cell for cell in matrix.cells if cell.flagged and not cell.spillover]
    lines = [] if flagged else ["  No reviewer-model pair flagged."]
    for cell in flagged:
        kind = (
            "self-preference"
            if cell.is_self
            else ("favours" if cell.effect.estimate > 0 else "disfavours")
        )
        lines.append(
            f"  {cell.reviewer} {kind} {cell.model}: {fmt_interval(cell.effect)} points "
            f"(Holm p={fmt_p(cell.holm_p)}, {cell.n_sessions} sessions)"
        )
    for cell in matrix.cells:
        if cell.confounded_with_slot and cell.holm_p < matrix.significance_level:
            lines.append(
                f"  Not flagged, confounded with slot {slot_letter(cell.fixed_slot or 0)}: "
                f"{cell.reviewer} -> {cell.model} {fmt_interval(cell.effect)} points "
                f"(Holm p={fmt_p(cell.holm_p)}); it saw {cell.model} at that slot in every "
                "session, so favouring the model and favouring the slot give the same scores"
            )
    return lines


def _favouritism_lines(matrix: Favouritism | None) -> list[str]:
    """The Favouritism section: flagged pairs, slot confounds, spill-over, mutual blocs."""
    if matrix is None:
        return []
    lines = [
        "",
        "=== Favouritism (reviewer x model, beyond quality and leniency) ===",
        f"Points a reviewer gives a model's answers beyond the two-way fit"
        f"{', length-controlled' if matrix.length_controlled else ''}; {matrix.correction}"
        f" at {fmt(matrix.significance_level)}. A strong favour leaves about -1/(k-1) of it "
        "on the rest of its row and column.",
        *_favouritism_flag_lines(matrix),
    ]
    spilled = [f"{c.reviewer}->{c.model}" for c in matrix.cells if c.spillover]
    if spilled:
        lines.append(
            f"  Also flagged, but consistent with spill-over from the flags above: "
            f"{', '.join(spilled)}"
        )
    lines += [f"  Mutual-favour bloc: {', '.join(bloc)}" for bloc in matrix.mutual_blocs]
    return lines


def _amplification_lines(amplified: Amplification | None) -> list[str]:
    """The Amplification section: the summary and the suspect sessions."""
    if amplified is None:
        return []
    lines = [
        "",
        "=== Amplification (strong agreement and scores following display order) ===",
        amplification_summary_line(amplified),
    ]
    if amplified.suspect_sessions:
        lines.append(f"  Suspect: {', '.join(amplified.suspect_sessions)}")
    return lines


def _drift_series_lines(drift: Drift) -> list[str]:
    """The detected drift series (or that there are none) and the series too short to test."""
    detected = [series for series in drift.series if series.detected]
    lines = [] if detected else ["  No change of leniency or position trend detected."]
    for series in detected:
        lines.append(
            f"  {series.reviewer} {series.quantity}: changed from week of "
            f"{series.changed_from} (CUSUM {fmt(series.cusum_statistic)}, Holm p="
            f"{fmt_p(series.holm_p)}); weekly means "
            + " ".join(fmt(value) for value in series.weekly_mean)
        )
    if drift.series_skipped:
        lines.append(
            f"  Too few weeks with sessions (< {MIN_DRIFT_WEEKS}) to test: "
            f"{', '.join(drift.series_skipped)}"
        )
    return lines


def _drift_lines(drift: Drift | None) -> list[str]:
    """The Drift section, or why it was not tested (too few weekly windows)."""
    if drift is None:
        return []
    windows = counted(drift.n_weeks, "weekly window")
    lines = [
        "",
        f"=== Drift over {windows} (CUSUM; Holm p over all series, "
        "for reference; verdicts: the report-wide procedure) ===",
    ]
    if drift.n_untimed_sessions:
        lines.append(
            f"  {drift.n_untimed_sessions} session(s) without a readable timestamp left out."
        )
    if drift.n_weeks < MIN_DRIFT_WEEKS and not drift.series:
        lines.append(
            f"  Not tested: drift needs sessions in at least {MIN_DRIFT_WEEKS} weekly "
            f"windows (the CUSUM compares weekly means); these sessions span {windows}."
        )
        return lines
    return lines + _drift_series_lines(drift)


def families_text_lines(families: BiasFamilies) -> list[str]:
    """The family sections as text lines (each starts with a blank line), after the notes."""
    return [
        *(f"note: {note}" for note in families.notes),
        *_anchoring_lines(families.anchoring),
        *_favouritism_lines(families.favouritism),
        *_amplification_lines(families.amplification),
        *_drift_lines(families.drift),
        *reasoning_text_lines(families.reasoning, families.parse_outcomes),
        *style_mimicry_text_lines(families.style_mimicry),
    ]


def _anchoring_rows(anchoring: list[ReviewerAnchoring]) -> list[CsvRow]:
    """Each reviewer's conditional and design correlations."""
    rows: list[CsvRow] = []
    for item in anchoring:
        rows.append(
            interval_row(
                "anchoring", item.reviewer, "conditional_r", item.conditional, item.n_sessions
            )
        )
        rows.append(
            interval_row(
                "anchoring", item.reviewer, "design_r", item.design_correlation, item.n_sessions
            )
        )
    return rows


def _favouritism_rows(matrix: Favouritism | None) -> list[CsvRow]:
    """Each reviewer-model cell: its effect, its Holm p and its slot confound."""
    rows: list[CsvRow] = []
    for cell in matrix.cells if matrix is not None else []:
        subject = f"{cell.reviewer} -> {cell.model}"
        metric = "self_preference" if cell.is_self else "favour_points"
        rows.append(interval_row("favouritism", subject, metric, cell.effect, cell.n_sessions))
        rows.append(("favouritism", subject, "holm_p", cell_text(cell.holm_p), "", "", "", ""))
        if cell.confounded_with_slot:
            slot = slot_letter(cell.fixed_slot or 0)
            n = cell_text(cell.n_sessions)
            rows.append(("favouritism", subject, f"confounded_with_slot:{slot}", "", "", "", "", n))
    return rows


def _amplification_rows(amplified: Amplification | None) -> list[CsvRow]:
    """The suspect sessions (with the excess test's p) and the count expected by chance."""
    if amplified is None:
        return []
    suspect = cell_text(amplified.n_suspect)
    expected = cell_text(amplified.expected_by_chance)
    return [
        (
            "amplification",
            "sessions",
            "suspect",
            suspect,
            "",
            "",
            cell_text(amplified.excess_p_value),
            cell_text(amplified.n_agreeing),
        ),
        ("amplification", "sessions", "expected_by_chance", expected, "", "", "", ""),
    ]


def _drift_rows(drift: Drift | None) -> list[CsvRow]:
    """Each series' weekly means (+- 1.96 se) and its CUSUM statistic with its Holm p."""
    rows: list[CsvRow] = []
    for series in drift.series if drift is not None else []:
        subject = f"{series.reviewer} {series.quantity}"
        for week, mean, se, n in zip(
            series.week_start,
            series.weekly_mean,
            series.weekly_se,
            series.weekly_sessions,
            strict=True,
        ):
            low, high = mean - 1.96 * se, mean + 1.96 * se
            rows.append(
                (
                    "drift",
                    subject,
                    f"week {week} mean +- 1.96 se",
                    cell_text(mean),
                    cell_text(low),
                    cell_text(high),
                    "",
                    cell_text(n),
                )
            )
        statistic, holm_p = cell_text(series.cusum_statistic), cell_text(series.holm_p)
        rows.append(("drift", subject, "cusum", statistic, "", "", holm_p, ""))
    return rows


def families_csv_rows(families: BiasFamilies) -> list[CsvRow]:
    """Rows in the report CSV's columns (section, subject, metric, estimate, ci, p, n)."""
    return [
        *_anchoring_rows(families.anchoring),
        *_favouritism_rows(families.favouritism),
        *_amplification_rows(families.amplification),
        *_drift_rows(families.drift),
        *reasoning_csv_rows(families.reasoning, families.parse_outcomes),
        *style_mimicry_csv_rows(families.style_mimicry),
    ]


def families_html_sections(families: BiasFamilies) -> list[str]:
    """The favouritism heat map (with caption); the numbers are in the text report below."""
    mimicry = style_mimicry_html_section(families.style_mimicry)
    if families.favouritism is None:
        return mimicry
    matrix = families.favouritism
    caption = (
        f"Cells: extra points a reviewer gives a model's answers beyond quality and leniency "
        f"({'length-controlled, ' if matrix.length_controlled else ''}session-clustered); "
        "outlined * = a finding of the report-wide procedure (tooltips: Holm p over the "
        "cells, for reference); s = self cell. "
        "Hover a cell for its interval."
    )
    return [
        "<h2>Favouritism</h2>",
        f"<figure>{favouritism_heatmap(matrix)}<figcaption>{escape(caption)}</figcaption></figure>",
        *mimicry,
    ]
