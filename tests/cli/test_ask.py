from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fakes.council_server import CouncilServer
from fakes.loopback_http import ReceivedRequest, Reply, openai_completion_body
from llm_council.cli.app import main


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    captured = capsys.readouterr()
    return int(exited.value.code or 0), captured.out, captured.err


def test_ask_prints_answers_rankings_and_synthesis(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ask", "How do I reduce tail latency?", "--seed", "7")
    assert code == 0
    for heading in (
        "Stage 1: answers",
        "Stage 2: peer reviews",
        "Aggregate ranking",
        "Stage 3: synthesis",
    ):
        assert heading in out
    assert "stage1_done" in err and "duration_s" in err


def test_ask_json_has_label_to_model_with_display_indexes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_cli(capsys, "ask", "q?", "--seed", "7", "--json", "--log-level", "warning")
    result = json.loads(out)
    assert code == 0 and set(result) == {"stage1", "stage2", "stage3", "metadata"}
    labels = result["metadata"]["label_to_model"]["harsh"]
    assert labels["Response A"]["display_index"] == 0 and "model" in labels["Response A"]


def test_bad_config_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "c.toml"
    bad.write_text("[council]\nmembers = 3\n")
    code, out, err = run_cli(capsys, "ask", "q", "--config", str(bad))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"error: {bad}: field 'members'")


def test_log_json_writes_json_lines_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "ask", "q", "--seed", "1", "--json", "--log-json")
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    assert code == 0 and {line["event"] for line in lines} >= {
        "stage1_done",
        "stage2_done",
        "stage3_done",
        "session_done",
    }
    json.loads(out)


def test_console_script_is_installed() -> None:
    completed = subprocess.run(
        [str(Path(sys.executable).parent / "llm-council"), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 0 and "ask" in completed.stdout


#: markup rich would parse, a closing tag with nothing open (rich raised MarkupError on it),
#: a terminal escape that clears the screen, a bidi override
HOSTILE = "[/] arr[i] = [bold]x[/bold] \x1b[2J\u202egnp.exe\r\nsecond line\rover"


class HostileAnswers(CouncilServer):
    """A council server whose stage-1 answers and synthesis are hostile text."""

    def choose_reply(self, request: ReceivedRequest) -> Reply:
        reply = super().choose_reply(request)
        body = request.body if isinstance(request.body, dict) else {}
        prompt = str(body.get("messages", ""))
        if "<<<CANDIDATE " in prompt and "As chairman" not in prompt:
            return reply  # the reviews stay parseable
        return Reply(200, openai_completion_body(HOSTILE, str(body.get("model"))))


def test_ask_shows_hostile_model_text_literally_with_controls_escaped(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    with HostileAnswers().running() as server:
        member = f'spec = "openai:m", options = {{ base_url = "{server.base_url}" }}'
        config = tmp_path / "council.toml"
        config.write_text(
            "[council]\nmembers = [\n"
            + "".join(f'  {{ name = "[red]m{i}[/]", {member} }},\n' for i in range(3))
            + f']\nchairman = {{ name = "chair", {member} }}\n'
            + "[retry]\nmax_attempts = 1\ntimeout_s = 10\n"
        )
        code, out, err = run_cli(capsys, "ask", "q?", "--config", str(config), "--seed", "2")
    assert code == 0, err
    expected = "[/] arr[i] = [bold]x[/bold] \\u001b[2J\\u202egnp.exe"
    assert out.count(expected) == 4  # three answers and the synthesis, as written
    # the answers' own line break stays a line break; a lone CR (it would overwrite the
    # line) is escaped
    assert out.count("second line\\u000dover") == 4
    assert "\x1b" not in out and "\u202e" not in out and "\r" not in out
    # the rankings cell lists one candidate per line, not joined by escaped line feeds
    assert "\\u000a" not in out and "->[red]m1[/]: " in out
    assert out.count("[red]m0[/]") >= 2  # the member's name, in its panel and the tables


def test_ask_shows_the_chairmans_labels_and_where_the_records_went(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # issue 28: the synthesis says "led by Response A" while the tables use member names,
    # and "records_written: 25" did not say where
    store = tmp_path / "records.jsonl"
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
    code, out, _ = run_cli(capsys, "ask", "q?", "--seed", "1", "--bias-audit", "--json")
    metadata = json.loads(out)["metadata"]
    assert code == 0
    audit = metadata["bias_audit"]
    assert audit["record_store"] == str(store)
    assert audit["records_written"] == len(store.read_text().splitlines()) > 0
    monkeypatch.setenv("COLUMNS", "400")  # one line each, whatever the terminal
    code, out, _ = run_cli(capsys, "ask", "q?", "--seed", "1", "--bias-audit")
    labels = metadata["chairman_label_to_model"]
    expected = ", ".join(
        f"{label} = {labels[label]['model']}"
        for label in sorted(labels, key=lambda name: labels[name]["display_index"])
    )
    assert code == 0 and f"the chairman's labels: {expected}" in out
    assert f"{audit['records_written']} records written to {store}" in out


def test_a_store_url_is_shown_without_its_password(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    # nothing listens on port 1: the write fails, and the session says where it tried
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", "postgresql://council:hunter2@127.0.0.1:1/db")
    code, out, err = run_cli(capsys, "ask", "q?", "--seed", "1", "--bias-audit", "--json")
    audit = json.loads(out)["metadata"]["bias_audit"]
    assert code == 0 and audit["records_written"] == 0
    assert audit["record_store"] == "postgresql://council:***@127.0.0.1:1/db"
    monkeypatch.setenv("COLUMNS", "400")
    code, out, more_err = run_cli(capsys, "ask", "q?", "--seed", "1", "--bias-audit")
    assert "0 records written to postgresql://council:***@127.0.0.1:1/db" in out
    assert "hunter2" not in out + err + more_err
