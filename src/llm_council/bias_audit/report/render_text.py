"""Plain-text rendering of the bias report: reviewer profiles first, then each bias."""

from __future__ import annotations

import math

from llm_council.bias_audit.report.model import BiasReport, Interval


def fmt(value: float, digits: int = 2) -> str:
    """A number for people: ``n/a`` for NaN, fixed decimals otherwise."""
    if value is None or math.isnan(value):
        return "n/a"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def fmt_p(value: float) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    return f"{value:.2g}" if value >= 1e-4 else "<1e-4"


def fmt_interval(interval: Interval, digits: int = 2) -> str:
    low, high = fmt(interval.ci_low, digits), fmt(interval.ci_high, digits)
    return f"{fmt(interval.estimate, digits)} [{low}, {high}]"


def slot_letter(position: int) -> str:
    return chr(65 + position) if 0 <= position < 26 else str(position)


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

    add("")
    add(f"=== Reviewer Profiles ({report.n_sessions} sessions) ===")
    add("Leniency = points above/below the other reviewers' mean on the same answers.")
    for profile in report.profiles:
        add(profile.reviewer)
        add(
            f"  Leniency: {fmt_interval(profile.leniency)} ({profile.leniency_label}, "
            f"z={fmt(profile.leniency_z, 1)})   Mean score: {fmt(profile.mean_score, 1)}"
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
        add("=== Position Bias (display slot each reviewer saw) ===")
        add("  slot   mean score [95% CI]     within-reviewer deviation [95% CI]   sessions")
        for slot, mean, deviation, n in zip(
            position.positions,
            position.mean_score,
            position.deviation,
            position.n_sessions,
            strict=True,
        ):
            add(
                f"  {slot_letter(slot):<5}  {fmt_interval(mean):<22}  "
                f"{fmt_interval(deviation):<36} {n}"
            )
        df1, df2 = position.test_df
        add(
            f"  Within-reviewer test ({position.test_n_candidates}-candidate sessions, Hotelling): "
            f"F({df1}, {df2}) = {fmt(position.test_statistic)}, p={fmt_p(position.test_p_value)}"
        )
        add(
            f"  Direction: {position.direction} (trend {fmt_interval(position.trend, 3)} "
            "points per slot later; < 0 favours early slots)"
        )
    else:
        add("=== Position Bias === not enough data (needs answers scored by 3+ reviewers)")

    add("")
    add("=== Self-Preference (bonus to its own answer) ===")
    if report.self_preference:
        add(
            "  reviewer              joint model [95% CI]     "
            "raw own-minus-others [95% CI]   sessions"
        )
        for item in report.self_preference:
            mark = "  <- detected" if item.detected else ""
            add(
                f"  {item.reviewer:<20}  {fmt_interval(item.adjusted):<23}  "
                f"{fmt_interval(item.raw):<30}  {item.n_sessions}{mark}"
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
            "reviewer_leniency": "Reviewer leniency (points, centred on the average reviewer)",
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
                add(
                    f"    {effect.term:<20} {fmt(effect.estimate):>6} "
                    f"[{fmt(effect.ci_low)}, {fmt(effect.ci_high)}]"
                )
        add(f"  Slots jointly: F = {fmt(joint.position_wald_f)}, p={fmt_p(joint.position_wald_p)}")

    else:
        add("=== Joint Model === not enough data (needs 2+ sessions and more scores than terms)")

    add("")
    board = report.leaderboard
    if board is not None:
        add(
            f"=== Leaderboard (Bradley-Terry from rankings, self-reviews excluded; "
            f"{board.n_resamples} session bootstraps) ==="
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
        add("=== Leaderboard === no rankings to compare (needs ranked, non-self answers)")
    if report.families is not None:
        from llm_council.bias_audit.report.render_families import families_text_lines

        lines.extend(families_text_lines(report.families))
    return "\n".join(lines) + "\n"
