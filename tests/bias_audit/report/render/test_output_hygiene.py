"""Hostile reviewer/model ids in every output format (issue 10, item 15)."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from pathlib import Path

from bias_audit.report.conftest import scores_to_lines
from llm_council.bias_audit.report import build_report, render_csv, render_html, render_text
from llm_council.infra.safe_text import (
    csv_text_cell,
    distinct_labels,
    ellipsize_middle,
    terminal_safe,
)

FORMULA_IDS = ('=HYPERLINK("http://x")', "+1+1", "-2+3", "@SUM(A1)")
LONG_A = "openrouter/anthropic/claude-3.5-sonnet-reviewer-2024-06-20"
LONG_B = "openrouter/anthropic/claude-3.5-sonnet-reviewer-2024-10-22"


def _store(write_lines: Callable[[Sequence[str]], Path], reviewers: Sequence[str]) -> Path:
    table = {
        f"s{session}": {
            model: {
                reviewer: float(3 + (session * 7 + index * 3 + j) % 6)
                for index, reviewer in enumerate(reviewers)
            }
            for j, model in enumerate(("m1", "m2", "m3"))
        }
        for session in range(6)
    }
    return write_lines(scores_to_lines(table))


def test_csv_neutralises_formula_ids(write_lines: Callable[[Sequence[str]], Path]) -> None:
    report = build_report(_store(write_lines, FORMULA_IDS), n_resamples=20)
    text = render_csv(report)
    rows = list(csv.reader(io.StringIO(text)))
    subjects = {row[1] for row in rows[1:] if row[0] == "reviewer"}
    assert subjects == {"'" + reviewer for reviewer in FORMULA_IDS}
    for row in rows[1:]:
        for cell in row[:3]:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), row
    # quoted cells (OWASP), and numbers still numbers: a negative estimate keeps its sign
    assert all(line.startswith('"') for line in text.splitlines())
    estimates = [float(row[3]) for row in rows[1:] if row[3]]
    assert any(value < 0 for value in estimates)


def test_csv_text_cell_follows_owasp() -> None:
    for prefix in ("=", "+", "-", "@", "\t", "\r"):
        assert csv_text_cell(prefix + "x") == "'" + prefix + "x"
    assert csv_text_cell("judge-1") == "judge-1"
    assert csv_text_cell("") == ""


def test_text_report_strips_terminal_controls(
    write_lines: Callable[[Sequence[str]], Path],
) -> None:
    hostile = ("evil\x1b[2J\x1b]0;pwned\x07", "admin\u202egnp.exe", "ok\u2066x\u2069", "nl\nfake")
    report = build_report(_store(write_lines, hostile), n_resamples=20)
    text = render_text(report)
    assert not re.search("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", text)
    assert "evil\\u001b[2J\\u001b]0;pwned\\u0007" in text
    assert "admin\\u202egnp.exe" in text
    assert "nl\\u000afake" in text  # an id cannot forge a report line
    html = render_html(report)
    assert "\u202e" not in html and "\x1b" not in html


def test_terminal_safe_keeps_ordinary_text() -> None:
    assert terminal_safe("gpt-4o / claude (été) 模型") == "gpt-4o / claude (été) 模型"
    assert terminal_safe("a\u200fb") == "a\\u200fb"


def test_long_ids_are_ellipsized_with_full_id_in_tooltip(
    write_lines: Callable[[Sequence[str]], Path],
) -> None:
    report = build_report(_store(write_lines, (LONG_A, LONG_B, "short")), n_resamples=20)
    html = render_html(report)
    leniency_svg = html[html.index('<svg id="plot-leniency"') :]
    leniency_svg = leniency_svg[: leniency_svg.index("</svg>")]
    labels = re.findall(r'class="label"><title>([^<]*)</title>([^<]*)</text>', leniency_svg)
    shown = {full: short for full, short in labels}
    assert set(shown) == {LONG_A, LONG_B, "short"}
    assert shown["short"] == "short"
    assert len(shown[LONG_A]) <= 26 and "\u2026" in shown[LONG_A]
    assert shown[LONG_A] != shown[LONG_B]  # the two reviewers can be told apart


def test_distinct_labels_never_collide() -> None:
    ids = ["x" * 40 + "1" + "y" * 20, "x" * 40 + "2" + "y" * 20, "short"]
    labels = distinct_labels(ids)
    assert len(set(labels)) == 3
    assert all(len(label) <= 26 for label in labels)
    assert ellipsize_middle("abcdefghij", 5) == "ab\u2026ij"


def test_a_numpy_number_is_written_as_a_plain_number() -> None:
    # numpy 2's repr of a scalar is "np.float64(5.5)": a CSV cell must read as a number
    import numpy as np

    from llm_council.bias_audit.report.render.csv_cells import cell_text

    assert cell_text(np.float64(5.5)) == "5.5"
    assert cell_text(np.float64(-0.1)) == "-0.1"
    assert cell_text(np.int64(7)) == "7"
    assert cell_text(np.float64("nan")) == ""
