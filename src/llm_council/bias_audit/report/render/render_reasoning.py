"""Text and CSV for reasoning-chain bias and for parse outcomes / score-rank mismatch."""

from __future__ import annotations

from llm_council.bias_audit.report.analyses.parse_outcomes import ReviewerParseOutcomes
from llm_council.bias_audit.report.analyses.reasoning import ReviewerReasoning
from llm_council.bias_audit.report.number_format import fmt, fmt_interval, fmt_p
from llm_council.bias_audit.report.render.csv_cells import CsvRow, cell_text, interval_row


def _percent(value: float) -> str:
    return "-" if value != value else f"{100 * value:.1f}%"


def _rate_text(estimate: float, low: float, high: float) -> str:
    return f"{_percent(estimate)} [{_percent(low)}, {_percent(high)}]"


def reasoning_text_lines(
    reasoning: list[ReviewerReasoning], outcomes: list[ReviewerParseOutcomes]
) -> list[str]:
    """Both sections as text lines (each section starts with a blank line); none without data."""
    lines: list[str] = []
    add = lines.append
    if reasoning:
        add("")
        add("=== Reasoning-chain bias (score vs the length of the reviewer's own rationale) ===")
        add(
            "Points per doubling of the rationale, on the same answers as the other reviewers "
            "(paired deviation, so answer quality is held fixed); session jackknife 95% CI; "
            "Holm p across reviewers, for reference; verdicts: the report-wide procedure."
        )
        for item in reasoning:
            flag = "REASONING BIAS" if item.detected else "none detected"
            add(
                f"  {item.reviewer}: {fmt_interval(item.points_per_doubling)} points per "
                f"doubling (Holm p={fmt_p(item.holm_p)}, {flag}); median rationale "
                f"{fmt(item.median_rationale_chars, 0)} chars; {item.n_sessions} sessions"
            )
    with_status = [outcome for outcome in outcomes if outcome.n_reviews > 0]
    with_pairs = [outcome for outcome in outcomes if outcome.n_comparable_pairs > 0]
    if not with_status and not with_pairs:
        return lines
    add("")
    add("=== Score/rank mismatch and abstentions (descriptive, not tests) ===")
    add(
        "Mismatch: pairs ranked above but scored strictly lower, of the pairs the reviewer both "
        "scored and ranked with different scores (session-clustered 95% CI). Refused, "
        "unparseable, failed: share of its reviews (Wilson 95% CI)."
    )
    for outcome in outcomes:
        parts = []
        if outcome.n_comparable_pairs:
            rate = outcome.mismatch_rate
            parts.append(
                f"mismatch {_rate_text(rate.estimate, rate.ci_low, rate.ci_high)} "
                f"({outcome.n_discordant_pairs}/{outcome.n_comparable_pairs} pairs, "
                f"{outcome.n_mismatch_sessions} sessions)"
            )
        if outcome.n_reviews:
            for name, rate in (
                ("refused", outcome.refusal_rate),
                ("unparseable", outcome.unparseable_rate),
                ("failed", outcome.failure_rate),
            ):
                parts.append(f"{name} {_rate_text(rate.estimate, rate.ci_low, rate.ci_high)}")
            parts.append(f"of {outcome.n_reviews} reviews")
        if outcome.n_reviews_unknown:
            parts.append(f"{outcome.n_reviews_unknown} older reviews without a status not counted")
        if parts:
            add(f"  {outcome.reviewer}: " + "; ".join(parts))
    return lines


def reasoning_csv_rows(
    reasoning: list[ReviewerReasoning], outcomes: list[ReviewerParseOutcomes]
) -> list[CsvRow]:
    """Rows in the report CSV's columns."""
    rows: list[CsvRow] = [
        interval_row(
            "reasoning",
            item.reviewer,
            "points_per_doubling",
            item.points_per_doubling,
            item.n_sessions,
        )
        for item in reasoning
    ]
    for item in reasoning:
        rows.append(("reasoning", item.reviewer, "holm_p", cell_text(item.holm_p), "", "", "", ""))
    for outcome in outcomes:
        if outcome.n_comparable_pairs:
            rows.append(
                interval_row(
                    "parse_outcomes",
                    outcome.reviewer,
                    "mismatch_rate",
                    outcome.mismatch_rate,
                    outcome.n_comparable_pairs,
                )
            )
        if outcome.n_reviews:
            for metric, rate in (
                ("refusal_rate", outcome.refusal_rate),
                ("unparseable_rate", outcome.unparseable_rate),
                ("failure_rate", outcome.failure_rate),
            ):
                rows.append(
                    interval_row(
                        "parse_outcomes", outcome.reviewer, metric, rate, outcome.n_reviews
                    )
                )
    return rows
