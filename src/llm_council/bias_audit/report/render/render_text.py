"""Plain-text rendering of the bias report: reviewer profiles first, then each bias."""

from __future__ import annotations

import math

from llm_council.bias_audit.report.estimates import JointModel, Leaderboard
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, fmt_p, slot_letter
from llm_council.bias_audit.report.render.effective_judges_note import effective_judges_note_text
from llm_council.bias_audit.report.render.render_causal import causal_check_lines
from llm_council.bias_audit.report.render.render_findings import findings_text_lines
from llm_council.bias_audit.report.render.render_position import position_text_lines
from llm_council.infra.safe_text import terminal_safe


def _header_lines(report: BiasReport) -> list[str]:
    """The store, the counts and the warnings, then the findings (ADR 0054: findings first)."""
    since = f" since {report.since}" if report.since else ""
    since += f" until {report.until}" if report.until else ""
    lines = [
        f"Bias report for {report.store}",
        f"{report.n_records} records{since}: {report.n_sessions} sessions, "
        f"{report.n_reviewers} reviewers, {report.n_models} models. "
        "Intervals are 95% and count sessions, not records.",
    ]
    lines += [f"warning: {warning}" for warning in report.warnings]
    return lines + findings_text_lines(report)


def _profiles_preamble_lines(report: BiasReport) -> list[str]:
    """The Reviewer Profiles heading and the notes on leniency, rankings and the reference."""
    lines = [
        "",
        f"=== Reviewer Profiles ({report.n_sessions} sessions) ===",
        "Leniency = points above/below the reference reviewers' mean on the same answers; "
        "the reference is chosen by a Holm step-down at 5%; harsh/generous only when the "
        "report-wide procedure makes it a finding (see Findings; Holm p: the step-down's).",
    ]
    if report.profiles and all(p.leniency_label == "not identified" for p in report.profiles):
        lines.append(
            "Leniency is not identified: every reviewer's scores in a session add up to the "
            "same total (rank points from rankings, or a forced-choice scale such as "
            "pairwise 1 / 0 / 0.5)."
        )
    ranked = [p.reviewer for p in report.profiles if p.spread_label == "not identified"]
    if ranked:
        lines.append(
            "Rankings only (rank points N..1, no scores): "
            + ", ".join(ranked)
            + ". Their score sd is not identified (every full ranking of N answers has the "
            "sd of 1..N) and their leniency is not a judge's trait; ranks still identify "
            "position, self-preference and favouritism, in rank points."
        )
    outside = [p.reviewer for p in report.profiles if not p.in_leniency_reference]
    if outside:
        lines.append(
            "Reference: every reviewer except "
            + ", ".join(outside)
            + " (removed as outliers, so they cannot shift the others' leniency)."
        )
    return lines


def _profiles_lines(report: BiasReport) -> list[str]:
    """One block per reviewer: leniency, spread, length correlation, reliability."""
    lines = _profiles_preamble_lines(report)
    add = lines.append
    position_flagged = {
        p.subject: p.direction for p in (report.position.per_reviewer if report.position else [])
    }
    for profile in report.profiles:
        add(profile.reviewer)
        add(
            f"  Leniency: {fmt_interval(profile.leniency)} ({profile.leniency_label}, "
            f"z={fmt(profile.leniency_z, 1)}, Holm p={fmt_p(profile.leniency_p_holm)})   "
            f"Mean score: {fmt(profile.mean_score, 1)}"
        )
        direction = position_flagged.get(profile.reviewer)
        if profile.leniency_label in ("harsh", "generous") and direction in (
            "primacy",
            "recency",
            "non-monotone",
        ):
            add(
                f"  Note: also flagged for position bias ({direction}); a bonus at some slots "
                "raises its average too, so part of this leniency may be that (see Position Bias)"
            )
        add(
            f"  Score sd: {fmt(profile.spread, 1)} ({profile.spread_label}, "
            f"{fmt(profile.spread_ratio)}x median)   "
            f"Length r: {fmt_interval(profile.length_correlation)}"
        )
        add(
            f"  Reliability: {profile.reliability} ({profile.n_sessions} sessions, "
            f"{profile.n_scores} scores, {profile.n_missing_scores} missing)"
        )
    return lines


