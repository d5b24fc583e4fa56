"""Per-reviewer cards for the dashboard: every bias of one reviewer, each with its interval.

A card reads the report's existing per-reviewer results (profiles, slot profiles, the joint
model's verbosity and self-review terms, the favouritism row, anchoring, the live repeat
checks, the weekly drift series); it computes nothing new. A row whose estimator flagged
it carries ``class="flagged"``; a bias the data could not measure says so.
"""

from __future__ import annotations

from html import escape

from llm_council.bias_audit.report.analyses.causal_checks import CheckEstimate, ReviewerCausalChecks
from llm_council.bias_audit.report.analyses.drift import DriftSeries
from llm_council.bias_audit.report.dashboard.dashboard_findings import p_text
from llm_council.bias_audit.report.dashboard.svg_sparkline import drift_sparkline, slot_strip
from llm_council.bias_audit.report.estimates import ReviewerProfile
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, slot_letter
from llm_council.infra.safe_text import terminal_safe


def reviewer_name(text: str) -> str:
    """An untrusted id as HTML: bidi/control characters visible, isolated, escaped."""
    return f'<bdi class="id">{escape(terminal_safe(text))}</bdi>'


def _row(label: str, value: str, *, flagged: bool = False, extra: str = "") -> str:
    css = ' class="flagged"' if flagged else ""
    return f"<tr{css}><th>{escape(label)}</th><td>{value}{extra}</td></tr>"


def _bracket(estimate: CheckEstimate) -> str:
    return f"{fmt(estimate.estimate)} [{fmt(estimate.ci_low)}, {fmt(estimate.ci_high)}]"


def _check(estimate: CheckEstimate) -> str:
    return (
        f"{fmt(estimate.estimate)} [{fmt(estimate.ci_low)}, {fmt(estimate.ci_high)}]"
        f" ({estimate.n_sessions} sessions)"
    )


def _position_rows(report: BiasReport, reviewer: str, index: int) -> list[str]:
    position = report.position
    if position is None:
        return [_row("Position", "not measured (needs 2+ scored candidates per session)")]
    profile = next((p for p in position.per_reviewer if p.subject == reviewer), None)
    if profile is None:
        return [_row("Position", "not measured for this reviewer")]
    if not profile.identified:
        return [_row("Position", escape(profile.direction) + "; not estimated")]
    text = (
        f"{escape(profile.direction)}, trend {escape(fmt_interval(profile.trend, 3))} pts/slot, "
        f"Holm {p_text(profile.adjusted_p_value)}"
        + (
            " (randomization test: the slot effect never varied, so the Wald test cannot see it)"
            if profile.test_method == "randomization"
            else ""
        )
    )
    strip = slot_strip(
        [slot_letter(slot) for slot in position.positions],
        profile.slot_effect,
        plot_id=f"strip-{index}",
    )
    return [_row("Position", text, flagged=profile.flagged, extra=f"<div>{strip}</div>")]


def _length_rows(report: BiasReport, profile: ReviewerProfile) -> list[str]:
    rows = [_row("Length r", escape(fmt_interval(profile.length_correlation, 3)))]
    joint = report.joint
    if joint is not None:
        for effect in joint.effects:
            if effect.group == "reviewer_verbosity" and effect.term == profile.reviewer:
                value = (
                    f"{fmt(effect.estimate)} [{fmt(effect.ci_low)}, {fmt(effect.ci_high)}] "
                    "pts per ln(words) vs the others"
                    if effect.identified
                    else "not identified"
                )
                # no estimator flags verbosity: say what the interval shows, not "flagged"
                if effect.identified and (effect.ci_low > 0 or effect.ci_high < 0):
                    value += " (interval excludes 0; no corrected test)"
                rows.append(_row("Verbosity", escape(value)))
    return rows


def _favour_rows(report: BiasReport, reviewer: str) -> list[str]:
    rows = []
    families = report.families
    matrix = families.favouritism if families is not None else None
    item = next((s for s in report.self_preference if s.reviewer == reviewer), None)
    self_cell = next(
        (c for c in (matrix.cells if matrix else []) if c.reviewer == reviewer and c.is_self),
        None,
    )
    if item is not None:
        text = escape(f"{fmt_interval(item.adjusted)} pts (joint model)")
        flagged = item.detected
        if self_cell is not None:
            text += escape(
                f"; matrix self cell {fmt_interval(self_cell.effect)}, Holm "
                f"{p_text(self_cell.holm_p)}"
            )
            flagged = flagged or (self_cell.flagged and not self_cell.spillover)
        if item.confounded_with_slot:
            text += escape(
                f"; confounded with slot {slot_letter(item.fixed_slot or 0)} (its own answer "
                "was always shown there), so not flagged"
            )
        rows.append(_row("Self-preference", text, flagged=flagged))
    else:
        rows.append(_row("Self-preference", "no self-reviews"))
    if matrix is not None:
        mine = [c for c in matrix.cells if c.reviewer == reviewer and c.flagged and not c.is_self]
        favoured = [c for c in mine if not c.spillover]
        spilled = len(mine) - len(favoured)
        text = (
            "; ".join(
                f"{reviewer_name(c.model)} {escape(fmt_interval(c.effect))} "
                f"(Holm {p_text(c.holm_p)})"
                for c in favoured
            )
            if favoured
            else "no model flagged"
        )
        if spilled:
            text += f" ({spilled} flagged cell(s) consistent with spill-over, not counted)"
        confounded = [
            c
            for c in matrix.cells
            if c.reviewer == reviewer
            and not c.is_self
            and c.confounded_with_slot
            and c.holm_p < matrix.significance_level
        ]
        if confounded:
            text += escape(
                "; not flagged, confounded with slot (always shown at one slot): "
                + ", ".join(
                    f"{c.model} at {slot_letter(c.fixed_slot or 0)} {fmt_interval(c.effect)}"
                    for c in confounded
                )
            )
        rows.append(_row("Favouritism", text, flagged=bool(favoured)))
    return rows


