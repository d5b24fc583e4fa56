"""``llm-council bias-watch``: exit 1 when confirmed, 0 when not, 2 on bad input."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.monitor_state import state_path
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record
from llm_council.cli.app import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402


def _store(tmp_path: Path, n: int, **spec: object) -> Path:
    path = tmp_path / "records.jsonl"
    council = CouncilSpec(n_members=4, noise_sds=[0.5, 0.8, 1.1, 1.5], **spec)  # type: ignore[arg-type]
    for session in generate_sessions(council, n, seed=3):
        append_records(
            path, [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        )
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(args)
    captured = capsys.readouterr()
    return int(caught.value.code or 0), captured.out, captured.err


def test_a_harsh_judge_is_confirmed_and_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path, 60, leniency=[-2.0, 0, 0, 0])
    code, out, _ = _run(["bias-watch", "--store", str(store)], capsys)
    assert code == 1
    assert "judge-0: confirmed leniency (harsh)" in out and "judge-1: watching" in out
    code, out, _ = _run(["bias-watch", "--store", str(store), "--json"], capsys)
    answer = json.loads(out)
    assert code == 1 and answer["confirmed"] == ["judge-0"]
    low, high = answer["reviewers"]["judge-0"]["biases"]["leniency"]["bounds"]
    assert low < high < -0.5  # the whole confidence sequence lies beyond delta0


def test_a_wide_practical_null_confirms_nothing_and_leaves_the_state_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path, 60, leniency=[-2.0, 0, 0, 0])
    _run(["bias-watch", "--store", str(store)], capsys)
    saved = state_path(store).read_bytes()
    code, out, _ = _run(["bias-watch", "--store", str(store), "--delta0", "3"], capsys)
    assert code == 0 and "confirmed" not in out.split("\n", 1)[1]
    assert state_path(store).read_bytes() == saved


def test_honest_judges_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["bias-watch", "--store", str(_store(tmp_path, 20))], capsys)
    assert code == 0 and out.count("watching") == 4


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--alpha", "1.5"], "alpha"),
        (["--alpha", "0"], "alpha"),
        (["--delta0", "-1"], "delta0"),
        (["--delta0", "nan"], "delta0"),
        (["--delta0", "inf"], "delta0"),
    ],
)
def test_bad_options_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    store = _store(tmp_path, 2)
    code, out, err = _run(["bias-watch", "--store", str(store), *args], capsys)
    assert code == 2 and out == "" and message in err and len(err.strip().splitlines()) == 1


def test_bad_stores_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(["bias-watch", "--store", str(tmp_path / "none.jsonl")], capsys)
    assert code == 2 and "none.jsonl" in err and "no such record store" in err
    code, _, err = _run(["bias-watch", "--store", str(tmp_path)], capsys)
    assert code == 2 and "regular file" in err
    url = "postgresql://user:hunter2@127.0.0.1:9/db"  # nothing listens on port 9
    code, _, err = _run(["bias-watch", "--store", url], capsys)
    assert code == 2 and "hunter2" not in err and "cannot read the record store" in err


def test_a_file_that_is_not_a_store_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    garbage = tmp_path / "notes.txt"
    garbage.write_text('\nshopping list\n{"not": "a record"}\n')
    code, out, err = _run(["bias-watch", "--store", str(garbage)], capsys)
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()]  # one line
    assert f"{garbage}:2:" in err and "not a bias-audit record store" in err
    # binary, no newline at all: still an error, not "0 sessions"
    binary = tmp_path / "image.bin"
    binary.write_bytes(b"\x89PNG\x00\x01\x02")
    code, _, err = _run(["bias-watch", "--store", str(binary)], capsys)
    assert code == 2 and "image.bin" in err and "no complete record line" in err
    # an empty file is an empty store
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    code, out, _ = _run(["bias-watch", "--store", str(empty)], capsys)
    assert code == 0 and "0 sessions" in out


def test_lines_that_are_not_records_are_a_warning_naming_the_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store(tmp_path, 4)
    n_lines = len(store.read_bytes().splitlines())
    with store.open("ab") as handle:
        handle.write(b"garbage\n\n[1, 2]\n")
    code, out, err = _run(["bias-watch", "--store", str(store)], capsys)
    assert code == 0 and "4 sessions" in out
    assert f"warning: {store}: 2 lines are not bias-audit records" in err
    assert f"(first: line {n_lines + 1})" in err
    # the count is kept in the state: a second look (reading only the new tail) agrees
    code, _, err = _run(["bias-watch", "--store", str(store)], capsys)
    assert f"(first: line {n_lines + 1})" in err


def test_hostile_names_reach_the_terminal_escaped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "records.jsonl"
    council = CouncilSpec(n_members=3, leniency=[-3.0, 0, 0])
    rename = {"judge-0": "evil\x1b]0;pwned\x07", "judge-1": "b", "judge-2": "c"}
    for session in generate_sessions(council, 60, seed=4):
        records = [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        append_records(
            path,
            [
                r.model_copy(
                    update={"reviewer_id": rename[r.reviewer_id], "model_id": rename[r.model_id]}
                )
                for r in records
            ],
        )
    code, out, _ = _run(["bias-watch", "--store", str(path)], capsys)
    assert code == 1 and "\x1b" not in out and "\x07" not in out
