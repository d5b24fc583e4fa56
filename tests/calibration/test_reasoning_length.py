"""Calibrate's "are longer rationales more often wrong?" (ADR 0027), from replay files whose
judgments carry ``rationale_chars`` (or a ``rationale``), against a known truth.

The generator here draws, per verdict, a rationale length (log-normal) and whether the
verdict disagrees with the human label, with P(wrong) = logistic(a + b * log2(chars / 600))
and pair-level difficulty shared by both orders (so pairs are clusters). b = 0 is the null.
The false-positive rate and power quoted in docs/calibration.md come from
``.venv/bin/pytest tests/calibration/test_reasoning_length.py -m slow -s``.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from llm_council.calibration.outcomes import judgments_to_outcome
from llm_council.calibration.pairs import pair_to_record, parse_pairs_lines
from llm_council.calibration.reasoning import rationale_length_errors
from llm_council.calibration.report import ReportOptions, compute_report
from llm_council.calibration.summary import render_summary
from llm_council.errors import InputError


def replay_lines(n_pairs: int, slope: float, seed: int, base: float = -1.0) -> list[str]:
    rng = np.random.default_rng(seed)
    lines = []
    for index in range(n_pairs):
        human = "a" if rng.random() < 0.5 else "b"
        other = "b" if human == "a" else "a"
        difficulty = 0.7 * rng.standard_normal()
        judgments = []
        for order in ("ab", "ba"):
            chars = int(max(20, round(600 * np.exp(0.7 * rng.standard_normal()))))
            logit = base + difficulty + slope * np.log2(chars / 600)
            wrong = rng.random() < 1 / (1 + np.exp(-logit))
            judgments.append(
                {"order": order, "winner": other if wrong else human, "rationale_chars": chars}
            )
        lines.append(
            json.dumps(
                {
                    "id": f"p{index}",
                    "prompt": "q",
                    "response_a": "x",
                    "response_b": "y",
                    "human_label": human,
                    "judge": "sim-judge",
                    "judgments": judgments,
                }
            )
        )
    return lines


def section(lines: list[str]) -> dict:
    pairs = parse_pairs_lines(lines, "replay.jsonl")
    outcomes = [judgments_to_outcome(pair, pair.judgments) for pair in pairs]
    return rationale_length_errors([o for o in outcomes if o.evaluated], 0.95)


def test_longer_rationales_more_often_wrong_are_found_and_the_null_is_not() -> None:
    found = section(replay_lines(300, slope=0.8, seed=1))
    assert found["available"] and found["longer_more_often_wrong"]
    assert found["ci_low"] < 0.8 < found["ci_high"]
    rates = [row["disagreement"] for row in found["by_tercile"]]
    assert rates == sorted(rates) and [row["tercile"] for row in found["by_tercile"]] == [1, 2, 3]
    null = section(replay_lines(300, slope=0.0, seed=2))
    assert not null["longer_more_often_wrong"] and null["ci_low"] < 0 < null["ci_high"]


def test_the_section_reaches_the_report_and_the_summary() -> None:
    pairs = parse_pairs_lines(replay_lines(120, slope=1.0, seed=3), "replay.jsonl")
    outcomes = [judgments_to_outcome(pair, pair.judgments) for pair in pairs]
    report = compute_report(outcomes, ReportOptions(judge="sim-judge"))
    assert report["reasoning_length"]["n_verdicts"] == 240
    assert "rationale length    wrong vs humans T1" in render_summary(report)


def test_without_rationale_lengths_the_section_says_why() -> None:
    lines = [
        line.replace('"rationale_chars"', '"other_field"')
        for line in replay_lines(40, slope=0.0, seed=4)
    ]
    found = section(lines)
    assert found == {
        "available": False,
        "reason": "0 verdicts with a rationale length and a human label (< 30)",
    }


def test_rationale_text_is_counted_and_bad_lengths_are_named() -> None:
    record = json.loads(replay_lines(1, slope=0.0, seed=5)[0])
    record["judgments"][0] = {"order": "ab", "winner": "a", "rationale": "because " * 10}
    pair = parse_pairs_lines([json.dumps(record)], "r.jsonl")[0]
    assert pair.judgments[0].rationale_chars == 80
    assert pair_to_record(pair)["judgments"][0]["rationale_chars"] == 80
    record["judgments"][0] = {"order": "ab", "winner": "a", "rationale_chars": -3}
    with pytest.raises(InputError, match=r"judgments\[0\]\.rationale_chars' must be an integer"):
        parse_pairs_lines([json.dumps(record)], "r.jsonl")


@pytest.mark.slow
def test_false_positive_rate_and_power() -> None:
    runs = int(os.environ.get("REASONING_REPLICATES", "400"))
    for n_pairs in (100, 300):
        rates = {}
        for slope in (0.0, 0.25, 0.5):
            flagged = sum(
                section(replay_lines(n_pairs, slope, seed=10_000 + run))["longer_more_often_wrong"]
                for run in range(runs)
            )
            rates[slope] = flagged / runs
        print(
            f"\ncalibrate rationale length n_pairs={n_pairs}: "
            + " ".join(f"slope {s:+.2f} flagged {r:.3f}" for s, r in rates.items())
            + f" ({runs} runs)"
        )
        # the flag is the positive side of a two-sided 5% test: about 2.5% under the null
        assert rates[0.0] <= 0.025 + 3 * (0.025 * 0.975 / runs) ** 0.5


def test_live_calls_record_the_reasoning_before_the_verdict_line() -> None:
    from llm_council.calibration.reasoning import reply_rationale_chars

    assert reply_rationale_chars("A is right because it cites the law.\nVerdict: Response A") == 36
    assert reply_rationale_chars("Verdict: tie") == 0
    # an earlier verdict mention is reasoning; the last verdict line ends it
    reply = "Verdict: A looked likely.\nBut B is exact.\nVerdict: Response B"
    assert reply_rationale_chars(reply) == len("Verdict: A looked likely.\nBut B is exact.")
