"""Replay on real judge data (PRD Vicuna80, MIT): pinned consistency and human kappa.

Each pinned number is derived in a comment from counts and recomputed here by direct
counting over the raw JSON (collections.Counter), independently of our report code, and
then compared with what ``calibrate`` reports.
"""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from llm_council.calibration.pairs import parse_pairs_lines, read_pairs
from llm_council.calibration.session import replay_reports

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"
SHARED = Path("/work/shared/data/prd-vicuna80")


def _raw(
    records: list[dict[str, Any]], judge: str
) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """First verdict per order, and (consolidated, human) for labelled pairs, by hand."""
    mine = [r for r in records if r["judge"] == judge]
    ab = [next(j["winner"] for j in r["judgments"] if j["order"] == "ab") for r in mine]
    ba = [next(j["winner"] for j in r["judgments"] if j["order"] == "ba") for r in mine]
    consolidated = [x if x == y else "tie" for x, y in zip(ab, ba, strict=True)]
    human = [
        (c, r["human_label"]) for c, r in zip(consolidated, mine, strict=True) if "human_label" in r
    ]
    return ab, ba, human


def _kappa_by_counting(pairs: list[tuple[str, str]]) -> float:
    n = len(pairs)
    p_o = sum(x == y for x, y in pairs) / n
    first, second = Counter(x for x, _ in pairs), Counter(y for _, y in pairs)
    p_e = sum(first[k] * second[k] for k in ("a", "b", "tie")) / (n * n)
    return (p_o - p_e) / (1 - p_e)


@pytest.fixture(scope="module")
def fixture_reports() -> dict[str, dict[str, Any]]:
    reports = replay_reports(read_pairs(FIXTURE), path=str(FIXTURE))
    return {report["judge"]: report for report in reports}


def test_fixture_gpt4(fixture_reports: dict[str, dict[str, Any]]) -> None:
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    ab, ba, human = _raw(records, "gpt4")
    # gpt4, questions 1-8, 10 model pairs = 80 pairs. (ab, ba) table:
    #   (a,a) 20  (b,b) 30  (a,b) 20  (a,tie) 6  (tie,b) 4   -> consistent 50/80 = 0.625
    # marginals ab: a 46, b 30, tie 4; ba: a 20, b 54, tie 6
    # p_e = (46*20 + 30*54 + 4*6)/6400 = 2564/6400 = 0.400625
    # kappa = (0.625 - 0.400625)/(1 - 0.400625) = 0.37435
    # flips: (a,b) x20 = first shown won both times; (a,tie) and (tie,b) lean first too -> 30 first / 0 second
    assert sum(x == y for x, y in zip(ab, ba, strict=True)) == 50
    assert _kappa_by_counting(list(zip(ab, ba, strict=True))) == pytest.approx(0.37435, abs=5e-5)
    # human majority on 72 labelled pairs (consolidated, human):
    #   (a,a) 17 (b,b) 22 (tie,tie) 5 -> p_o = 44/72 = 0.61111
    #   judge marginals a 18, b 26, tie 28; human a 28, b 36, tie 8
    #   p_e = (18*28 + 26*36 + 28*8)/72^2 = 1664/5184 = 0.32099 ; kappa = 0.42727
    assert len(human) == 72
    assert _kappa_by_counting(human) == pytest.approx(0.42727, abs=5e-5)
    report = fixture_reports["gpt4"]
    assert report["consistency"]["agreement"]["successes"] == 50
    assert report["consistency"]["kappa"] == pytest.approx(
        _kappa_by_counting(list(zip(ab, ba, strict=True)))
    )
    assert report["position_bias"]["direction"] == "favors_first"
    assert (
        report["position_bias"]["flips_favoring_first"],
        report["position_bias"]["flips_favoring_second"],
    ) == (30, 0)
    assert report["human_agreement"]["pairs"] == 72
    assert report["human_agreement"]["kappa"] == pytest.approx(_kappa_by_counting(human))
    assert report["human_agreement"]["accuracy"]["successes"] == 44


