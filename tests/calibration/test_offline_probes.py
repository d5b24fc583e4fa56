"""probe --emit / --replay: the probes for a judge that runs elsewhere."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_council.calibration.offline_probes import read_verdicts
from llm_council.cli.app import _run, app
from llm_council.errors import InputError

PAIRS = Path(__file__).parents[1] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"


def _answer(calls_file: Path, rule) -> list[str]:
    """An outside judge: one verdict line per emitted call."""
    lines = []
    for line in calls_file.read_text().splitlines():
        call = json.loads(line)
        lines.append(json.dumps({"call_id": call["call_id"], "winner": rule(call)}))
    return lines


def _longer_wins(call) -> str:
    return "first" if len(call["first"]) >= len(call["second"]) else "second"


def _run_offline(tmp_path: Path, rule, probes: str) -> dict:
    emit = tmp_path / "emit"
    verdicts = tmp_path / "verdicts.jsonl"
    output = tmp_path / "report.json"
    answered: list[str] = []
    for _ in range(3):
        args = [
            "probe",
            str(PAIRS),
            "--probes",
            probes,
            "--emit",
            str(emit),
            "--output",
            str(output),
        ]
        if answered:
            args += ["--replay", str(verdicts)]
        assert _run(args, "llm-council", app) == 0
        if output.exists():
            return json.loads(output.read_text())["reports"][0]
        answered += _answer(emit / "calls.jsonl", rule)
        verdicts.write_text("\n".join(answered) + "\n")
    raise AssertionError("no report after three rounds")


def test_a_length_loving_judge_is_caught_offline(tmp_path):
    report = _run_offline(tmp_path, _longer_wins, "authority,padding,distraction")
    probes = report["probes"]
    # padding adds words to one answer: where the lengths were close, the verdict follows it
    assert probes["padding"]["pairs"] == 80
    assert probes["padding"]["robustness"]["rate"] < 1.0
    # authority is planted on the baseline loser (round 2) and makes it the longer answer
    assert probes["authority"]["pairs"] > 0 and probes["authority"]["failed"]
    assert report["pairs_evaluated"] == 80


def test_an_always_first_judge_is_a_degenerate_case_not_a_crash(tmp_path):
    report = _run_offline(tmp_path, lambda call: "first", "padding")
    # every pair flips with the order: consolidated ties, nothing to prefer
    assert report["position_bias"]["flip_rate"] == 1.0
    assert report["probes"]["padding"]["robustness"]["rate"] == 1.0


def test_replay_with_missing_calls_says_to_emit(tmp_path, capsys):
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text("")
    assert _run(["probe", str(PAIRS), "--replay", str(verdicts)], "llm-council", app) == 2
    assert "run with --emit DIR" in capsys.readouterr().err


def test_verdicts_for_other_texts_do_not_apply(tmp_path):
    emit = tmp_path / "e"
    assert _run(["probe", str(PAIRS), "--probes", "padding", "--emit", str(emit)],
                "llm-council", app) == 0  # fmt: skip
    answered = _answer(emit / "calls.jsonl", _longer_wins)
    # a verdict under a made-up id is simply unused; the real ids are still missing
    forged = [json.dumps({"call_id": "0" * 32, "winner": "first"})]
    (tmp_path / "v.jsonl").write_text("\n".join(forged + answered[:10]) + "\n")
    assert _run(["probe", str(PAIRS), "--probes", "padding", "--replay",
                 str(tmp_path / "v.jsonl"), "--emit", str(emit)], "llm-council", app) == 0  # fmt: skip
    assert len((emit / "calls.jsonl").read_text().splitlines()) == len(answered) - 10


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", "2: not a JSON object"),
        ('{"winner": "first"}', "needs a string 'call_id'"),
        ('{"call_id": "x", "winner": "A"}', "must be one of first, second, tie"),
        ('{"call_id": "x"}', "needs 'winner' or 'reply'"),
        ('{"call_id": "x", "reply": "I cannot decide"}', "no verdict line"),
        ('{"call_id": "a", "winner": "second"}', "two different verdicts"),
        ("[" * 100000, "not a JSON object"),
    ],
)
def test_bad_verdict_lines_are_one_line_errors(tmp_path, line, message):
    path = tmp_path / "v.jsonl"
    path.write_text('{"call_id": "a", "winner": "first"}\n' + line + "\n")
    with pytest.raises(InputError, match=message):
        read_verdicts(path)
    with pytest.raises(InputError, match="not a regular file"):
        read_verdicts(tmp_path)
