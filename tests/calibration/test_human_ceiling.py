"""The human ceiling (calibration/human_ceiling.py) and the agreement figures beside it."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_council.calibration.gate import GateThresholds, decide_gate
from llm_council.calibration.human_ceiling import human_ceiling
from llm_council.calibration.outcomes import outcomes_from_judgments
from llm_council.calibration.pairs import read_pairs
from llm_council.calibration.report import ReportOptions, compute_report
from llm_council.cli.app import _run, app
from llm_council.stats.reliability.agreement import cohen_kappa_from_table

VOTES = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_votes_5_judges.jsonl"
INDEX = {"a": 0, "tie": 1, "b": 2}


def _brute_force(outcomes) -> tuple[float, float]:
    """Every ordered pair of two different annotators (weight 1/(m(m-1))) and every
    judge-annotator pair (weight 1/m), listed one by one: an independent route to the two
    tables the module builds from vote counts."""
    humans = np.zeros((3, 3))
    judge = np.zeros((3, 3))
    for outcome in outcomes:
        votes = [INDEX[v.winner] for v in outcome.pair.human_votes]
        m = len(votes)
        if m < 2:
            continue
        for first, second in itertools.permutations(range(m), 2):
            humans[votes[first], votes[second]] += 1 / (m * (m - 1))
        for vote in votes:
            judge[INDEX[outcome.consolidated], vote] += 1 / m
    return cohen_kappa_from_table(humans).kappa, cohen_kappa_from_table(judge).kappa


@pytest.fixture(scope="module")
def prd_outcomes() -> dict[str, list[Any]]:
    pairs = read_pairs(VOTES)
    by_judge: dict[str, list[Any]] = {}
    for pair in pairs:
        by_judge.setdefault(pair.judge, []).append(pair)
    return {
        judge: [o for o in outcomes_from_judgments(judged) if o.evaluated]
        for judge, judged in by_judge.items()
    }


def test_the_prd_ceiling_equals_the_pair_by_pair_computation(prd_outcomes):
    for judge, outcomes in prd_outcomes.items():
        ceiling = human_ceiling(outcomes, resamples=200)
        humans, judge_kappa = _brute_force(outcomes)
        assert ceiling["human_kappa"] == pytest.approx(humans, abs=1e-12), judge
        assert ceiling["judge_kappa"] == pytest.approx(judge_kappa, abs=1e-12), judge
        low, high = ceiling["human_kappa_ci"]
        assert low < ceiling["human_kappa"] < high


def test_the_prd_reviewers_are_placed_against_the_humans(prd_outcomes):
    # PRD Vicuna80: annotators agree with each other at kappa ~0.26 on these 424 pairs;
    # gpt4, claude and gpt35 reach that, bard and vicuna-13b (kappa ~0.1) do not
    placed = {
        judge: human_ceiling(outcomes, resamples=300)["as_good_as_humans"]
        for judge, outcomes in prd_outcomes.items()
    }
    assert placed == {
        "gpt4": True,
        "claude": True,
        "gpt35": True,
        "bard": False,
        "vicuna-13b": False,
    }


def test_a_judge_as_good_as_the_humans_is_trusted_below_the_threshold(prd_outcomes):
    report = compute_report(prd_outcomes["gpt4"], ReportOptions(judge="gpt4"))
    human = report["human_agreement"]
    assert human["kappa"] < human["threshold"]
    assert human["trusted"] is True and human["trusted_by"] == "human_ceiling"
    assert decide_gate([report], GateThresholds()).verdict == "pass"
    bard = compute_report(prd_outcomes["bard"], ReportOptions(judge="bard"))
    assert bard["human_agreement"]["trusted"] is False
    assert decide_gate([bard], GateThresholds()).verdict == "untrusted"


def test_majority_baseline_and_weighted_kappa_in_the_report(prd_outcomes):
    report = compute_report(prd_outcomes["gpt4"], ReportOptions(judge="gpt4"))
    human = report["human_agreement"]
    labels = [o.pair.human_label for o in prd_outcomes["gpt4"] if o.pair.human_label]
    commonest = max(set(labels), key=labels.count)
    assert human["majority_baseline"]["label"] == commonest
    assert human["majority_baseline"]["rate"] == pytest.approx(
        labels.count(commonest) / len(labels)
    )
    assert -1 <= human["weighted_kappa"]["kappa"] <= 1
    assert human["krippendorff_alpha"]["metric"] == "ordinal"


def test_fail_under_relative_to_the_ceiling(tmp_path, capsys):
    output = tmp_path / "report.json"
    code = _run(
        [
            "calibrate", str(VOTES), "--judge", "bard",
            "--fail-under", "kappa_vs_ceiling=-0.05", "--output", str(output),
        ],
        "llm-council", app,
    )  # fmt: skip
    gate = json.loads(output.read_text())["gate"]
    assert code == 4 and gate["verdict"] == "fail"
    assert "kappa_vs_ceiling" in capsys.readouterr().err


def test_no_ceiling_without_several_votes(prd_outcomes):
    single = [o for o in prd_outcomes["gpt4"][:5]]
    stripped = [replace(o, pair=replace(o.pair, human_votes=())) for o in single]
    assert human_ceiling(stripped) is None
    few = human_ceiling(single)
    assert few is not None and few["too_few"] and few["as_good_as_humans"] is None