def _consistency_rows(report: BiasReport, reviewer: str) -> list[str]:
    rows = []
    checks: ReviewerCausalChecks | None = None
    if report.causal_checks is not None:
        checks = next((c for c in report.causal_checks.reviewers if c.reviewer == reviewer), None)
    if checks is not None and checks.repeat is not None:
        repeat = checks.repeat
        rows.append(
            _row(
                "Repeat (live)",
                escape(
                    f"mean |change| {_check(repeat.mean_abs_change)}; identical "
                    f"{_bracket(repeat.share_identical)}; ICC {_bracket(repeat.icc)}"
                ),
            )
        )
    elif checks is not None:
        rows.append(_row("Repeat (live)", f"too few ({checks.repeat_sessions} sessions)"))
    else:
        rows.append(_row("Repeat (live)", "no live checks in the store"))
    families = report.families
    if families is not None:
        anchoring = next((a for a in families.anchoring if a.reviewer == reviewer), None)
        if anchoring is not None:
            rows.append(
                _row(
                    "Anchoring",
                    escape(
                        f"r {fmt_interval(anchoring.conditional, 3)}, "
                        f"Holm {p_text(anchoring.holm_p)}"
                        if anchoring.identified
                        else "not identified (two answers a review)"
                    ),
                    flagged=anchoring.detected,
                )
            )
    return rows


def _drift_row(report: BiasReport, reviewer: str, index: int) -> str:
    families = report.families
    drift = families.drift if families is not None else None
    if drift is None:
        return _row("Drift", "no timestamps")
    series: DriftSeries | None = next(
        (s for s in drift.series if s.reviewer == reviewer and s.quantity == "leniency"), None
    )
    if series is None:
        return _row("Drift", "fewer than 3 weeks: not tested")
    state = f"changed from {series.changed_from}" if series.detected else "no change detected"
    spark = drift_sparkline(
        series.week_start,
        series.weekly_mean,
        series.weekly_se,
        changed_from=series.changed_from,
        plot_id=f"spark-{index}",
    )
    text = (
        f"weekly leniency, {len(series.week_start)} weeks: {escape(state)} "
        f"(CUSUM Holm {p_text(series.holm_p)})"
    )
    return _row("Drift", text, flagged=series.detected, extra=f"<div>{spark}</div>")


def reviewer_card(report: BiasReport, profile: ReviewerProfile, index: int) -> tuple[int, str]:
    """One reviewer's card (a ``<section class="card">``) and how many of its rows are flagged."""
    lenient = profile.leniency_label in ("harsh", "generous")
    leniency = (
        "not identified (rank points or a forced-choice scale: a session's scores share one total)"
        if profile.leniency_label == "not identified"
        else f"{fmt_interval(profile.leniency)} pts, {profile.leniency_label}, "
        f"Holm {p_text(profile.leniency_p_holm)}"
    )
    rows = [
        _row("Leniency", escape(leniency), flagged=lenient),
        _row(
            "Score sd",
            escape(
                f"{fmt(profile.spread, 2)} ({profile.spread_label}, {fmt(profile.spread_ratio)}x)"
            ),
        ),
        *_position_rows(report, profile.reviewer, index),
        *_length_rows(report, profile),
        *_favour_rows(report, profile.reviewer),
        *_consistency_rows(report, profile.reviewer),
        _drift_row(report, profile.reviewer, index),
    ]
    n_flags = sum('class="flagged"' in row for row in rows)
    badge = (
        f'<span class="badge hot">{n_flags} flagged</span>'
        if n_flags
        else '<span class="badge">nothing flagged</span>'
    )
    return n_flags, (
        f'<section class="card" id="card-{index}"><h3>{reviewer_name(profile.reviewer)} '
        f"{badge}</h3>"
        f'<p class="meta">{escape(profile.reliability)} reliability: {profile.n_sessions} '
        f"sessions, {profile.n_scores} scores, mean {fmt(profile.mean_score, 1)}</p>"
        f'<table class="facts">{"".join(rows)}</table></section>'
    )


def reviewer_cards(report: BiasReport) -> str:
    """Every reviewer's card in a responsive grid, the most flagged first (ties: report order)."""
    cards = [reviewer_card(report, profile, index) for index, profile in enumerate(report.profiles)]
    ordered = sorted(cards, key=lambda card: -card[0])
    return f'<div class="cards">{"".join(html for _, html in ordered)}</div>'
