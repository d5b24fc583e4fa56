"""The causal-checks section (ADR 0024) as text lines and CSV rows, for the renderers.

The HTML report shows it through the full text report it embeds.
"""

from __future__ import annotations

import math

from llm_council.bias_audit.report.analyses.causal_checks import CausalChecks, CheckEstimate
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text


def _number(value: float, digits: int = 2) -> str:
    return f"{value:+.{digits}f}" if math.isfinite(value) else "n/a"


def _estimate(value: CheckEstimate, digits: int = 2) -> str:
    text = f"{_number(value.estimate, digits)} [{_number(value.ci_low, digits)}, "
    text += f"{_number(value.ci_high, digits)}]"
    if math.isfinite(value.p_value):
        text += f" p={value.p_value:.3g}"
    return text + f" (n={value.n_sessions} sessions)"


def causal_check_lines(section: CausalChecks | None, significance_level: float) -> list[str]:
    """The text section; empty when the store has no check reviews."""
    if section is None:
        return []
    lines = [
        "",
        f"=== Causal checks (live re-asks, {section.n_check_reviews} check reviews) ===",
        "Each check re-asks a reviewer about the same answers; the change is within reviewer",
        "and within answer, so it is causal. Compare with the observational sections above.",
        f"Kinds with fewer than {section.min_sessions} sessions say 'too few'.",
    ]
    too_few = "too few"
    for reviewer in section.reviewers:
        lines.append(reviewer.reviewer)
        if reviewer.slot_effect is not None:
            flag = " DETECTED" if reviewer.slot_effect.finding else ""
            lines.append(
                f"  Re-shuffle, points per slot later: {_estimate(reviewer.slot_effect)}{flag}"
            )
        else:
            lines.append(f"  Re-shuffle: {too_few} ({reviewer.reshuffle_sessions} sessions)")
        if reviewer.repeat is not None:
            repeat = reviewer.repeat
            lines.append(
                f"  Repeat: mean |change| {_estimate(repeat.mean_abs_change)}; "
                f"identical {_estimate(repeat.share_identical)}; ICC {_estimate(repeat.icc)}"
            )
        else:
            lines.append(f"  Repeat: {too_few} ({reviewer.repeat_sessions} sessions)")
        if reviewer.padding_effect is not None:
            flag = " DETECTED" if reviewer.padding_effect.finding else ""
            lines.append(
                f"  Padding, points gained by the padded answer: "
                f"{_estimate(reviewer.padding_effect)}{flag} "
                f"(mean ln word ratio {_number(reviewer.padding_log_word_ratio)})"
            )
        else:
            lines.append(f"  Padding: {too_few} ({reviewer.padding_sessions} sessions)")
        if reviewer.identity_effect is not None:
            flag = " DETECTED" if reviewer.identity_effect.finding else ""
            lines.append(
                "  Identity, points gained by an answer signed with its own model name: "
                f"{_estimate(reviewer.identity_effect)}{flag}"
            )
        elif reviewer.identity_sessions:
            lines.append(f"  Identity: {too_few} ({reviewer.identity_sessions} sessions)")
    return lines


def causal_check_csv_rows(section: CausalChecks | None) -> list[CsvRow]:
    """Rows ``(section, subject, metric, estimate, ci_low, ci_high, p_value, n)``."""
    if section is None:
        return []

    rows: list[CsvRow] = []
    for reviewer in section.reviewers:
        estimates = {
            "slot_effect_per_slot": reviewer.slot_effect,
            "repeat_mean_abs_change": reviewer.repeat.mean_abs_change if reviewer.repeat else None,
            "repeat_share_identical": reviewer.repeat.share_identical if reviewer.repeat else None,
            "repeat_icc": reviewer.repeat.icc if reviewer.repeat else None,
            "padding_effect": reviewer.padding_effect,
            "identity_effect": reviewer.identity_effect,
        }
        for metric, value in estimates.items():
            if value is not None:
                rows.append(
                    (
                        "causal_checks",
                        reviewer.reviewer,
                        metric,
                        cell_text(value.estimate),
                        cell_text(value.ci_low),
                        cell_text(value.ci_high),
                        cell_text(value.p_value),
                        str(value.n_sessions),
                    )
                )
    return rows