def _length_lines(report: BiasReport) -> list[str]:
    """The pooled within-reviewer length correlation, with the record-level one for contrast."""
    length = report.length
    if length is None:
        return ["", "=== Length Bias === not enough scored records"]
    verdict = (
        "longer answers score higher"
        if length.pooled.ci_low > 0
        else "shorter answers score higher"
        if length.pooled.ci_high < 0
        else "no length bias detected"
    )
    return [
        "",
        f"=== Length Bias (pooled over {length.n_sessions} sessions) ===",
        f"  r(ln words, score within reviewer) = {fmt_interval(length.pooled, 3)}, "
        f"p={fmt_p(length.pooled.p_value)}: {verdict}",
        f"  For comparison only: one r over all {length.n_records} records = "
        f"{fmt(length.record_level_r, 3)} with a record-count interval "
        f"[{fmt(length.record_level_ci[0], 3)}, {fmt(length.record_level_ci[1], 3)}] "
        "(too narrow: records are not independent)",
    ]


def _position_lines(report: BiasReport) -> list[str]:
    """The Position Bias section, or why there is none."""
    lines = [""]
    if report.position is None:
        lines.append(
            "=== Position Bias === not enough data (needs sessions with 2+ scored candidates)"
        )
    else:
        lines += position_text_lines(report.position)
    return lines


def _self_preference_lines(report: BiasReport) -> list[str]:
    """Each reviewer's bonus to its own answer, joint-model and raw, or why there is none."""
    lines = ["", "=== Self-Preference (bonus to its own answer) ==="]
    add = lines.append
    if not report.self_preference:
        add("  no self-reviews in the store (reviewers recused from their own answers)")
        return lines
    add("  reviewer              joint model [95% CI]     raw own-minus-others [95% CI]   sessions")
    for item in report.self_preference:
        mark = "  <- detected" if item.detected else ""
        if item.confounded_with_slot:
            would = " (excludes 0, not flagged)" if item.adjusted.excludes_zero() else ""
            mark = (
                f"  confounded with slot {slot_letter(item.fixed_slot or 0)}{would}: "
                "it always saw its own answer there"
            )
        add(
            f"  {item.reviewer:<20}  {fmt_interval(item.adjusted):<23}  "
            f"{fmt_interval(item.raw):<30}  {item.n_sessions}{mark}"
        )
    if any(item.confounded_with_slot for item in report.self_preference):
        add(
            "  Confounded with slot: with one fixed display order, preferring its own "
            "answer and preferring the slot it sits in give the same scores; shuffle the "
            "order per reviewer to tell them apart."
        )
    return lines


#: the joint model's effect groups, in print order, with their headings
_JOINT_TITLES = {
    "reviewer_leniency": "Reviewer leniency (points vs the reference reviewers' mean)",
    "reviewer_verbosity": "Differential verbosity (points per ln(words), centred)",
    "position": "Display slot (points vs slot A)",
    "self_review": "Self-review bonus (points)",
}


def _joint_effect_lines(joint: JointModel) -> list[str]:
    """The joint model's effects, one heading per group that has any."""
    lines: list[str] = []
    for group, title in _JOINT_TITLES.items():
        effects = [effect for effect in joint.effects if effect.group == group]
        if not effects:
            continue
        lines.append(f"  {title}")
        for effect in effects:
            if not effect.identified:
                lines.append(
                    f"    {effect.term:<20} not identified (design or scale), not estimated"
                )
                continue
            lines.append(
                f"    {effect.term:<20} {fmt(effect.estimate):>6} "
                f"[{fmt(effect.ci_low)}, {fmt(effect.ci_high)}]"
            )
    return lines


def _joint_slots_line(joint: JointModel) -> list[str]:
    """The joint Wald test of the slot terms, or why it was not run (empty without slot terms)."""
    if joint.position_identified and math.isnan(joint.position_wald_p):
        return [
            "  Slots jointly: not tested (no more sessions than slot terms, or a singular "
            "covariance: a slot effect that never varied between sessions); see Position "
            "Bias, which tests that by randomization over the display orders."
        ]
    if joint.position_identified:
        return [
            f"  Slots jointly: F = {fmt(joint.position_wald_f)}, p={fmt_p(joint.position_wald_p)}"
        ]
    if any(effect.group == "position" for effect in joint.effects):
        return [
            "  Slots jointly: not identified (every reviewer of an answer saw it at the same "
            "slot, so the answer's own effect absorbs the slot); not tested. The position "
            "section's estimate uses the order varying across sessions instead."
        ]
    return []


