"""JSON and CSV renderings of the bias report (for scripts and spreadsheets).

JSON is the report's full structure (NaN as null). CSV is one long table, one estimate per
row, so every section fits the same columns:
``section, subject, metric, estimate, ci_low, ci_high, p_value, n``.
"""

from __future__ import annotations

import csv
import io
import json

from llm_council.bias_audit.report.estimates import (
    JointModel,
    Leaderboard,
    LengthBias,
    PositionBias,
    ReviewerProfile,
    SelfPreference,
    SlotProfile,
)
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import slot_letter
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text, interval_row
from llm_council.bias_audit.report.render.render_causal import causal_check_csv_rows
from llm_council.bias_audit.report.render.render_findings import findings_csv_rows
from llm_council.infra.safe_text import csv_text_cell

CSV_COLUMNS = ("section", "subject", "metric", "estimate", "ci_low", "ci_high", "p_value", "n")


def render_json(report: BiasReport) -> str:
    return json.dumps(report.to_dict(), indent=2, allow_nan=False) + "\n"


def _scalar_row(section: str, subject: str, metric: str, value: float, n: int | None) -> CsvRow:
    """One estimate without an interval as a row."""
    return (section, subject, metric, cell_text(value), "", "", "", cell_text(n))


def _label_row(section: str, subject: str, label: str, n: int, p_value: str = "") -> CsvRow:
    """A verdict or label carried in the metric column, with its count (and p-value)."""
    return (section, subject, label, "", "", "", p_value, str(n))


def _profile_rows(profile: ReviewerProfile) -> list[CsvRow]:
    """One reviewer's leniency, spread, length correlation and reliability."""
    reviewer, n_sessions = profile.reviewer, profile.n_sessions
    leniency_label = f"leniency_label:{profile.leniency_label}" + (
        "" if profile.in_leniency_reference else ":outside_reference"
    )
    return [
        interval_row("reviewer", reviewer, "leniency", profile.leniency, n_sessions),
        _scalar_row("reviewer", reviewer, "leniency_z", profile.leniency_z, n_sessions),
        _label_row(
            "reviewer", reviewer, leniency_label, n_sessions, cell_text(profile.leniency_p_holm)
        ),
        _scalar_row("reviewer", reviewer, "mean_score", profile.mean_score, profile.n_scores),
        _scalar_row("reviewer", reviewer, "score_sd", profile.spread, profile.n_scores),
        interval_row(
            "reviewer", reviewer, "length_correlation", profile.length_correlation, n_sessions
        ),
        _label_row("reviewer", reviewer, f"reliability:{profile.reliability}", n_sessions),
    ]


def _length_rows(length: LengthBias | None) -> list[CsvRow]:
    """The pooled within-reviewer correlation and the record-level one."""
    if length is None:
        return []
    return [
        interval_row("length", "council", "pooled_correlation", length.pooled, length.n_sessions),
        _scalar_row(
            "length",
            "council",
            "record_level_correlation",
            length.record_level_r,
            length.n_records,
        ),
    ]


def _slot_profile_rows(
    section: str, subject: str, positions: list[int], slot_profile: SlotProfile
) -> list[CsvRow]:
    """One slot profile (the council's or a reviewer's): slot effects, its test, its trend."""
    rows = [
        interval_row(
            section,
            subject,
            f"slot_effect:{slot_letter(slot)}",
            slot_effect,
            slot_profile.n_sessions,
        )
        for slot, slot_effect in zip(positions, slot_profile.slot_effect, strict=False)
    ]
    if not slot_profile.identified:
        test = "wald_f:not_identified"
    elif slot_profile.test_method == "randomization":
        test = f"randomization_variance:{slot_profile.basis}"
    else:
        test = f"wald_f:{slot_profile.basis}"
    rows.append(
        (
            section,
            subject,
            test,
            cell_text(slot_profile.test_statistic),
            "",
            "",
            cell_text(slot_profile.adjusted_p_value),
            cell_text(slot_profile.n_sessions),
        )
    )
    rows.append(
        interval_row(section, subject, f"trend:{slot_profile.direction}", slot_profile.trend, None)
    )
    return rows


def _position_rows(position: PositionBias | None) -> list[CsvRow]:
    """Mean score per slot, then the council's slot profile and each reviewer's."""
    if position is None:
        return []
    rows = [
        interval_row("position", f"slot {slot_letter(slot)}", "mean_score", mean, n)
        for slot, mean, n in zip(
            position.positions, position.mean_score, position.n_sessions, strict=True
        )
    ]
    rows += _slot_profile_rows("position", "council", position.positions, position.council)
    for slot_profile in position.per_reviewer:
        rows += _slot_profile_rows(
            "position_by_reviewer", slot_profile.subject, position.positions, slot_profile
        )
    return rows


def _self_preference_rows(items: list[SelfPreference]) -> list[CsvRow]:
    """Each reviewer's own-answer bonus, joint-model and raw, and its slot confound."""
    rows: list[CsvRow] = []
    for item in items:
        rows.append(
            interval_row(
                "self_preference", item.reviewer, "joint_model", item.adjusted, item.n_sessions
            )
        )
        rows.append(
            interval_row("self_preference", item.reviewer, "raw", item.raw, item.n_sessions)
        )
        if item.confounded_with_slot:
            slot = slot_letter(item.fixed_slot or 0)
            rows.append(
                _label_row(
                    "self_preference",
                    item.reviewer,
                    f"confounded_with_slot:{slot}",
                    item.n_sessions,
                )
            )
    return rows


def _joint_rows(joint: JointModel | None) -> list[CsvRow]:
    """Every term of the joint model with its interval."""
    if joint is None:
        return []
    return [
        (
            "joint_model",
            effect.term,
            effect.group,
            cell_text(effect.estimate),
            cell_text(effect.ci_low),
            cell_text(effect.ci_high),
            "",
            cell_text(joint.n_sessions),
        )
        for effect in joint.effects
    ]


def _leaderboard_rows(board: Leaderboard | None) -> list[CsvRow]:
    """Each model's Bradley-Terry strength (raw and length-controlled) and mean scores."""
    if board is None:
        return []
    rows: list[CsvRow] = []
    for entry in board.entries:
        model, n = entry.model, entry.n_comparisons
        rows += [
            interval_row("leaderboard", model, "bradley_terry", entry.strength, n),
            interval_row(
                "leaderboard", model, "bradley_terry_length_controlled", entry.length_controlled, n
            ),
            _scalar_row("leaderboard", model, "mean_score", entry.mean_score, n),
            _scalar_row(
                "leaderboard", model, "adjusted_mean_score_extra_view", entry.adjusted_mean_score, n
            ),
        ]
    return rows


def _extension_rows(report: BiasReport) -> list[CsvRow]:
    """The optional sections (families, decisions, reliability, fingerprints, monitor)."""
    rows: list[CsvRow] = []
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


def csv_rows(report: BiasReport) -> list[CsvRow]:
    """Every estimate of the report as a row of :data:`CSV_COLUMNS`, one section a call."""
    return [
        *findings_csv_rows(report),  # ADR 0054: every tested hypothesis first
        *(row for profile in report.profiles for row in _profile_rows(profile)),
        *_length_rows(report.length),
        *_position_rows(report.position),
        *_self_preference_rows(report.self_preference),
        *_joint_rows(report.joint),
        *_leaderboard_rows(report.leaderboard),
        *causal_check_csv_rows(report.causal_checks),  # ADR 0024
        *_extension_rows(report),
    ]


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
