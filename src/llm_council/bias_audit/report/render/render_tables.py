"""JSON and CSV renderings of the bias report (for scripts and spreadsheets).

JSON is the report's full structure (NaN as null). CSV is one long table, one estimate per
row, so every section fits the same columns:
``section, subject, metric, estimate, ci_low, ci_high, p_value, n``.
"""

from __future__ import annotations

import csv
import io
import json

from llm_council.bias_audit.report.estimates import Interval
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import slot_letter
from llm_council.bias_audit.report.render.csv_cells import cell_text, interval_row
from llm_council.bias_audit.report.render.render_causal import causal_check_csv_rows
from llm_council.bias_audit.report.render.render_findings import findings_csv_rows
from llm_council.infra.safe_text import csv_text_cell

CSV_COLUMNS = ("section", "subject", "metric", "estimate", "ci_low", "ci_high", "p_value", "n")


def render_json(report: BiasReport) -> str:
    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"


def csv_rows(report: BiasReport) -> list[tuple[str, str, str, str, str, str, str, str]]:
    """Every estimate of the report as a row of :data:`CSV_COLUMNS`."""
    rows = findings_csv_rows(report)  # ADR 0054: every tested hypothesis first

    def interval(section: str, subject: str, metric: str, value: Interval, n: int | None) -> None:
        rows.append(interval_row(section, subject, metric, value, n))

    def scalar(section: str, subject: str, metric: str, value: float, n: int | None) -> None:
        rows.append((section, subject, metric, cell_text(value), "", "", "", cell_text(n)))

    for profile in report.profiles:
        interval("reviewer", profile.reviewer, "leniency", profile.leniency, profile.n_sessions)
        scalar("reviewer", profile.reviewer, "leniency_z", profile.leniency_z, profile.n_sessions)
        rows.append(
            (
                "reviewer",
                profile.reviewer,
                f"leniency_label:{profile.leniency_label}"
                + ("" if profile.in_leniency_reference else ":outside_reference"),
                "",
                "",
                "",
                cell_text(profile.leniency_p_holm),
                str(profile.n_sessions),
            )
        )
        scalar("reviewer", profile.reviewer, "mean_score", profile.mean_score, profile.n_scores)
        scalar("reviewer", profile.reviewer, "score_sd", profile.spread, profile.n_scores)
        interval(
            "reviewer",
            profile.reviewer,
            "length_correlation",
            profile.length_correlation,
            profile.n_sessions,
        )
        rows.append(
            (
                "reviewer",
                profile.reviewer,
                f"reliability:{profile.reliability}",
                "",
                "",
                "",
                "",
                str(profile.n_sessions),
            )
        )
    if report.length is not None:
        interval(
            "length",
            "council",
            "pooled_correlation",
            report.length.pooled,
            report.length.n_sessions,
        )
        scalar(
            "length",
            "council",
            "record_level_correlation",
            report.length.record_level_r,
            report.length.n_records,
        )
    if report.position is not None:
        position = report.position
        for slot, mean, n in zip(
            position.positions, position.mean_score, position.n_sessions, strict=True
        ):
            interval("position", f"slot {slot_letter(slot)}", "mean_score", mean, n)
        for slot_profile in (position.council, *position.per_reviewer):
            section = "position" if slot_profile is position.council else "position_by_reviewer"
            subject = "council" if slot_profile is position.council else slot_profile.subject
            for slot, slot_effect in zip(
                position.positions, slot_profile.slot_effect, strict=False
            ):
                interval(
                    section,
                    subject,
                    f"slot_effect:{slot_letter(slot)}",
                    slot_effect,
                    slot_profile.n_sessions,
                )
            rows.append(
                (
                    section,
                    subject,
                    (
                        f"randomization_variance:{slot_profile.basis}"
                        if slot_profile.test_method == "randomization"
                        else f"wald_f:{slot_profile.basis}"
                    )
                    if slot_profile.identified
                    else "wald_f:not_identified",
                    cell_text(slot_profile.test_statistic),
                    "",
                    "",
                    cell_text(slot_profile.adjusted_p_value),
                    cell_text(slot_profile.n_sessions),
                )
            )
            interval(section, subject, f"trend:{slot_profile.direction}", slot_profile.trend, None)
    for item in report.self_preference:
        interval("self_preference", item.reviewer, "joint_model", item.adjusted, item.n_sessions)
        interval("self_preference", item.reviewer, "raw", item.raw, item.n_sessions)
        if item.confounded_with_slot:
            rows.append(
                (
                    "self_preference",
                    item.reviewer,
                    f"confounded_with_slot:{slot_letter(item.fixed_slot or 0)}",
                    "",
                    "",
                    "",
                    "",
                    str(item.n_sessions),
                )
            )
    if report.joint is not None:
        for effect in report.joint.effects:
            rows.append(
                (
                    "joint_model",
                    effect.term,
                    effect.group,
                    cell_text(effect.estimate),
                    cell_text(effect.ci_low),
                    cell_text(effect.ci_high),
                    "",
                    cell_text(report.joint.n_sessions),
                )
            )
    if report.leaderboard is not None:
        for entry in report.leaderboard.entries:
            interval(
                "leaderboard", entry.model, "bradley_terry", entry.strength, entry.n_comparisons
            )
            interval(
                "leaderboard",
                entry.model,
                "bradley_terry_length_controlled",
                entry.length_controlled,
                entry.n_comparisons,
            )
            scalar("leaderboard", entry.model, "mean_score", entry.mean_score, entry.n_comparisons)
            scalar(
                "leaderboard",
                entry.model,
                "adjusted_mean_score_extra_view",
                entry.adjusted_mean_score,
                entry.n_comparisons,
            )
    rows += causal_check_csv_rows(report.causal_checks)  # ADR 0024
    if report.families is not None:
        from llm_council.bias_audit.report.render.render_families import families_csv_rows

        rows.extend(families_csv_rows(report.families))
    if report.decisions is not None:
        from llm_council.bias_audit.report.render.render_decisions import decisions_csv_rows

        rows.extend(decisions_csv_rows(report.decisions))
    if report.reliability is not None:  # ADR 0062
        from llm_council.bias_audit.report.render.render_reliability import reliability_csv_rows

        rows.extend(reliability_csv_rows(report.reliability))
    if report.fingerprints is not None:  # ADR 0062
        from llm_council.bias_audit.report.render.render_fingerprints import fingerprints_csv_rows

        rows.extend(fingerprints_csv_rows(report.fingerprints))
    if report.monitor is not None:
        from llm_council.bias_audit.report.render.render_monitor import monitor_csv_rows

        rows.extend(monitor_csv_rows(report.monitor))
    return rows


def render_csv(report: BiasReport) -> str:
    """The long table, every cell quoted and text cells neutralised against formulas (OWASP)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n", quoting=csv.QUOTE_ALL)
    writer.writerow(CSV_COLUMNS)
    for section, subject, metric, *numbers in csv_rows(report):
        writer.writerow(
            [
                csv_text_cell(section),
                csv_text_cell(subject),
                csv_text_cell(metric),
                *numbers,
            ]
        )
    return buffer.getvalue()
