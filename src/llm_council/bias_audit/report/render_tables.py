"""JSON and CSV renderings of the bias report (for scripts and spreadsheets).

JSON is the report's full structure (NaN as null). CSV is one long table, one estimate per
row, so every section fits the same columns:
``section, subject, metric, estimate, ci_low, ci_high, p_value, n``.
"""

from __future__ import annotations

import csv
import io
import json
import math

from llm_council.bias_audit.report.model import BiasReport, Interval

CSV_COLUMNS = ("section", "subject", "metric", "estimate", "ci_low", "ci_high", "p_value", "n")


def render_json(report: BiasReport) -> str:
    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"


def _cell(value: float | int | None) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return ""
    return repr(value) if isinstance(value, float) else str(value)


def csv_rows(report: BiasReport) -> list[tuple[str, str, str, str, str, str, str, str]]:
    """Every estimate of the report as a row of :data:`CSV_COLUMNS`."""
    rows = []

    def interval(section: str, subject: str, metric: str, value: Interval, n: int | None) -> None:
        rows.append(
            (
                section,
                subject,
                metric,
                _cell(value.estimate),
                _cell(value.ci_low),
                _cell(value.ci_high),
                _cell(value.p_value),
                _cell(n),
            )
        )

    def scalar(section: str, subject: str, metric: str, value: float, n: int | None) -> None:
        rows.append((section, subject, metric, _cell(value), "", "", "", _cell(n)))

    for profile in report.profiles:
        interval("reviewer", profile.reviewer, "leniency", profile.leniency, profile.n_sessions)
        scalar("reviewer", profile.reviewer, "leniency_z", profile.leniency_z, profile.n_sessions)
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
        for slot, mean, deviation, n in zip(
            position.positions,
            position.mean_score,
            position.deviation,
            position.n_sessions,
            strict=True,
        ):
            interval("position", f"slot {chr(65 + slot)}", "mean_score", mean, n)
            interval(
                "position", f"slot {chr(65 + slot)}", "within_reviewer_deviation", deviation, n
            )
        rows.append(
            (
                "position",
                "all slots",
                "hotelling_f",
                _cell(position.test_statistic),
                "",
                "",
                _cell(position.test_p_value),
                _cell(position.test_df[1] + position.test_df[0]),
            )
        )
        interval("position", "all slots", f"trend:{position.direction}", position.trend, None)
    for item in report.self_preference:
        interval("self_preference", item.reviewer, "joint_model", item.adjusted, item.n_sessions)
        interval("self_preference", item.reviewer, "raw", item.raw, item.n_sessions)
    if report.joint is not None:
        for effect in report.joint.effects:
            rows.append(
                (
                    "joint_model",
                    effect.term,
                    effect.group,
                    _cell(effect.estimate),
                    _cell(effect.ci_low),
                    _cell(effect.ci_high),
                    "",
                    _cell(report.joint.n_sessions),
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
    if report.families is not None:
        from llm_council.bias_audit.report.render_families import families_csv_rows

        rows.extend(families_csv_rows(report.families))
    return rows


def render_csv(report: BiasReport) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    writer.writerows(csv_rows(report))
    return buffer.getvalue()