def _joint_lines(report: BiasReport) -> list[str]:
    """The Joint Model section, or why there is none."""
    joint = report.joint
    if joint is None:
        return [
            "",
            "=== Joint Model === not enough data (needs 2+ sessions and more scores than terms)",
        ]
    return [
        "",
        "=== Joint Model: score ~ answer + reviewer + slot + self + reviewer x ln(words) ===",
        f"  {joint.n_records} scores, {joint.n_answers} answers (fixed effects), "
        f"{joint.n_sessions} session clusters; residual sd {fmt(joint.residual_sd)}",
        *_joint_effect_lines(joint),
        *_joint_slots_line(joint),
    ]


def _adjusted_view_lines(board: Leaderboard) -> list[str]:
    """The extra view by joint-model answer effects, unused by the leaderboard above it."""
    lines = [
        "",
        "=== Adjusted view (extra; NOT used above): mean of joint-model answer effects ===",
    ]
    ordered = sorted(
        board.entries,
        key=lambda e: -e.adjusted_mean_score if math.isfinite(e.adjusted_mean_score) else math.inf,
    )
    for place, entry in enumerate(ordered, start=1):
        lines.append(
            f"  {place:<2} {entry.model:<20}  adjusted {fmt(entry.adjusted_mean_score)}   "
            f"raw {fmt(entry.mean_score)}"
        )
    return lines


def _leaderboard_lines(report: BiasReport) -> list[str]:
    """The Bradley-Terry leaderboard and the adjusted view, or why there is none."""
    board = report.leaderboard
    if board is None:
        return [
            "",
            "=== Leaderboard === no rankings to compare (needs ranked, non-self answers, and "
            "every model linked to the others by a chain of comparisons: one common scale)",
        ]
    lines = [
        "",
        f"=== Leaderboard (Bradley-Terry from rankings, self-reviews excluded; "
        f"{board.n_resamples} session bootstraps) ===",
    ]
    if board.n_unconverged_resamples:
        lines.append(
            f"  {board.n_unconverged_resamples} of {board.n_resamples} bootstrap refits did "
            "not converge and are left out of the intervals"
        )
    lines.append(
        "  #  model                 strength [95% CI]       length-controlled [95% CI]  mean score"
    )
    for place, entry in enumerate(board.entries, start=1):
        lines.append(
            f"  {place:<2} {entry.model:<20}  {fmt_interval(entry.strength):<22}  "
            f"{fmt_interval(entry.length_controlled):<26}  {fmt(entry.mean_score)}"
        )
    lines.append(
        f"  Log-odds of winning per unit ln(words) difference: {fmt_interval(board.length_slope)}"
    )
    lines.append(effective_judges_note_text())  # not identified from scores (ADR 0025)
    return lines + _adjusted_view_lines(board)


def _extension_lines(report: BiasReport) -> list[str]:
    """The optional sections (families, decisions, reliability, fingerprints, monitor)."""
    lines: list[str] = []
    if report.families is not None:
        from llm_council.bias_audit.report.render.render_families import families_text_lines

        lines.extend(families_text_lines(report.families))
    if report.decisions is not None:
        from llm_council.bias_audit.report.render.render_decisions import decisions_text_lines

        lines.extend(decisions_text_lines(report.decisions))
    if report.reliability is not None:  # ADR 0062
        from llm_council.bias_audit.report.render.render_reliability import (
            reliability_text_lines,
        )

        lines.extend(reliability_text_lines(report.reliability))
    if report.fingerprints is not None:  # ADR 0062
        from llm_council.bias_audit.report.render.render_fingerprints import (
            fingerprints_text_lines,
        )

        lines.extend(fingerprints_text_lines(report.fingerprints))
    if report.monitor is not None:
        from llm_council.bias_audit.report.render.render_monitor import monitor_text_lines

        lines.extend(monitor_text_lines(report.monitor))
    return lines


def render_text(report: BiasReport) -> str:
    """The report as text, led by the findings and the reviewer profiles, one section a call."""
    lines = [
        *_header_lines(report),
        *_profiles_lines(report),
        *_length_lines(report),
        *_position_lines(report),
        *_self_preference_lines(report),
        *_joint_lines(report),
        *causal_check_lines(report.causal_checks, report.significance_level),  # ADR 0024
        *_leaderboard_lines(report),
        *_extension_lines(report),
    ]
    # ids are untrusted: each line (ours hold no control characters) is made terminal-safe
    return "\n".join(terminal_safe(line) for line in lines) + "\n"
