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
    code, out, err = run_cli(
        capsys, "ask", "How do I reduce tail latency?", "--seed", "7", "--log-level", "info"
    )
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
    code, out, err = run_cli(
        capsys, "ask", "q", "--seed", "1", "--json", "--log-json", "--log-level", "info"
    )
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


def test_ask_by_default_is_quiet_on_stderr_and_says_the_council_is_simulated(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # issue 37 C.5: four info lines on every ask; C.2: the simulated fallback was silent
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.delenv("LLM_COUNCIL_CONFIG", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    code, out, err = run_cli(capsys, "ask", "q?", "--seed", "7")
    assert code == 0 and "Stage 3: synthesis" in out
    assert err.splitlines() == [
        "note: no --config, LLM_COUNCIL_CONFIG or provider API key: this is the SIMULATED "
        "council (config/council.toml), not real models"
    ]
    assert "[simulated author=" not in out and "quality=" not in out  # the judges' tag
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:11434/v1")
    code, _, err = run_cli(capsys, "ask", "q?", "--seed", "7")
    assert code == 0 and "SIMULATED" in err
    assert "--config config/openai_compatible_council.toml" in err
    assert "localhost:11434" not in err  # the URL may hold credentials: never echoed
    code, _, err = run_cli(capsys, "ask", "q?", "--seed", "7", "--log-json")
    (event,) = [json.loads(line) for line in err.splitlines()]
    assert event["event"] == "simulated_council" and "openai_compatible" in event["hint"]


def test_the_openai_compatible_council_file_runs_against_a_local_server(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """README's command for Ollama / vLLM, against a loopback OpenAI-compatible server."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # a local server checks no key
    config = Path(__file__).resolve().parents[2] / "config" / "openai_compatible_council.toml"
    with CouncilServer().running() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, out, err = run_cli(capsys, "ask", "q?", "--config", str(config), "--json")
    assert code == 0, err
    result = json.loads(out)
    assert [a["spec"] for a in result["stage1"]] == [
        "openai:llama3.2:3b",
        "openai:qwen2.5:3b",
        "openai:gemma2:2b",
    ]
    assert all(a["text"].startswith("Answer by ") for a in result["stage1"])
    assert [r["parse_status"] for r in result["stage2"]] == ["json"] * 3
    assert result["stage3"]["text"] == "Synthesis by llama3.2:3b."
    assert server.kinds["answer"] == 3 and server.kinds["synthesis"] == 1
    assert "SIMULATED" not in err and "simulated" not in out


def test_zero_records_written_says_why() -> None:
    """issue 37 A.11: "0 records written" without a reason: the store's error is shown."""
    import asyncio

    from llm_council import run_full_council
    from llm_council.cli.ask import records_note

    result = asyncio.run(run_full_council("q?", seed=1, middleware=[]))
    audit: dict[str, object] = {
        "records_written": 0,
        "record_store": "/srv/store.jsonl",
        "record_store_error": "/srv/store.jsonl: [Errno 28] No space left on device",
    }
    assert records_note(audit, result) == (
        "; 0 records written to /srv/store.jsonl: the store failed: "
        "/srv/store.jsonl: [Errno 28] No space left on device"
    )
    assert records_note({"records_written": 16, "record_store": "s"}, result) == (
        "; 16 records written to s"
    )


def test_ask_says_when_no_review_could_be_read(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """issue 37 C.3: every review unreadable still wrote records and said nothing."""
    config = tmp_path / "council.toml"
    member = 'spec = "simulated:balanced", options = { fail_tasks = ["review"] }'
    config.write_text(
        "[council]\nmembers = [\n"
        + "".join(f'  {{ name = "m{i}", {member} }},\n' for i in range(3))
        + ']\nchairman = { name = "chair", spec = "simulated:balanced" }\n'
        + "[retry]\nmax_attempts = 1\n"
    )
    monkeypatch.setenv("LLM_COUNCIL_BIAS_STORE", str(tmp_path / "records.jsonl"))
    monkeypatch.setenv("COLUMNS", "400")
    code, out, err = run_cli(capsys, "ask", "q?", "--config", str(config), "--bias-audit")
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("bias audit:"))
    assert "overall risk not_tested; 9 records written to " in line
    assert "; no review could be read (3: missing), so nothing was tested" in line


def test_tie_notes_are_numbered_in_the_table_and_printed_once_below() -> None:
    # issue 37 C.5: a tie note in the cell wrapped into a seven-line row
    from types import SimpleNamespace

    from rich.console import Console

    from llm_council.cli.ask import _aggregate_table

    note = "tied with b on mean rank 1.50 and Borda 3; ordered by mean score (7.20 vs 7.10)"
    rows = [
        {"place": 1, "model": "a", "mean_rank": 1.5, "borda_points": 3, "mean_score": 7.2,
         "rank_votes": 2, "tie_note": note},
        {"place": 2, "model": "b", "mean_rank": 1.5, "borda_points": 3, "mean_score": 7.1,
         "rank_votes": 2, "tie_note": note},
        {"place": 3, "model": "c", "mean_rank": 3.0, "borda_points": 0, "mean_score": None,
         "rank_votes": 2, "tie_note": None},
    ]  # fmt: skip
    table, notes = _aggregate_table(SimpleNamespace(metadata={"aggregate_rankings": rows}))
    assert notes == [note]
    console = Console(width=100, record=True)
    console.print(table)
    text = console.export_text()
    assert text.count("tie 1") == 2 and "ordered by mean score" not in text
    # title, top border, header, rule, one line per member, bottom border: no row wraps
    assert len(text.strip("\n").splitlines()) == 5 + len(rows)