def test_fixture_claude(fixture_reports: dict[str, dict[str, Any]]) -> None:
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    ab, ba, human = _raw(records, "claude")
    # claude, 80 pairs. (ab, ba): (a,a) 26 (b,b) 25 (tie,tie) 1 -> consistent 52/80 = 0.65
    # flips: (b,a) 5 and (a,b) 1 -> second/first shown won both; (tie,a) 8, (b,tie) 5 lean second;
    #        (a,tie) 4, (tie,b) 5 lean first -> 10 first / 18 second
    # marginals ab: a 31, b 35, tie 14; ba: a 39, b 31, tie 10
    # p_e = (31*39 + 35*31 + 14*10)/6400 = 2434/6400 = 0.3803125 ; kappa = (0.65 - 0.38031)/0.61969 = 0.43520
    assert sum(x == y for x, y in zip(ab, ba, strict=True)) == 52
    assert _kappa_by_counting(list(zip(ab, ba, strict=True))) == pytest.approx(0.43520, abs=5e-5)
    # human: (a,a) 19 (b,b) 21 (tie,tie) 3 -> p_o = 43/72 = 0.59722
    #   judge a 25, b 25, tie 22; human a 28, b 36, tie 8
    #   p_e = (25*28 + 25*36 + 22*8)/5184 = 1776/5184 = 0.34259 ; kappa = 0.38732
    assert _kappa_by_counting(human) == pytest.approx(0.38732, abs=5e-5)
    report = fixture_reports["claude"]
    assert report["consistency"]["agreement"]["successes"] == 52
    assert report["consistency"]["kappa"] == pytest.approx(0.43520, abs=5e-5)
    # 10 first / 18 second: two-sided sign test p = 0.185 (binomial(28, 1/2), by hand:
    # 2 * P(X <= 10) = 2 * 0.0925), not significant, so no direction is named (issue 13.4)
    assert report["position_bias"]["direction"] is None
    assert report["position_bias"]["direction_sign_test_p"] == pytest.approx(0.185, abs=1e-3)
    assert (
        report["position_bias"]["flips_favoring_first"],
        report["position_bias"]["flips_favoring_second"],
    ) == (10, 18)
    assert report["human_agreement"]["kappa"] == pytest.approx(0.38732, abs=5e-5)
    # both below the default 0.6: the command must refuse to trust these judges
    assert report["human_agreement"]["trusted"] is False


def _build_full() -> list[dict[str, Any]]:
    spec = importlib.util.spec_from_file_location(
        "build_fixture", FIXTURE.parent / "build_fixture.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_records(SHARED, ("gpt4", "claude"), False)  # type: ignore[no-any-return]


@pytest.mark.skipif(not SHARED.exists(), reason=f"shared PRD data not present at {SHARED}")
def test_full_data_matches_docs_table() -> None:
    records = _build_full()
    pairs = parse_pairs_lines([json.dumps(r) for r in records], "prd-full")
    reports = {r["judge"]: r for r in replay_reports(pairs, path="prd-full")}
    # gpt4: 800 pairs; consistent (a,a) 207 + (b,b) 291 + (tie,tie) 53 = 551 -> 68.9%
    #   ab marginals a 375, b 297, tie 128; ba a 215, b 473, tie 112
    #   p_e = (375*215 + 297*473 + 128*112)/640000 = 0.367878 ; kappa = (0.68875 - 0.367878)/0.632122 = 0.50761
    #   human (744 pairs): p_o = (158 + 234 + 46)/744 = 0.58871; kappa = 0.38901
    # claude: consistent 186 + 244 + 9 = 439 -> 54.9%; p_e = (238*437 + 500*294 + 62*69)/640000 = 0.398881
    #   kappa = (0.54875 - 0.398881)/0.601119 = 0.24932; human p_o = (143 + 194 + 39)/744 = 0.50538, kappa 0.29921
    for judge, agree, kappa, human_kappa in (
        ("gpt4", 551, 0.50761, 0.38901),
        ("claude", 439, 0.24932, 0.29921),
    ):
        ab, ba, human = _raw(records, judge)
        assert sum(x == y for x, y in zip(ab, ba, strict=True)) == agree
        assert _kappa_by_counting(list(zip(ab, ba, strict=True))) == pytest.approx(kappa, abs=5e-5)
        assert _kappa_by_counting(human) == pytest.approx(human_kappa, abs=5e-5)
        report = reports[judge]
        assert report["consistency"]["agreement"]["successes"] == agree
        assert report["consistency"]["kappa"] == pytest.approx(kappa, abs=5e-5)
        assert report["human_agreement"]["kappa"] == pytest.approx(human_kappa, abs=5e-5)
    assert reports["gpt4"]["position_bias"]["direction"] == "favors_first"
    assert reports["claude"]["position_bias"]["direction"] == "favors_second"
