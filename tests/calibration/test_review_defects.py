"""Regression tests for defects found in review (calibrate): each failed before its fix.

- ``--judge X`` kept X's self-preference baseline (the other judges' verdicts);
- paired differences between judges had no too-few rule (n=2 printed 0.00 [0.00, 0.00]);
- "95%" was printed whatever ``confidence`` was;
- judge names and CSV headers reached the terminal raw (ESC sequences, bidi overrides);
- the mapped importer's repeated-repetition error named the converted record, not the
  user's file line.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from llm_council.calibration.gate import GateThresholds, evaluate_gate
from llm_council.calibration.importers import load_pairs_any
from llm_council.calibration.majority import modal_share, strict_plurality
from llm_council.calibration.outcomes import outcomes_from_judgments
from llm_council.calibration.pairs import Pair, read_pairs
from llm_council.calibration.report import ReportOptions, compute_report
from llm_council.calibration.session import replay_study
from llm_council.calibration.study import compare_judges
from llm_council.calibration.study_render import render_comparison_text, render_study_html
from llm_council.calibration.summary import render_summary
from llm_council.errors import InputError

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"
HOSTILE = "evil\x1b[2J\u202ejudge"


def _records() -> list[dict[str, Any]]:
    return [json.loads(line) for line in FIXTURE.read_text().splitlines()]


def _write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_judge_selection_keeps_the_other_judges_as_self_preference_baseline() -> None:
    pairs = read_pairs(FIXTURE)
    both, _ = replay_study(pairs, path=str(FIXTURE))
    (alone,), _ = replay_study(pairs, path=str(FIXTURE), only_judge="gpt4")
    full = next(report for report in both if report["judge"] == "gpt4")
    excess = alone["self_preference"]["excess_over_other_judges"]
    # gpt4 answers appear in the file, and claude judged the same pairs
    assert excess["n"] > 0 and alone["self_preference"]["basis"] != "unadjusted"
    assert alone["self_preference"] == full["self_preference"]
    assert alone["judge"] == "gpt4"


def test_unknown_judge_error_is_terminal_safe(tmp_path: Path) -> None:
    path = _write(tmp_path / "r.jsonl", [{**r, "judge": HOSTILE} for r in _records()[:4]])
    with pytest.raises(InputError) as caught:
        replay_study(read_pairs(path), path=str(path), only_judge="nobody")
    message = str(caught.value)
    assert "\x1b" not in message and "\u202e" not in message
    assert "\\x1b" in message and "\\u202e" in message


def _two_common_pairs(tmp_path: Path) -> Path:
    ids = sorted({r["id"] for r in _records()})[:2]
    return _write(tmp_path / "two.jsonl", [r for r in _records() if r["id"] in ids])


def test_paired_difference_on_two_pairs_is_too_small(tmp_path: Path) -> None:
    path = _two_common_pairs(tmp_path)
    _, comparison = replay_study(read_pairs(path), path=str(path), by=("judge",), min_subset_n=30)
    assert comparison is not None and comparison["common_pairs"] == 2
    (diff,) = comparison["differences"]
    for name in ("order_agreement", "human_kappa"):
        assert diff[name]["too_small"] and diff[name]["too_few"]
        assert diff[name]["ci_low"] is None and diff[name]["ci_high"] is None
    text = render_comparison_text(comparison)
    assert "[too small]" in text and "[0.00, 0.00]" not in text
    assert "too small below 30 pairs" in text
    assert "[too small]" in render_study_html([], comparison)


def test_paired_difference_at_the_minimum_keeps_its_interval() -> None:
    pairs = read_pairs(FIXTURE)
    _, comparison = replay_study(pairs, path=str(FIXTURE), by=("judge",), min_subset_n=30)
    assert comparison is not None
    agreement = comparison["differences"][0]["order_agreement"]
    assert agreement["n"] == 80 and not agreement["too_small"]
    assert agreement["ci_low"] is not None and "[too small]" not in render_comparison_text(
        comparison
    )


def test_the_printed_level_is_the_configured_confidence() -> None:
    pairs = read_pairs(FIXTURE)
    # 90% options: the comparison caption and the report say 90%, not 95%
    outcomes = {
        judge: outcomes_from_judgments([p for p in pairs if p.judge == judge])
        for judge in ("claude", "gpt4")
    }
    options = {judge: ReportOptions(judge=judge, confidence=0.9) for judge in outcomes}
    at_90 = compare_judges(outcomes, options)
    assert at_90["confidence"] == 0.9
    assert "90% paired bootstrap" in render_comparison_text(at_90)
    assert "95% paired" not in render_comparison_text(at_90)
    # a file without human labels: the length-preference check names its bound's level
    unlabelled = [p for p in pairs if p.judge == "gpt4"]
    report = compute_report(
        outcomes_from_judgments([_without_human(p) for p in unlabelled]),
        ReportOptions(judge="gpt4", confidence=0.9),
    )
    assert report["confidence"] == 0.9
    thresholds = [item["threshold"] for item in report["checklist"]]
    assert "lower 90% bound <= 0.6" in thresholds


def _without_human(pair: Pair) -> Pair:
    return replace(pair, human_label=None, human_votes=())


def test_gate_and_summary_lines_are_terminal_safe(tmp_path: Path) -> None:
    path = _write(tmp_path / "h.jsonl", [{**r, "judge": HOSTILE} for r in _records()[:20]])
    reports, _ = replay_study(read_pairs(path), path=str(path))
    gate = evaluate_gate(reports, GateThresholds(fail_under={"order_kappa": 0.99}))
    (failure,) = gate["failures"]
    summary = render_summary(reports[0])
    for text in (failure["message"], summary):
        assert "\x1b" not in text and "\u202e" not in text
        assert "evil\\u001b[2J\\u202ejudge" in text
    too_few = evaluate_gate(reports, GateThresholds(min_evaluated=1.0))
    assert all("\x1b" not in line for line in too_few["too_few_judgments"])


def test_mapped_importer_headers_in_errors_are_terminal_safe(tmp_path: Path) -> None:
    table = tmp_path / "log.csv"
    table.write_text('pid,"\x1b]0;pwned\x07head\u202e",w,o\np1,x,a,ab\n', encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_pairs_any(table, "mapped", ["id=pid,winner=verdict,order=o"])
    message = str(caught.value)
    assert message.startswith(f"{table}:2: column 'verdict'")
    assert "\x1b" not in message and "\x07" not in message and "\u202e" not in message
    assert "\\u001b]0;pwned\\u0007head\\u202e" in message


@pytest.mark.parametrize(
    ("rows", "start", "also"),
    [
        # line 5 of the user's CSV repeats repetition 1 of order ab first given on line 2
        (
            "p1,a,ab,1\np1,b,ba,1\np1,a,ab,2\np1,b,ab,1\n",
            ":5: repetition 1 of order 'ab'",
            "already on line 2",
        ),
        # a pair whose rows mix a set and an empty repetition cell
        ("p1,a,ab,1\np1,b,ba,\n", ":3: column 'rep' (repetition) is empty here", "set on line 2"),
    ],
)
def test_mapped_repetition_errors_name_the_users_file_lines(
    tmp_path: Path, rows: str, start: str, also: str
) -> None:
    table = tmp_path / "reps.csv"
    table.write_text("pid,w,o,rep\n" + rows, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        load_pairs_any(table, "mapped", ["id=pid,winner=w,order=o,repetition=rep"])
    message = str(caught.value)
    assert message.startswith(f"{table}{start}")
    assert also in message and "as converted" not in message


@pytest.mark.parametrize(
    ("votes", "expected", "share"),
    [
        (["b", "a", "a"], "a", 2 / 3),
        (["a", "b"], None, 1 / 2),
        (["a", "a", "b", "b", "tie"], None, 2 / 5),
        (["tie"], "tie", 1.0),
    ],
)
def test_one_majority_rule(votes: list[str], expected: str | None, share: float) -> None:
    # hand-counted: the strict plurality, None on a tie of the top counts
    assert strict_plurality(votes) == expected
    assert modal_share(votes) == pytest.approx(share)
    assert strict_plurality([]) is None
