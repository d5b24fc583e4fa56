"""Study mode (issue 13 section 1): figures per subset, judges side by side, text and HTML."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_council.calibration.pairs import read_pairs
from llm_council.calibration.session import replay_study
from llm_council.calibration.study import parse_by, subset_labels
from llm_council.cli.app import _run, app
from llm_council.errors import ConfigError

FIXTURE = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"


def _by_counting(records: list[dict], judge: str, models: tuple[str, str]) -> tuple[int, int]:
    """(consistent, n) for one judge and one model pair, counted straight from the file."""
    agree = n = 0
    for record in records:
        meta = record["metadata"]
        if record["judge"] != judge or tuple(sorted((meta["model_a"], meta["model_b"]))) != models:
            continue
        verdicts = {j["order"]: j["winner"] for j in record["judgments"]}
        n += 1
        agree += verdicts["ab"] == verdicts["ba"]
    return agree, n


def test_per_model_pair_rows_match_direct_counting() -> None:
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    reports, comparison = replay_study(
        read_pairs(FIXTURE), path=str(FIXTURE), by=("model_pair",), min_subset_n=30
    )
    assert comparison is None  # --by judge not asked
    for report in reports:
        rows = report["subsets"]["model_pair"]
        assert len(rows) == 10 and sum(row["n"] for row in rows) == 80
        for row in rows:
            models = tuple(row["subset"].split(" vs "))
            agree, n = _by_counting(records, report["judge"], models)  # type: ignore[arg-type]
            assert (row["order_agreement"]["successes"], row["n"]) == (agree, n)
            # 8 pairs per model pair: below the minimum, listed but not graded
            assert row["too_small"] and row["grade"] is None


def test_judges_compared_on_the_same_pairs_with_paired_differences() -> None:
    reports, comparison = replay_study(read_pairs(FIXTURE), path=str(FIXTURE), by=("judge",))
    assert comparison is not None and comparison["common_pairs"] == 80
    rows = {row["judge"]: row for row in comparison["judges"]}
    # pinned in test_prd_replay.py: claude 52/80, gpt4 50/80 consistent
    assert rows["claude"]["order_agreement"]["successes"] == 52
    assert rows["gpt4"]["order_agreement"]["successes"] == 50
    (diff,) = comparison["differences"]
    agreement = diff["order_agreement"]
    assert (diff["first"], diff["second"]) == ("claude", "gpt4")
    assert agreement["difference"] == pytest.approx(2 / 80)
    assert agreement["ci_low"] < agreement["difference"] < agreement["ci_high"]
    kappa = diff["human_kappa"]
    # human kappas pinned in test_prd_replay.py: claude 0.38732, gpt4 0.427 (72 labelled)
    assert kappa["n"] == 72
    assert kappa["difference"] == pytest.approx(
        rows["claude"]["human_kappa"]["kappa"] - rows["gpt4"]["human_kappa"]["kappa"]
    )
    # self-preference in a multi-judge file is also measured against the other judge
    gpt4 = next(r for r in reports if r["judge"] == "gpt4")
    assert gpt4["self_preference"]["excess_over_other_judges"]["n"] > 0


def test_subset_labels_and_bad_keys() -> None:
    (pair,) = [p for p in read_pairs(FIXTURE) if p.pair_id == "q1-bard-vs-claude"][:1]
    assert subset_labels(pair, "model_pair") == ["bard vs claude"]
    assert subset_labels(pair, "pair_type") == ["(none)"]
    assert subset_labels(pair, "subset_tags") == ["(none)"]
    assert subset_labels(pair, "metadata.category") == ["generic"]
    with pytest.raises(ConfigError, match="--by: unknown key 'model'"):
        parse_by(["model"])


def test_cli_study_text_json_and_html(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output, page = tmp_path / "r.json", tmp_path / "study.html"
    code = _run(
        [
            "calibrate",
            str(FIXTURE),
            "--by",
            "judge",
            "--by",
            "model_pair",
            "--human-threshold",
            "0",
            "--output",
            str(output),
            "--html",
            str(page),
        ],
        "llm-council",
        app,
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "| claude - gpt4 |" in out and "gpt4 by model_pair" in out and "too small" in out
    document = json.loads(output.read_text())
    assert document["judge_comparison"]["common_pairs"] == 80
    assert set(document["reports"][0]["subsets"]) == {"model_pair"}
    text = page.read_text()
    assert text.count("<table>") == 4 and "claude - gpt4" in text


def test_hostile_subset_names_are_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = [json.loads(line) for line in FIXTURE.read_text().splitlines()]
    hostile = "<script>alert(1)</script>\u202e|x"
    for record in records:
        record["pair_type"] = hostile
    path = tmp_path / "hostile.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    page = tmp_path / "s.html"
    args = [
        "calibrate",
        str(path),
        "--by",
        "pair_type",
        "--human-threshold",
        "0",
        "--html",
        str(page),
    ]
    assert _run(args, "llm-council", app) == 0
    assert "<script>" not in page.read_text() and "&lt;script&gt;" in page.read_text()
    out = capsys.readouterr().out
    # the bidi override is shown as a visible escape and "|" cannot open a Markdown column
    assert "\u202e" not in out and "<script>alert(1)</script>\\u202e\\|x" in out


def test_live_study_with_repetitions(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from .conftest import simulated_pair_records, write_jsonl

    records = simulated_pair_records(24, seed=8)
    for index, record in enumerate(records):
        record["subset_tags"] = ["math"] if index % 2 else ["prose", "math"]
    path = write_jsonl(tmp_path / "p.jsonl", records)
    output = tmp_path / "r.json"
    code = _run(
        [
            "calibrate",
            str(path),
            "--model",
            "simulated:unbiased",
            "--repetitions",
            "3",
            "--no-cache",
            "--by",
            "subset_tags",
            "--min-subset-n",
            "20",
            "--human-threshold",
            "-1",
            "--output",
            str(output),
        ],
        "llm-council",
        app,
    )
    assert code == 0, capsys.readouterr().err
    (report,) = json.loads(output.read_text())["reports"]
    rows = {row["subset"]: row for row in report["subsets"]["subset_tags"]}
    # every pair is tagged math; half are also prose (a pair counts in each of its tags)
    assert (rows["math"]["n"], rows["prose"]["n"]) == (24, 12)
    assert not rows["math"]["too_small"] and rows["prose"]["too_small"]
    assert rows["prose"]["grade"] is None
    stability = report["repetition_stability"]
    assert stability["repetitions_per_order"] == {"3": 48}
    assert 1 / 3 <= stability["majority_share"]["estimate"] <= 1.0
    # every order verdict in the JSON is the majority of its three repetitions
    from llm_council.calibration.outcomes import order_verdict

    for pair in report["pairs"]:
        assert pair["verdict_ab"] == order_verdict(pair["ab"])
        assert pair["verdict_ba"] == order_verdict(pair["ba"])
