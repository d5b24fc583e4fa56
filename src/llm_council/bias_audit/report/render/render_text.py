"""Plain-text rendering of the bias report: reviewer profiles first, then each bias."""

from __future__ import annotations

import math
from collections.abc import Callable

from llm_council.bias_audit.report.estimates import PositionBias
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, fmt_p, slot_letter
from llm_council.bias_audit.report.render.effective_judges_note import effective_judges_note_text
from llm_council.bias_audit.report.render.render_causal import causal_check_lines
from llm_council.bias_audit.report.render.render_findings import findings_text_lines
from llm_council.infra.safe_text import terminal_safe

#: after a position test that is a randomization test (a singular Wald covariance)
_RANDOMIZED = (
    "; randomization test over display orders (a slot effect that never varied between "
    "sessions: the Wald covariance is singular)"
)


def _add_position(add: Callable[[str], None], position: PositionBias) -> None:
    council = position.council
    add(
        f"=== Position Bias (display slot each reviewer saw; "
        f"{position.test_n_candidates}-candidate sessions) ==="
    )
    add(
        "  Slot effect = points vs the reviewer's own average slot: within answers (answer "
        "fixed effects) when reviewers of an answer saw it at different slots, else across "
        "sessions (score minus the reviewer's mean in the session; needs orders counterbalanced)."
    )
    add("  slot   mean score [95% CI]     slot effect [95% CI]    sessions")
    for slot, mean, effect, n in zip(
        position.positions,
        position.mean_score,
        council.slot_effect,
        position.n_sessions,
        strict=True,
    ):
        add(f"  {slot_letter(slot):<5}  {fmt_interval(mean):<22}  {fmt_interval(effect):<22}  {n}")
    if not council.identified:
        why = " (the display slot is confounded with the candidate)"
        add(
            f"  Council: {council.direction}{why if council.direction == 'not identified' else ''}"
            "; nothing is estimated or tested."
        )
    elif council.test_method == "randomization":
        add(
            f"  Council ({council.basis}{_RANDOMIZED}): p={fmt_p(council.test_p_value)}; "
            f"direction: {council.direction} (trend {fmt_interval(council.trend, 3)} "
            "points per slot later; < 0 favours early slots)"
        )
    else:
        df1, df2 = council.test_df
        add(
            f"  Council ({council.basis}; Wald, session-clustered): F({df1}, {df2}) = "
            f"{fmt(council.test_statistic)}, p={fmt_p(council.test_p_value)}; "
            f"direction: {council.direction} (trend {fmt_interval(council.trend, 3)} "
            "points per slot later; < 0 favours early slots)"
        )
    level = fmt(100 * position.significance_level, 0)
    add(
        f"  Per reviewer (Holm p across reviewers, for reference; flagged: a finding of the "
        f"report-wide procedure at {level}%, see Findings):"
    )
    for profile in position.per_reviewer:
        if not profile.identified:
            add(f"  {profile.subject}: {profile.direction}; nothing is estimated or tested")
            continue
        mark = "  <- flagged" if profile.flagged else ""
        add(
            f"  {profile.subject}: {profile.direction}, Holm p={fmt_p(profile.adjusted_p_value)}, "
            f"trend {fmt_interval(profile.trend, 3)}, {profile.n_sessions} sessions, "
            f"{profile.basis}{_RANDOMIZED if profile.test_method == 'randomization' else ''}"
            f"{mark}"
        )
        add(
            "    "
            + "  ".join(
                f"{slot_letter(slot)} {fmt_interval(effect)}"
                for slot, effect in zip(position.positions, profile.slot_effect, strict=False)
            )
        )


