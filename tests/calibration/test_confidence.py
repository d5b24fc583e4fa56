"""Expected calibration error and the reliability curve of a judge's stated confidence."""

from __future__ import annotations

import json
import math

import pytest

from llm_council.calibration.confidence import (
    bin_index,
    expected_calibration_error,
    reliability_curve,
)
from llm_council.calibration.pairs import parse_pairs_lines
from llm_council.calibration.report import ReportOptions, compute_report, outcomes_from_judgments
from llm_council.calibration.summary import render_summary
from llm_council.errors import InputError

CONFIDENCES = [0.05, 0.15, 0.15, 0.95, 0.95, 0.95, 0.95, 0.55, 0.55, 1.0]
CORRECT = [False, False, True, True, True, True, False, True, False, True]


def test_ece_matches_a_hand_computation() -> None:
    # bins ((m-1)/10, m/10]:
    #   (0, .1]:  0.05          n=1 acc 0   conf .05  |.-.| .05  weight .1 -> .005
    #   (.1, .2]: 0.15 x2       n=2 acc .5  conf .15  .35        weight .2 -> .070
    #   (.5, .6]: 0.55 x2       n=2 acc .5  conf .55  .05        weight .2 -> .010
    #   (.9, 1]:  0.95 x4, 1.0  n=5 acc .8  conf .96  .16        weight .5 -> .080
    # ECE = .165
    assert expected_calibration_error(CONFIDENCES, CORRECT) == pytest.approx(0.165)
    curve = reliability_curve(CONFIDENCES, CORRECT, 0.95)
    assert [(row["n"], row["accuracy"]) for row in curve] == [
        (1, 0.0),
        (2, 0.5),
        (2, 0.5),
        (5, 0.8),
    ]
    assert curve[-1]["mean_confidence"] == pytest.approx(0.96)


def test_bin_edges_belong_to_the_lower_bin() -> None:
    assert [bin_index(c) for c in (0.0, 0.1, 0.3, 0.30001, 1.0)] == [0, 0, 2, 3, 9]
    assert expected_calibration_error([0.7] * 10, [True] * 7 + [False] * 3) == pytest.approx(0.0)
    assert math.isnan(expected_calibration_error([], []))
    with pytest.raises(ValueError, match="in \\[0, 1\\]"):
        expected_calibration_error([float("nan")], [True])


def _record(i: int, **judgment_extra: object) -> str:
    return json.dumps(
        {
            "id": f"p{i}",
            "prompt": "q",
            "response_a": "x",
            "response_b": "y",
            "human_label": "a",
            "judge": "j",
            "judgments": [
                {"order": "ab", "winner": "a" if i % 4 else "b", **judgment_extra},
                {"order": "ba", "winner": "a", **judgment_extra},
            ],
        }
    )


def test_report_section_from_confidence_and_logprob() -> None:
    pairs = parse_pairs_lines([_record(i, confidence=0.8) for i in range(20)], "x.jsonl")
    report = compute_report(outcomes_from_judgments(pairs), ReportOptions(judge="j"))
    section = report["confidence_calibration"]
    # 40 verdicts at 0.8; the ab verdict is wrong on p0, p4, ..., p16 (5 of 40): right 35/40
    assert section["n_verdicts"] == 40 and section["accuracy"] == pytest.approx(0.875)
    assert section["ece"] == pytest.approx(0.075)
    assert "ECE 0.075" in render_summary(report)
    logprob = parse_pairs_lines([_record(i, verdict_logprob=math.log(0.8)) for i in range(20)], "x")
    again = compute_report(outcomes_from_judgments(logprob), ReportOptions(judge="j"))
    assert again["confidence_calibration"]["ece"] == pytest.approx(0.075)
    few = parse_pairs_lines([_record(i, confidence=0.8) for i in range(5)], "x")
    assert not compute_report(outcomes_from_judgments(few), ReportOptions(judge="j"))[
        "confidence_calibration"
    ]["available"]
    plain = parse_pairs_lines([_record(i) for i in range(20)], "x")
    assert "confidence_calibration" not in compute_report(
        outcomes_from_judgments(plain), ReportOptions(judge="j")
    )


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"confidence": 1.5}, "'judgments[0].confidence' must be a number from 0 to 1, got 1.5"),
        ({"confidence": True}, "must be a number from 0 to 1, got True"),
        ({"confidence": "high"}, "got 'high'"),
        ({"verdict_logprob": 0.3}, "'judgments[0].verdict_logprob' must be a number <= 0"),
        ({"confidence": 0.5, "verdict_logprob": -1.0}, "not both"),
    ],
)
def test_bad_confidence_is_a_one_line_error(extra: dict[str, object], message: str) -> None:
    with pytest.raises(InputError, match="x.jsonl:1: ") as error:
        parse_pairs_lines([_record(0, **extra)], "x.jsonl")
    assert message in str(error.value)
