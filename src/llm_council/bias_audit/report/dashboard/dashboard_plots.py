"""The dashboard's plot sections (each a ``<section>`` with a heading, figures and captions).

Position (slot means and the slot x reviewer grid), leniency, length, self-preference and
the leaderboard (table of raw / Bradley-Terry / length-controlled / adjusted plus two
forest plots side by side). Every caption says how the plotted intervals were computed.
"""

from __future__ import annotations

from html import escape

from llm_council.bias_audit.report.dashboard.dashboard_tables import leaderboard_table
from llm_council.bias_audit.report.dashboard.svg_plots import (
    forest_plot,
    heatmap_plot,
    scatter_plot,
)
from llm_council.bias_audit.report.estimates import Leaderboard, PositionBias
from llm_council.bias_audit.report.model import BiasReport
from llm_council.bias_audit.report.number_format import fmt, fmt_p, slot_letter


def figure(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{escape(caption)}</figcaption></figure>"


def section(section_id: str, title: str, body: str, css: str = "panel") -> str:
    return f'<section id="{section_id}" class="{css}"><h2>{escape(title)}</h2>{body}</section>'


def position_section(position: PositionBias) -> str:
    council = position.council
    verdict = (
        f"Council-wide slot effects: F({council.test_df[0]}, {council.test_df[1]}) = "
        f"{fmt(council.test_statistic)}, p = {fmt_p(council.test_p_value)}; "
        f"direction: {council.direction}."
        if council.identified
        else f"Council-wide slot effects: {council.direction}."
    )
    means = figure(
        forest_plot(
            "Mean score by display slot",
            [f"slot {slot_letter(slot)}" for slot in position.positions],
            [m.estimate for m in position.mean_score],
            [m.ci_low for m in position.mean_score],
            [m.ci_high for m in position.mean_score],
            axis_label="mean score (session-clustered 95% CI)",
            reference=None,
            plot_id="plot-position",
        ),
        verdict,
    )
    reviewers = position.per_reviewer
    grid = figure(
        heatmap_plot(
            "Slot effect per reviewer",
            [profile.subject for profile in reviewers],
            [f"slot {slot_letter(slot)}" for slot in position.positions],
            [[e.estimate for e in profile.slot_effect] for profile in reviewers],
            [[(e.ci_low, e.ci_high) for e in profile.slot_effect] for profile in reviewers],
            row_notes=[
                f"{profile.direction}{', flagged' if profile.flagged else ''} ({profile.basis})"
                for profile in reviewers
            ],
            plot_id="plot-position-by-reviewer",
        ),
        "Points vs the reviewer's own average slot (within answers when reviewers saw "
        "different orders, else across sessions; session-clustered intervals in the "
        "tooltips); flagged when the reviewer's Wald test is a finding of the report-wide "
        f"procedure at {fmt(100 * position.significance_level, 0)}% (see Findings).",
    )
    return section("section-position", "Score by display position", means + grid)


def leniency_section(report: BiasReport) -> str:
    profiles = report.profiles
    body = figure(
        forest_plot(
            "Leniency vs the reference reviewers on the same answers",
            [profile.reviewer for profile in profiles],
            [profile.leniency.estimate for profile in profiles],
            [profile.leniency.ci_low for profile in profiles],
            [profile.leniency.ci_high for profile in profiles],
            axis_label="points above (+) or below (-) the others",
            plot_id="plot-leniency",
        ),
        "Each reviewer's mean paired deviation from the reference reviewers (outliers removed "
        "by a Holm step-down at 5%); harsh/generous when the report-wide procedure makes it a "
        "finding.",
    )
    return section("section-leniency", "Reviewer leniency", body)


def length_section(report: BiasReport) -> str:
    if report.length is None:
        return section("section-length", "Length vs score", "<p>Not enough scored records.</p>")
    length = report.length
    body = figure(
        scatter_plot(
            "Score vs answer length (sample of records)",
            length.sample_words,
            length.sample_scores,
            x_label="answer length, words (log scale)",
            y_label="score",
            fitted_line=(length.fitted_intercept, length.fitted_slope),
            log_x=True,
            plot_id="plot-length",
        ),
        f"Pooled within-session r = {fmt(length.pooled.estimate, 3)} "
        f"[{fmt(length.pooled.ci_low, 3)}, {fmt(length.pooled.ci_high, 3)}] over "
        f"{length.n_sessions} sessions; line: least squares of score on ln(words).",
    )
    return section("section-length", "Length vs score", body)


def self_preference_section(report: BiasReport) -> str:
    items = report.self_preference
    if not items:
        body = "<p>No self-reviews in the store (reviewers were recused).</p>"
    else:
        body = figure(
            forest_plot(
                "Bonus to its own answer (joint model)",
                [item.reviewer for item in items],
                [item.adjusted.estimate for item in items],
                [item.adjusted.ci_low for item in items],
                [item.adjusted.ci_high for item in items],
                axis_label="points (session-clustered 95% CI)",
                plot_id="plot-self-preference",
            ),
            "Holding the reviewer's leniency, the slot and its taste for length fixed.",
        )
    return section("section-self", "Self-preference", body)


def leaderboard_section(board: Leaderboard) -> str:
    entries = board.entries
    strength = figure(
        forest_plot(
            "Bradley-Terry strength from rankings",
            [entry.model for entry in entries],
            [entry.strength.estimate for entry in entries],
            [entry.strength.ci_low for entry in entries],
            [entry.strength.ci_high for entry in entries],
            axis_label="centred log strength (session bootstrap 95% CI)",
            plot_id="plot-leaderboard",
        ),
        f"{board.n_resamples} bootstrap resamples of sessions; self-reviews excluded.",
    )
    controlled = figure(
        forest_plot(
            "Length-controlled strength",
            [entry.model for entry in entries],
            [entry.length_controlled.estimate for entry in entries],
            [entry.length_controlled.ci_low for entry in entries],
            [entry.length_controlled.ci_high for entry in entries],
            axis_label="centred log strength (clustered sandwich 95% CI)",
            plot_id="plot-leaderboard-length",
        ),
        "Same model with a ln(words) covariate: log-odds of winning per unit ln(words) "
        f"difference {fmt(board.length_slope.estimate)} [{fmt(board.length_slope.ci_low)}, "
        f"{fmt(board.length_slope.ci_high)}].",
    )
    table = (
        f"{leaderboard_table(board)}"
        '<p class="note">Ranks: 1 = best in that view; +n / -n = places gained or lost '
        "against the raw mean score. Adjusted mean = the joint model's answer effects "
        "(leniency, slot, self-review and reviewer verbosity held fixed), an extra view "
        "with no interval; the ranking itself is Bradley-Terry.</p>"
    )
    return section(
        "section-leaderboard",
        "Leaderboard: raw, length-controlled, adjusted",
        table + f'<div class="pair">{strength}{controlled}</div>',
        css="panel wide",
    )
