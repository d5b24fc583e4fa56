"""Effective number of independent judges in calibrate (replay of 2+ judges with labels)."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from generators.shared_error_judges import judge_records, true_effective_judges
from llm_council.calibration.judge_independence import (
    MIN_SHARED_PAIRS,
    judge_independence,
    judge_independence_from_pairs,
    outcomes_by_judge,
    shared_error_matrix,
)
from llm_council.calibration.judge_independence_render import (
    render_independence_html,
    render_independence_text,
)
from llm_council.calibration.pairs import parse_pairs_lines, read_pairs
from llm_council.calibration.session import judges_in
from llm_council.cli.app import _run, app

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"


def _section(records: list[dict[str, Any]]) -> dict[str, Any]:
    pairs = parse_pairs_lines([json.dumps(r) for r in records], "records")
    section = judge_independence_from_pairs(pairs, judges_in(pairs))
    assert section is not None
    return section


def _record(pair_id: str, judge: str, ab: str, ba: str, human: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": pair_id,
        "prompt": "q",
        "response_a": "x",
        "response_b": "y",
        "judge": judge,
        "judgments": [{"order": "ab", "winner": ab}, {"order": "ba", "winner": ba}],
    }
    if human is not None:
        record["human_label"] = human
    return record


def test_error_matrix_keeps_shared_labelled_pairs_and_counts_flips_as_tie() -> None:
    records = [
        _record("p1", "j1", "a", "a", "a"),  # right
        _record("p1", "j2", "a", "b", "a"),  # order flip -> tie -> wrong
        _record("p2", "j1", "b", "b", None),  # no label: left out
        _record("p2", "j2", "b", "b", None),
        _record("p3", "j1", "b", "b", "a"),  # labels disagree between records: left out
        _record("p3", "j2", "b", "b", "b"),
        _record("p4", "j1", "a", "a", "b"),  # only j1 judged it: left out
    ]
    pairs = parse_pairs_lines([json.dumps(r) for r in records], "records")
    judges, ids, errors, conflicting = shared_error_matrix(outcomes_by_judge(pairs, ["j1", "j2"]))
    assert judges == ["j1", "j2"] and ids == ["p1"] and conflicting == 1
    assert errors.tolist() == [[0.0, 1.0]]


def test_fixture_matches_phi_by_counting() -> None:
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    # independent reference: the phi coefficient of the 2x2 table of (gpt4 wrong, claude
    # wrong) over the labelled pairs both judged, counted straight from the raw JSON
    wrong: dict[str, dict[str, int]] = {"gpt4": {}, "claude": {}}
    for r in records:
        if "human_label" not in r:
            continue
        ab = next(j["winner"] for j in r["judgments"] if j["order"] == "ab")
        ba = next(j["winner"] for j in r["judgments"] if j["order"] == "ba")
        wrong[r["judge"]][r["id"]] = int((ab if ab == ba else "tie") != r["human_label"])
    ids = sorted(set(wrong["gpt4"]) & set(wrong["claude"]))
    table = Counter((wrong["gpt4"][i], wrong["claude"][i]) for i in ids)
    n11, n10, n01, n00 = table[1, 1], table[1, 0], table[0, 1], table[0, 0]
    phi = (n11 * n00 - n10 * n01) / math.sqrt((n11 + n10) * (n01 + n00) * (n11 + n01) * (n10 + n00))
    section = judge_independence_from_pairs(read_pairs(FIXTURE), ["claude", "gpt4"])
    assert section is not None
    assert section["shared_labelled_pairs"] == len(ids) == 72
    assert section["mean_error_correlation"]["estimate"] == pytest.approx(phi)
    assert section["effective_judges"]["estimate"] == pytest.approx(2 / (1 + phi))
    assert section["error_rates"]["gpt4"] == pytest.approx((n11 + n10) / 72)
    assert section["pair_correlations"] == [
        {"first": "claude", "second": "gpt4", "r": pytest.approx(phi)}
    ]


def test_independent_judges_interval_covers_k_and_no_flag() -> None:
    section = _section(judge_records(400, 4, shared=0.0, error=0.25, seed=11))
    n_eff = section["effective_judges"]
    assert not section["too_few"] and section["shared_error_detected"] is False
    assert n_eff["ci_low"] <= 4 <= (n_eff["ci_high"] or math.inf)
    assert "no shared error detected" in render_independence_text(section)


def test_shared_errors_are_detected_near_the_true_value() -> None:
    section = _section(judge_records(400, 5, shared=0.1, error=0.2, seed=12))
    n_eff = section["effective_judges"]
    assert section["shared_error_detected"] is True
    assert n_eff["ci_low"] <= true_effective_judges(0.1, 0.2, 5) <= n_eff["ci_high"] < 5
    assert "worth about" in render_independence_text(section)


def test_identical_judges_are_worth_one() -> None:
    records = judge_records(100, 1, shared=0.0, error=0.3, seed=4)
    copies = [{**r, "judge": name} for name in ("x", "y", "z") for r in records]
    section = _section(copies)
    assert section["effective_judges"]["estimate"] == pytest.approx(1.0)


def test_too_few_pairs_gives_no_interval_and_no_flag() -> None:
    section = _section(judge_records(MIN_SHARED_PAIRS - 1, 3, shared=0.3, error=0.3, seed=1))
    assert section["too_few"] and section["shared_error_detected"] is False
    assert section["effective_judges"]["ci_low"] is None
    assert "[too few]" in render_independence_text(section)


def test_a_judge_never_wrong_is_not_computed() -> None:
    records = judge_records(60, 2, shared=0.0, error=0.3, seed=2)
    for r in records:
        if r["judge"] == "judge-0":
            r["judgments"] = [{"order": o, "winner": r["human_label"]} for o in ("ab", "ba")]
    section = _section(records)
    assert section["not_computed"] and "judge-0" in section["not_computed"]
    assert "effective_judges" not in section
    assert render_independence_text(section).count("\n") == 0


def test_one_judge_has_no_section() -> None:
    pairs = parse_pairs_lines(
        [json.dumps(r) for r in judge_records(40, 1, shared=0, error=0.2)], "x"
    )
    assert judge_independence_from_pairs(pairs, judges_in(pairs)) is None


def test_no_human_labels_says_why() -> None:
    records = judge_records(40, 2, shared=0.0, error=0.2)
    for r in records:
        del r["human_label"]
    section = _section(records)
    assert section["not_computed"] == "only 0 shared labelled pairs"


def test_cli_text_json_and_html_with_hostile_judge_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hostile = "<script>alert(1)</script>\u202e|j"
    records = judge_records(120, 3, shared=0.15, error=0.2, seed=7, judge_names=("a", "b", hostile))
    path = tmp_path / "judges.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    output, page = tmp_path / "r.json", tmp_path / "r.html"
    args = ["calibrate", str(path), "--human-threshold", "0", "--output", str(output)]
    assert _run([*args, "--html", str(page)], "llm-council", app) == 0
    out = capsys.readouterr().out
    # our section (render_summary's own judge line is outside it)
    ours = out[out.index("Effective number of independent judges") :]
    assert ours.startswith("Effective number of independent judges (3 judges, 120 pairs")
    assert "\u202e" not in ours and "<script>alert(1)</script>??j" in ours
    document = json.loads(output.read_text())
    section = document["effective_judges"]
    assert section["k"] == 3 and section["shared_error_detected"] is True
    assert section == judge_independence(
        outcomes_by_judge(read_pairs(path), sorted(["a", "b", hostile]))
    )
    text = page.read_text()
    assert "<script>alert" not in text and "Effective number of independent judges" in text
    assert render_independence_html(section) in text
    # --judge replays one judge: nothing to compare, no section
    assert _run([*args, "--judge", "a"], "llm-council", app) == 0
    assert "effective_judges" not in json.loads(output.read_text())


def test_few_expected_joint_errors_is_too_few_naming_the_judges() -> None:
    # 5 judges, 100 pairs, 10% errors: ~1 joint error expected per pair of judges (< 5)
    section = _section(judge_records(100, 5, shared=0.0, error=0.1, seed=3))
    assert section["too_few"] and section["effective_judges"]["ci_low"] is None
    assert "expected to err together" in section["too_few_reason"]
    assert section["shared_error_detected"] is False


def test_imported_judgment_log_gives_the_same_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # the same 3 judges as a long-layout CSV (one row per judgment) through --map
    records = judge_records(80, 3, shared=0.1, error=0.25, seed=21)
    rows = ["pair,grader,shown,verdict,gold"]
    for r in records:
        rows += [
            f"{r['id']},{r['judge']},{j['order']},{j['winner']},{r['human_label']}"
            for j in r["judgments"]
        ]
    log = tmp_path / "log.csv"
    log.write_text("\n".join(rows) + "\n")
    output = tmp_path / "r.json"
    mapping = "id=pair,judge=grader,order=shown,winner=verdict,human_label=gold"
    args = ["calibrate", str(log), "--input-format", "mapped", "--map", mapping]
    assert _run([*args, "--human-threshold", "0", "--output", str(output)], "x", app) == 0
    imported = json.loads(output.read_text())["effective_judges"]
    assert imported["shared_labelled_pairs"] == 80
    assert imported == _section(records)
