"""bias-report prints no effective number of judges, and says why, under the leaderboard."""

from __future__ import annotations

import re
from pathlib import Path

from llm_council.bias_audit.report import build_report, render_text
from llm_council.bias_audit.report.render.effective_judges_note import (
    EFFECTIVE_JUDGES_NOT_SHOWN,
    effective_judges_note_html,
)


def test_text_says_why_under_the_leaderboard(null_store: Path) -> None:
    text = render_text(build_report(null_store, n_resamples=20))
    board, adjusted = text.index("=== Leaderboard"), text.index("=== Adjusted view")
    note = text.index("Effective number of independent judges: not shown.")
    assert board < note < adjusted
    line = text[note : text.index("\n", note)]
    assert "calibrate" in line and "human_label" in line
    # not identified, so no number at all: the only digits name the ADR
    assert re.findall(r"\d+(?:\.\d+)?", line) == ["0025"]


def test_html_paragraph_is_escaped_and_the_same_sentence() -> None:
    paragraph = effective_judges_note_html()
    assert paragraph.startswith('<p class="note">') and paragraph.endswith("</p>")
    assert "`llm-council calibrate PAIRS.jsonl`" in paragraph
    assert EFFECTIVE_JUDGES_NOT_SHOWN.split(";")[0] in paragraph