def render_text(report: BiasReport) -> str:
    """The report as text, led by the reviewer profiles."""
    lines: list[str] = []
    add = lines.append
    add(f"Bias report for {report.store}")
    since = f" since {report.since}" if report.since else ""
    since += f" until {report.until}" if report.until else ""
    add(
        f"{report.n_records} records{since}: {report.n_sessions} sessions, "
        f"{report.n_reviewers} reviewers, {report.n_models} models. "
        "Intervals are 95% and count sessions, not records."
    )
    for warning in report.warnings:
        add(f"warning: {warning}")
    lines += findings_text_lines(report)  # ADR 0054: the findings first

    add("")
    add(f"=== Reviewer Profiles ({report.n_sessions} sessions) ===")
    outside = [p.reviewer for p in report.profiles if not p.in_leniency_reference]
    add(
        "Leniency = points above/below the reference reviewers' mean on the same answers; "
        "the reference is chosen by a Holm step-down at 5%; harsh/generous only when the "
        "report-wide procedure makes it a finding (see Findings; Holm p: the step-down's)."
    )
    if report.profiles and all(p.leniency_label == "not identified" for p in report.profiles):
        add(
            "Leniency is not identified: every reviewer's scores in a session add up to the "
            "same total (rank points from rankings, or a forced-choice scale such as "
            "pairwise 1 / 0 / 0.5)."
        )
    ranked = [p.reviewer for p in report.profiles if p.spread_label == "not identified"]
    if ranked:
        add(
            "Rankings only (rank points N..1, no scores): "
            + ", ".join(ranked)
            + ". Their score sd is not identified (every full ranking of N answers has the "
            "sd of 1..N) and their leniency is not a judge's trait; ranks still identify "
            "position, self-preference and favouritism, in rank points."
        )
    if outside:
        add(
            "Reference: every reviewer except "
            + ", ".join(outside)
            + " (removed as outliers, so they cannot shift the others' leniency)."
        )
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

    add("")
    if report.length is not None:
        length = report.length
        add(f"=== Length Bias (pooled over {length.n_sessions} sessions) ===")
        verdict = (
            "longer answers score higher"
            if length.pooled.ci_low > 0
            else "shorter answers score higher"
            if length.pooled.ci_high < 0
            else "no length bias detected"
        )
        add(
            f"  r(ln words, score within reviewer) = {fmt_interval(length.pooled, 3)}, "
            f"p={fmt_p(length.pooled.p_value)}: {verdict}"
        )
        add(
            f"  For comparison only: one r over all {length.n_records} records = "
            f"{fmt(length.record_level_r, 3)} with a record-count interval "
            f"[{fmt(length.record_level_ci[0], 3)}, {fmt(length.record_level_ci[1], 3)}] "
            "(too narrow: records are not independent)"
        )
    else:
        add("=== Length Bias === not enough scored records")

    add("")
    position = report.position
    if position is not None:
        _add_position(add, position)
    else:
        add("=== Position Bias === not enough data (needs sessions with 2+ scored candidates)")

    add("")
    add("=== Self-Preference (bonus to its own answer) ===")
    if report.self_preference:
        add(
            "  reviewer              joint model [95% CI]     "
            "raw own-minus-others [95% CI]   sessions"
        )
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
    else:
        add("  no self-reviews in the store (reviewers recused from their own answers)")

    add("")
    if report.joint is not None:
        joint = report.joint
        add("=== Joint Model: score ~ answer + reviewer + slot + self + reviewer x ln(words) ===")
        add(
            f"  {joint.n_records} scores, {joint.n_answers} answers (fixed effects), "
            f"{joint.n_sessions} session clusters; residual sd {fmt(joint.residual_sd)}"
        )
        titles = {
            "reviewer_leniency": "Reviewer leniency (points vs the reference reviewers' mean)",
            "reviewer_verbosity": "Differential verbosity (points per ln(words), centred)",
            "position": "Display slot (points vs slot A)",
            "self_review": "Self-review bonus (points)",
        }
        for group, title in titles.items():
            effects = [effect for effect in joint.effects if effect.group == group]
            if not effects:
                continue
            add(f"  {title}")
            for effect in effects:
                if not effect.identified:
                    add(f"    {effect.term:<20} not identified (design or scale), not estimated")
                    continue
                add(
                    f"    {effect.term:<20} {fmt(effect.estimate):>6} "
                    f"[{fmt(effect.ci_low)}, {fmt(effect.ci_high)}]"
                )
        if joint.position_identified and math.isnan(joint.position_wald_p):
            add(
                "  Slots jointly: not tested (no more sessions than slot terms, or a singular "
                "covariance: a slot effect that never varied between sessions); see Position "
                "Bias, which tests that by randomization over the display orders."
            )
        elif joint.position_identified:
            add(
                f"  Slots jointly: F = {fmt(joint.position_wald_f)}, "
                f"p={fmt_p(joint.position_wald_p)}"
            )
        elif any(effect.group == "position" for effect in joint.effects):
            add(
                "  Slots jointly: not identified (every reviewer of an answer saw it at the same "
                "slot, so the answer's own effect absorbs the slot); not tested. The position "
                "section's estimate uses the order varying across sessions instead."
            )

    else:
        add("=== Joint Model === not enough data (needs 2+ sessions and more scores than terms)")

    lines += causal_check_lines(report.causal_checks, report.significance_level)  # ADR 0024

    add("")
    board = report.leaderboard
    if board is not None:
        add(
            f"=== Leaderboard (Bradley-Terry from rankings, self-reviews excluded; "
            f"{board.n_resamples} session bootstraps) ==="
        )
        if board.n_unconverged_resamples:
            add(
                f"  {board.n_unconverged_resamples} of {board.n_resamples} bootstrap refits did "
                "not converge and are left out of the intervals"
            )
        add(
            "  #  model                 strength [95% CI]       "
            "length-controlled [95% CI]  mean score"
        )
        for place, entry in enumerate(board.entries, start=1):
            add(
                f"  {place:<2} {entry.model:<20}  {fmt_interval(entry.strength):<22}  "
                f"{fmt_interval(entry.length_controlled):<26}  {fmt(entry.mean_score)}"
            )
        add(
            "  Log-odds of winning per unit ln(words) difference: "
            f"{fmt_interval(board.length_slope)}"
        )
        add(effective_judges_note_text())  # not identified from scores (ADR 0025)
        add("")
        add("=== Adjusted view (extra; NOT used above): mean of joint-model answer effects ===")
        ordered = sorted(
            board.entries,
            key=lambda e: (
                -e.adjusted_mean_score if math.isfinite(e.adjusted_mean_score) else math.inf
            ),
        )
        for place, entry in enumerate(ordered, start=1):
            add(
                f"  {place:<2} {entry.model:<20}  adjusted {fmt(entry.adjusted_mean_score)}   "
                f"raw {fmt(entry.mean_score)}"
            )
    else:
        add(
            "=== Leaderboard === no rankings to compare (needs ranked, non-self answers, and "
            "every model linked to the others by a chain of comparisons: one common scale)"
        )
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
    # ids are untrusted: each line (ours hold no control characters) is made terminal-safe
    return "\n".join(terminal_safe(line) for line in lines) + "\n"
