"""Secrets and privacy: canary keys, hash secret, query and answer never leak.

The CLI runs in a subprocess with canary values in every secret variable. Two members
talk to a loopback fake that fails with errors *echoing the key* (as real APIs do:
"Incorrect API key provided: sk-..."), the chairman fails the same way, and one member
answers with a canary answer. Nothing the CLI prints (answers aside: showing them is
the point of ``ask``), no log line (console or JSON), no record and no bias report may
contain a secret; records and reports may not contain the query or an answer either.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import os
import secrets
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest

SECRETS = {
    "OPENAI_API_KEY": f"sk-canary-openai-{secrets.token_hex(8)}",
    "ANTHROPIC_API_KEY": f"sk-ant-canary-{secrets.token_hex(8)}",
    "GOOGLE_API_KEY": f"AIza-canary-google-{secrets.token_hex(8)}",
    "GEMINI_API_KEY": f"canary-gemini-{secrets.token_hex(8)}",
    "LLM_COUNCIL_HASH_SECRET": f"canary-hash-secret-{secrets.token_hex(8)}",
}
CANARY_QUERY = f"canary-query-{secrets.token_hex(6)}: how should I rotate my keys?"
CANARY_ANSWER = f"canary-answer-{secrets.token_hex(6)} rotate them every 90 days."


def _cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    code = "import sys; from llm_council.cli.app import main; main(sys.argv[1:])"
    return subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120
    )


def _environment(store: Path, **extra: str) -> dict[str, str]:
    keep = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV")
    env = {name: os.environ[name] for name in keep if name in os.environ}
    env.update(SECRETS)
    env.update(CI="true", COLUMNS="200", LLM_COUNCIL_BIAS_STORE=str(store), **extra)
    return env


def _leaky_error(key: str) -> dict[str, Any]:
    return {
        "error": {
            "message": f"Incorrect API key provided: {key}. Find yours at example.com.",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }


def _config(tmp_path: Path, fake: Any, *, all_fail: bool = False) -> Path:
    openai_options = f'options = {{ base_url = "{fake.base_url}" }}'
    anthropic_options = f'options = {{ base_url = "{fake.root_url}" }}'
    members = [
        f'{{ name = "leaky-openai", spec = "openai:leaky-openai", {openai_options} }}',
        f'{{ name = "leaky-anthropic", spec = "anthropic:leaky-anthropic", {anthropic_options} }}',
        f'{{ name = "leaky-google", spec = "google:leaky-google", {anthropic_options} }}',
    ]
    if not all_fail:
        members += [
            '{ name = "sim1", spec = "simulated:unbiased" }',
            '{ name = "sim2", spec = "simulated:harsh" }',
            f'{{ name = "quoter", spec = "openai:quoter", {openai_options} }}',
        ]
    path = tmp_path / ("all_fail.toml" if all_fail else "council.toml")
    path.write_text(
        "[council]\nmembers = [\n  " + ",\n  ".join(members) + "\n]\n"
        f'chairman = {{ name = "chair", spec = "openai:leaky-chair", {openai_options} }}\n'
        "[retry]\nmax_attempts = 2\ntimeout_s = 10\ninitial_backoff_s = 0.01\nmax_backoff_s = 0.01\n"
    )
    return path


def _script_leaks(fake: Any, sessions: int) -> None:
    for _ in range(sessions):
        fake.script(
            "leaky-openai", {"status": 401, "body": _leaky_error(SECRETS["OPENAI_API_KEY"])}
        )
        anthropic_body = {
            "type": "error",
            "error": {
                "type": "authentication_error",
                "message": f"invalid x-api-key: {SECRETS['ANTHROPIC_API_KEY']}",
            },
        }
        fake.script("leaky-anthropic", {"status": 401, "body": anthropic_body})
        google_body = {
            "error": {
                "code": 400,
                "message": f"API key not valid: {SECRETS['GOOGLE_API_KEY']}",
                "status": "INVALID_ARGUMENT",
            }
        }
        fake.script("leaky-google", {"status": 400, "body": google_body})
        fake.script(
            "leaky-chair", *[{"status": 500, "body": _leaky_error(SECRETS["OPENAI_API_KEY"])}] * 2
        )
        fake.script("quoter", {"text": CANARY_ANSWER}, "sensible")


def _assert_no_secret(text: str, where: str) -> None:
    for name, value in SECRETS.items():
        assert value not in text, f"{name} leaked into {where}"
        assert value[6:] not in text, f"part of {name} leaked into {where}"


@pytest.fixture(scope="module")
def audited_run(
    tmp_path_factory: pytest.TempPathFactory, module_openai_fake: Any
) -> dict[str, Any]:
    """Two audited sessions: the CLI in a subprocess (--json, JSON logs), then in-process
    (rich console output, console logs) to keep the suite fast."""
    tmp_path = tmp_path_factory.mktemp("secrets")
    store = tmp_path / "records.jsonl"
    config = _config(tmp_path, module_openai_fake)
    _script_leaks(module_openai_fake, sessions=2)
    env = _environment(store, LLM_COUNCIL_BIAS_AUDIT="true", LLM_COUNCIL_QUERY_HASH="true")
    ask = ("ask", CANARY_QUERY, "--config", str(config), "--log-level", "debug")
    as_json = _cli(*ask, "--json", "--log-json", "--seed", "1", env=env)
    out, err = io.StringIO(), io.StringIO()
    with pytest.MonkeyPatch.context() as patch, redirect_stdout(out), redirect_stderr(err):
        for name in (
            "LLM_COUNCIL_BIAS_AUDIT",
            "LLM_COUNCIL_QUERY_HASH",
            "LLM_COUNCIL_BIAS_STORE",
            *SECRETS,
        ):
            patch.setenv(name, env[name])
        code = _in_process_cli(*ask, "--seed", "2")
    console = subprocess.CompletedProcess(ask, code, out.getvalue(), err.getvalue())
    return {"store": store, "env": env, "as_json": as_json, "console": console}


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _set_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def _in_process_cli(*args: str) -> int:
    from llm_council.cli.app import main

    try:
        main(list(args))
    except SystemExit as exit_:
        return int(exit_.code or 0)
    raise AssertionError("main() did not exit")


def test_cli_output_and_logs_never_show_a_secret(audited_run: dict[str, Any]) -> None:
    as_json, console = audited_run["as_json"], audited_run["console"]
    assert as_json.returncode == 0, as_json.stderr[-2000:]
    assert console.returncode == 0, console.stderr[-2000:]
    for run, name in ((as_json, "ask --json --log-json"), (console, "ask (console)")):
        _assert_no_secret(run.stdout, f"stdout of {name}")
        _assert_no_secret(run.stderr, f"stderr of {name}")
        assert "Traceback" not in run.stderr
    # the failure paths really ran: the servers' messages echoed the keys, and were redacted
    metadata = json.loads(as_json.stdout)["metadata"]
    errors = {f["member"]: f["error"] for f in metadata["degraded"]}
    assert set(errors) == {"leaky-openai", "leaky-anthropic", "leaky-google", "chair"}
    assert "HTTP error 401: Incorrect API key provided: [redacted]" in errors["leaky-openai"]
    assert all("[redacted]" in errors[m] for m in ("leaky-anthropic", "leaky-google", "chair"))
    not_json = [line for line in as_json.stderr.splitlines() if line.strip() and not _is_json(line)]
    assert not_json == []  # --log-json: every stderr line is a JSON log event
    assert "stage1_done" in as_json.stderr and "stage1_done" in console.stderr
    assert CANARY_ANSWER in console.stdout  # the answer is shown to the user, as it should be


def test_records_hold_no_secret_query_or_answer_and_hash_with_hmac(
    audited_run: dict[str, Any],
) -> None:
    store_text = audited_run["store"].read_text(encoding="utf-8")
    records = [json.loads(line) for line in store_text.splitlines()]
    assert len(records) == 2 * 3 * 3  # two sessions, three reviewers, three answers each
    _assert_no_secret(store_text, "the bias records")
    assert CANARY_QUERY not in store_text and "canary-query" not in store_text
    assert CANARY_ANSWER not in store_text and "canary-answer" not in store_text
    secret = SECRETS["LLM_COUNCIL_HASH_SECRET"].encode()
    keyed = "hmac-sha256:" + hmac.new(secret, CANARY_QUERY.encode(), hashlib.sha256).hexdigest()
    assert {r["query_hash"] for r in records} == {keyed}
    assert hashlib.sha256(CANARY_QUERY.encode()).hexdigest() not in store_text  # not a plain hash


@pytest.mark.parametrize("output_format", ["text", "json", "csv", "html"])
def test_bias_report_holds_no_secret_query_or_answer(
    audited_run: dict[str, Any],
    output_format: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _set_secrets(monkeypatch)
    out = tmp_path / f"report.{output_format}"
    code = _in_process_cli(
        "bias-report",
        "--store",
        str(audited_run["store"]),
        "--format",
        output_format,
        "--out",
        str(out),
        "--bootstrap",
        "20",
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err[-2000:]
    text = out.read_text(encoding="utf-8") + captured.out + captured.err
    assert "quoter" in text  # the report is about these sessions
    _assert_no_secret(text, f"the {output_format} bias report")
    assert "canary-query" not in text and "canary-answer" not in text


def test_a_fatal_error_message_shows_no_secret(
    tmp_path: Path,
    openai_fake: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _set_secrets(monkeypatch)
    _script_leaks(openai_fake, sessions=1)
    config = _config(tmp_path, openai_fake, all_fail=True)
    code = _in_process_cli(
        "ask", CANARY_QUERY, "--config", str(config), "--log-json", "--log-level", "debug"
    )
    captured = capsys.readouterr()
    assert code == 1
    (error_line,) = [line for line in captured.err.splitlines() if line.startswith("error:")]
    assert error_line.startswith("error: every council member failed to answer: leaky-openai: ")
    assert "[redacted]" in error_line
    _assert_no_secret(captured.out + captured.err, "the fatal error output")
    assert "Traceback" not in captured.err


def test_hashing_on_without_a_secret_is_refused_without_writing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio

    from llm_council import run_full_council
    from llm_council.bias_audit.records.jsonl_store import store_path
    from llm_council.errors import ConfigError

    monkeypatch.setenv("LLM_COUNCIL_BIAS_AUDIT", "true")
    monkeypatch.setenv("LLM_COUNCIL_QUERY_HASH", "true")
    with pytest.raises(ConfigError, match="LLM_COUNCIL_HASH_SECRET") as refused:
        asyncio.run(run_full_council(CANARY_QUERY, seed=1))
    assert CANARY_QUERY not in str(refused.value)
    assert not store_path().exists()


def test_a_plain_hash_of_a_short_query_is_reversed_by_a_dictionary_but_the_hmac_is_not() -> None:
    """Why records use HMAC-SHA256 with a secret (ADR 0014): a demonstration, in milliseconds."""
    from llm_council.bias_audit.records.query_hash import hmac_query_hash

    verbs = (
        "rotate",
        "store",
        "hide",
        "share",
        "reset",
        "encrypt",
        "revoke",
        "find",
        "leak",
        "check",
    )
    things = ("keys", "password", "api key", "ssh key", "tokens", "secrets", "salary", "diagnosis")
    owners = ("my", "our", "the", "a", "his", "her")
    guesses = [f"how do I {v} {o} {t}?" for v in verbs for o in owners for t in things] + [
        f"is {w} safe?" for w in ("hunter2", "password1", "letmein", "qwerty", "123456")
    ]
    query = "how do I revoke my ssh key?"
    plain = {hashlib.sha256(guess.encode()).hexdigest(): guess for guess in guesses}
    assert plain[hashlib.sha256(query.encode()).hexdigest()] == query  # reversed by a lookup
    keyed = hmac_query_hash(query, SECRETS["LLM_COUNCIL_HASH_SECRET"]).removeprefix("hmac-sha256:")
    assert keyed not in plain
    # without the secret, guessing the query does not help: every guess needs a guess of the key too
    wrong_keys = ("", "secret", "llm-council", "changeme", SECRETS["LLM_COUNCIL_HASH_SECRET"][:-1])
    attempts = {
        hmac_query_hash(g, k).removeprefix("hmac-sha256:") for g in guesses for k in wrong_keys
    }
    assert keyed not in attempts


@pytest.mark.parametrize("json_logs", [True, False])
def test_sdk_log_records_are_redacted_and_rendered_like_ours(
    json_logs: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The SDKs log through stdlib logging; those lines get the same redaction and format."""
    import logging

    from llm_council.infra.log_setup import configure_logging

    _set_secrets(monkeypatch)
    configure_logging(json_logs=json_logs, level="debug")
    logging.getLogger("openai._base_client").warning(
        "retrying with key %s", SECRETS["OPENAI_API_KEY"]
    )
    logging.getLogger("httpx").info("HTTP Request: POST ... (below WARNING: not shown)")
    err = capsys.readouterr().err
    _assert_no_secret(err, "an SDK log line")
    (line,) = err.splitlines()
    assert "retrying with key [redacted]" in line
    if json_logs:
        event = json.loads(line)
        assert event["logger"] == "openai._base_client" and event["level"] == "warning"
