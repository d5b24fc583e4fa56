"""convert, then calibrate the converted file: figures derived by hand from the fixtures.

Hand derivation (tests/data/judgment_logs/fastchat_pair.jsonl). Our ``a`` is the
alphabetically first model; game 1 shows ``model_1`` first, so it is order ``ab`` when
``model_1`` is ``a`` and ``ba`` otherwise; winners are already model_1/model_2.

judge gpt-4 (7 pairs):
  q81 t1  m1=vicuna(b) m2=alpaca(a)  g1=model_1 -> ba:b   g2=model_1 -> ab:b   agree b
  q81 t2  same models                g1=model_1 -> ba:b   g2=model_2 -> ab:a   flip
          (ab: a shown first won, ba: b shown first won -> favours first)
  q82 t1  m1=gpt-3.5(a) m2=llama(b)  ab:tie ba:tie                             agree tie
  q83 t1  ab:a, ba 'error' dropped                      -> unevaluated (missing order ba)
  q84 t1  m1=alpaca(a) m2=gpt-3.5(b) ab:b (second shown) ba:a (second shown)   flip, favours second
  q85 t1  both games 'error'                            -> unevaluated (missing both orders)
  q86 t1  ab:b ba:b                                                            agree b
  evaluated 5, agreement 3/5; flips 1 first / 1 second.
  kappa between orders: ab=(b,a,tie,b,b) ba=(b,b,tie,a,b): po=3/5;
  marginals ab a1 b3 tie1, ba a1 b3 tie1: pe=(1+9+1)/25=11/25; kappa=(15/25-11/25)/(14/25)=2/7.
judge claude-v1 (3 pairs):
  q81 t1 ab:a ba:b (both first-shown wins -> favours first); q82 t1 m1=llama(b) m2=gpt-3.5(a):
  ab:a ba:a agree; q84 t1 ab:tie ba:b (ba: b shown first won -> favours first).
  agreement 1/3; ab=(a,a,tie) ba=(b,a,b): po=1/3, pe=(a:2*1)/9=2/9, kappa=(1/9)/(7/9)=1/7.

With tests/data/judgment_logs/mtbench_human.jsonl (a = alphabetically first model):
  q81 t1 votes b,b,a -> b (agreement 2/3); q81 t2 votes b,tie -> no majority;
  q82 t1 tie (bothbad) -> tie; q84 t1 votes b,b -> b (unanimous); q99 matches no judge pair.
  Consolidated verdict = common verdict if the orders agree, else tie (MT-Bench).
  gpt-4 on labelled evaluated pairs: q81t1 b=b, q82 tie=tie, q84 tie!=b: accuracy 2/3;
  kappa judge (b,tie,tie) vs human (b,tie,b): po=2/3, pe=(1*2+2*1)/9=4/9, kappa=(2/9)/(5/9)=0.4.
  claude-v1: (tie,a,tie) vs (b,tie,b): accuracy 0/3, po=0, pe=2/9, kappa=-(2/9)/(7/9)=-2/7.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_council.cli.app import _run, app

LOGS = Path(__file__).parents[2] / "data" / "judgment_logs"
FASTCHAT = LOGS / "fastchat_pair.jsonl"
HUMAN = LOGS / "mtbench_human.jsonl"
MAPPED = LOGS / "mapped_verdicts.csv"
CSV_MAP = (
    "id=pair_id,judge=grader,order=shown_first:original=ab:swapped=ba,"
    "winner=verdict:A=first:B=second:tie=tie:ERR=error,"
    "prompt=question,response_a=answer_1,response_b=answer_2,human_label=gold:A=a:B=b:tie=tie"
)


def _reports(path: Path) -> dict[str, dict]:
    return {report["judge"]: report for report in json.loads(path.read_text())["reports"]}


def test_convert_then_replay_gives_the_hand_derived_figures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = tmp_path / "pairs.jsonl"
    args = ["convert", str(FASTCHAT), "--input-format", "fastchat-pair", "--out", str(pairs)]
    assert _run(args, "llm-council", app) == 0
    summary = capsys.readouterr().out
    assert "rows read: 10" in summary and "pairs written: 10" in summary
    assert "'error' games dropped (unevaluated, not ties): 3" in summary
    assert "judgments kept: 17" in summary  # 20 games - 3 errors

    report_path = tmp_path / "report.json"
    assert _run(["calibrate", str(pairs), "--output", str(report_path)], "llm-council", app) == 0
    reports = _reports(report_path)
    gpt4, claude = reports["gpt-4"], reports["claude-v1"]
    assert (gpt4["pairs_total"], gpt4["pairs_evaluated"]) == (7, 5)
    reasons = {item["id"]: item["reason"] for item in gpt4["unevaluated"]}
    assert reasons == {
        "q83-t1-gpt-3.5-turbo-vs-vicuna-13b": "missing order ba",
        "q85-t1-alpaca-13b-vs-llama-13b": "missing both orders",
    }
    assert gpt4["consistency"]["percent_agreement"] == pytest.approx(3 / 5)
    assert gpt4["consistency"]["kappa"] == pytest.approx(2 / 7)
    bias = gpt4["position_bias"]
    assert (bias["flips_favoring_first"], bias["flips_favoring_second"]) == (1, 1)
    assert claude["pairs_evaluated"] == 3
    assert claude["consistency"]["percent_agreement"] == pytest.approx(1 / 3)
    assert claude["consistency"]["kappa"] == pytest.approx(1 / 7)
    assert claude["position_bias"]["flips_favoring_first"] == 2
    assert gpt4["human_agreement"]["pairs"] == 0  # no human file given


def test_calibrate_input_format_reads_the_log_directly(tmp_path: Path) -> None:
    converted, direct = tmp_path / "converted.json", tmp_path / "direct.json"
    pairs = tmp_path / "pairs.jsonl"
    convert = ["convert", str(FASTCHAT), "--input-format", "fastchat-pair", "--out", str(pairs)]
    assert _run(convert, "llm-council", app) == 0
    assert _run(["calibrate", str(pairs), "--output", str(converted)], "llm-council", app) == 0
    # the shape the issue quotes: calibrate --input-format NAME FILE
    direct_args = ["calibrate", "--input-format", "fastchat-pair", str(FASTCHAT)]
    assert _run([*direct_args, "--output", str(direct)], "llm-council", app) == 0
    assert json.loads(converted.read_text()) == json.loads(direct.read_text())


def test_human_judgments_attach_majority_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_path = tmp_path / "report.json"
    args = [
        "calibrate",
        str(FASTCHAT),
        "--input-format",
        "fastchat-pair",
        "--human",
        str(HUMAN),
        "--output",
        str(report_path),
    ]
    # both judges' human kappa (0.4 and -2/7) is below the default 0.6: exit 3
    assert _run(args, "llm-council", app) == 3
    reports = _reports(report_path)
    gpt4, claude = reports["gpt-4"]["human_agreement"], reports["claude-v1"]["human_agreement"]
    assert gpt4["pairs"] == 3 and gpt4["accuracy"]["rate"] == pytest.approx(2 / 3)
    assert gpt4["kappa"] == pytest.approx(0.4)
    assert claude["pairs"] == 3 and claude["accuracy"]["rate"] == 0.0
    assert claude["kappa"] == pytest.approx(-2 / 7)

    out = tmp_path / "pairs.jsonl"
    convert = ["convert", str(FASTCHAT), "--input-format", "fastchat-pair", "--human", str(HUMAN),
               "--out", str(out)]  # fmt: skip
    capsys.readouterr()
    assert _run(convert, "llm-council", app) == 0
    summary = capsys.readouterr().out
    assert "human pairs with tied annotators (no label): 1" in summary
    assert "with the majority (2+ annotators): 0.833" in summary  # (2/3 + 1) / 2
    assert "judge pairs given a human label: 6" in summary
    assert "human pairs matching no judge pair: 1" in summary
    records = {(r["judge"], r["id"]): r for r in map(json.loads, out.read_text().splitlines())}
    q81 = records[("gpt-4", "q81-t1-alpaca-13b-vs-vicuna-13b")]
    assert q81["human_label"] == "b"
    assert q81["metadata"]["human_agreement"] == pytest.approx(2 / 3)
    assert [vote["annotator"] for vote in q81["human_labels"]] == [
        "author_0", "author_1", "expert_0"
    ]  # fmt: skip
    tied = records[("gpt-4", "q81-t2-alpaca-13b-vs-vicuna-13b")]
    assert "human_label" not in tied and tied["metadata"]["human_agreement"] is None


def test_mapped_csv_with_display_slot_verdicts(tmp_path: Path) -> None:
    """p1: ab A(first)=a, ba B(second)=a -> agree. p2: ab A=a, ba A(first)=b -> flip, first.
    p3: ba 'ERR' dropped -> unevaluated. p4: ab B=b, ba A=b -> agree. Agreement 2/3.
    Humans a, b, b on p1, p2, p4; consolidated a, tie, b -> accuracy 2/3."""
    report_path = tmp_path / "report.json"
    args = ["calibrate", str(MAPPED), "--input-format", "mapped", "--map", CSV_MAP,
            "--output", str(report_path), "--human-threshold", "0"]  # fmt: skip
    # exit 3: 3 human labels are too few to trust the judge (fewer than 10 labelled pairs)
    assert _run(args, "llm-council", app) == 3
    report = _reports(report_path)["judge-x"]
    assert (report["pairs_total"], report["pairs_evaluated"]) == (4, 3)
    assert report["consistency"]["percent_agreement"] == pytest.approx(2 / 3)
    assert report["position_bias"]["flips_favoring_first"] == 1
    assert report["human_agreement"]["accuracy"]["rate"] == pytest.approx(2 / 3)


@pytest.mark.parametrize(
    ("log", "fmt", "where", "field"),
    [
        ("fastchat_pair_malformed.jsonl", "fastchat-pair", ":3:", "'g2_winner'"),
        ("mtbench_human_malformed.jsonl", "mtbench-human", ":2:", "'winner'"),
    ],
)
def test_malformed_record_is_one_line_naming_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], log: str, fmt: str, where: str, field: str
) -> None:
    out = tmp_path / "pairs.jsonl"
    out.write_text("previous content\n")
    args = ["convert", str(LOGS / log), "--input-format", fmt, "--out", str(out)]
    assert _run(args, "llm-council", app) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert f"{log}{where}" in error and field in error
    assert out.read_text() == "previous content\n"  # nothing half-written
    assert list(tmp_path.iterdir()) == [out]  # no temporary file left behind


def test_malformed_mapped_row_names_csv_line_and_column(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = LOGS / "mapped_verdicts_malformed.csv"
    out = tmp_path / "pairs.jsonl"
    args = ["convert", str(log), "--input-format", "mapped", "--map", CSV_MAP, "--out", str(out)]
    assert _run(args, "llm-council", app) == 2
    error = capsys.readouterr().err.strip()
    assert f"{log}:3: column 'verdict': value 'maybe' is not in the --map winner values" in error
    assert not out.exists()


def test_self_preference_runs_on_model_names_without_answer_text(tmp_path: Path) -> None:
    """gpt-4 judging gpt-4 (a, sorted first) against vicuna-13b on three questions:
    q1 both games gpt-4 -> own win; q2 g1 gpt-4, g2 vicuna -> flip, consolidated tie;
    q3 both vicuna -> own loss. Own family decisive: 1 win of 2."""
    log = tmp_path / "gpt-4_pair.jsonl"
    games = {1: ("model_1", "model_1"), 2: ("model_1", "model_2"), 3: ("model_2", "model_2")}
    log.write_text(
        "".join(
            json.dumps(
                {
                    "question_id": q,
                    "model_1": "gpt-4",
                    "model_2": "vicuna-13b",
                    "g1_winner": g1,
                    "g2_winner": g2,
                    "judge": ["gpt-4", "pair-v2"],
                    "turn": 1,
                }  # fmt: skip
            )
            + "\n"
            for q, (g1, g2) in games.items()
        )
    )
    report_path = tmp_path / "report.json"
    args = ["calibrate", "--input-format", "fastchat-pair", str(log), "--output", str(report_path)]
    assert _run(args, "llm-council", app) == 0
    own = _reports(report_path)["gpt-4"]["self_preference"]
    assert (own["pairs_with_own_answer"], own["own_wins"], own["own_losses"], own["ties"]) == (
        3, 1, 1, 1
    )  # fmt: skip
