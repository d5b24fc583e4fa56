"""Plain-text rendering of the Position Bias section: the slot table, the council, each reviewer."""

from __future__ import annotations

from llm_council.bias_audit.report.estimates import PositionBias
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, fmt_p, slot_letter

#: after a position test that is a randomization test (a singular Wald covariance)
_RANDOMIZED = (
    "; randomization test over display orders (a slot effect that never varied between "
    "sessions: the Wald covariance is singular)"
)


def _slot_table_lines(position: PositionBias) -> list[str]:
    """The heading, the definition of a slot effect and one row per display slot."""
    lines = [
        f"=== Position Bias (display slot each reviewer saw; "
        f"{position.test_n_candidates}-candidate sessions) ===",
        "  Slot effect = points vs the reviewer's own average slot: within answers (answer "
        "fixed effects) when reviewers of an answer saw it at different slots, else across "
        "sessions (score minus the reviewer's mean in the session; needs orders counterbalanced).",
        "  slot   mean score [95% CI]     slot effect [95% CI]    sessions",
    ]
    for slot, mean, effect, n in zip(
        position.positions,
        position.mean_score,
        position.council.slot_effect,
        position.n_sessions,
        strict=True,
    ):
        lines.append(
            f"  {slot_letter(slot):<5}  {fmt_interval(mean):<22}  {fmt_interval(effect):<22}  {n}"
        )
    return lines


def _council_line(position: PositionBias) -> str:
    """The council-wide test: not identified, a randomization test, or a clustered Wald F."""
    council = position.council
    if not council.identified:
        why = " (the display slot is confounded with the candidate)"
        return (
            f"  Council: {council.direction}{why if council.direction == 'not identified' else ''}"
            "; nothing is estimated or tested."
        )
    if council.test_method == "randomization":
        return (
            f"  Council ({council.basis}{_RANDOMIZED}): p={fmt_p(council.test_p_value)}; "
            f"direction: {council.direction} (trend {fmt_interval(council.trend, 3)} "
            "points per slot later; < 0 favours early slots)"
        )
    df1, df2 = council.test_df
    return (
        f"  Council ({council.basis}; Wald, session-clustered): F({df1}, {df2}) = "
        f"{fmt(council.test_statistic)}, p={fmt_p(council.test_p_value)}; "
        f"direction: {council.direction} (trend {fmt_interval(council.trend, 3)} "
        "points per slot later; < 0 favours early slots)"
    )


def _per_reviewer_lines(position: PositionBias) -> list[str]:
    """Each reviewer's direction, Holm p and trend, then its slot effects on the next line."""
    level = fmt(100 * position.significance_level, 0)
    lines = [
        f"  Per reviewer (Holm p across reviewers, for reference; flagged: a finding of the "
        f"report-wide procedure at {level}%, see Findings):"
    ]
    for profile in position.per_reviewer:
        if not profile.identified:
            lines.append(
                f"  {profile.subject}: {profile.direction}; nothing is estimated or tested"
            )
            continue
        mark = "  <- flagged" if profile.flagged else ""
        lines.append(
            f"  {profile.subject}: {profile.direction}, Holm p={fmt_p(profile.adjusted_p_value)}, "
            f"trend {fmt_interval(profile.trend, 3)}, {profile.n_sessions} sessions, "
            f"{profile.basis}{_RANDOMIZED if profile.test_method == 'randomization' else ''}"
            f"{mark}"
        )
        lines.append(
            "    "
            + "  ".join(
                f"{slot_letter(slot)} {fmt_interval(effect)}"
                for slot, effect in zip(position.positions, profile.slot_effect, strict=False)
            )
        )
    return lines


def position_text_lines(position: PositionBias) -> list[str]:
    """The Position Bias section as text lines (no leading blank line)."""
    return [*_slot_table_lines(position), _council_line(position), *_per_reviewer_lines(position)]
