"""Why ``bias-report`` shows no effective number of independent judges beside the leaderboard.

Council scores identify, per answer, the variance all reviewers share (answer quality
plus any error they all make) and the variance each reviewer adds on its own; the split
of the shared part between quality and shared error is not identified (ADR 0025). The
identified set of ``n_eff = k / (1 + (k-1) rho)`` is therefore ``[k / (1 + (k-1) C/(C+D)),
k]`` (C: shared variance, D: own variance): it always contains ``k``, so it can never show
the correlated council the number is meant to expose. The live ``repeat`` checks split D
into within-reviewer noise and a stable idiosyncrasy, both independent errors, so they do
not narrow it. The number is measured where errors are known: ``calibrate`` with human
labels (:mod:`llm_council.calibration.judge_independence`).
"""

from __future__ import annotations

from html import escape

EFFECTIVE_JUDGES_NOT_SHOWN = (
    "Effective number of independent judges: not shown. From council scores alone an error"
    " every judge shares looks exactly like answer quality, so it is not identified"
    " (ADR 0025); measure it against human labels with `llm-council calibrate PAIRS.jsonl`"
    " on two or more judges' verdicts with human_label."
)


def effective_judges_note_text() -> str:
    """The one line for the text report, under the leaderboard."""
    return "  " + EFFECTIVE_JUDGES_NOT_SHOWN


def effective_judges_note_html() -> str:
    """The same line as an HTML paragraph, for the leaderboard section of the dashboard."""
    return f'<p class="note">{escape(EFFECTIVE_JUDGES_NOT_SHOWN)}</p>'
