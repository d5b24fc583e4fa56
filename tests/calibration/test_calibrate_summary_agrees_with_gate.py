"""The summary ``calibrate`` prints must not contradict the gate's exit (issue 26 item 7).

A judge that fails every call exits 5 ("only 0 of 6 pairs judged"); its summary used to end
"=> No checklist threshold failed." just before that error.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_council.cli.app import _run, app

from .conftest import simulated_pair_records, write_jsonl
from .test_gate import CANARY_KEY, UnauthorizedOpenAI


def test_the_summary_of_a_run_with_too_few_judgments_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", simulated_pair_records(6, seed=1))
    monkeypatch.setenv("OPENAI_API_KEY", CANARY_KEY)
    with UnauthorizedOpenAI().running() as server:
        code = _run(
            ["calibrate", str(path), "--model", "openai:gpt-4o", "--no-cache"]
            + ["-o", f"base_url={server.url}/v1"],
            "llm-council",
            app,
        )
    assert code == 5
    out, err = capsys.readouterr()
    assert "No checklist threshold failed" not in out
    verdict_lines = [line.strip() for line in out.splitlines() if line.strip().startswith("=>")]
    assert verdict_lines == [
        "=> Not checked against any threshold: only 0 of 6 pairs judged in both orders"
        " (need 50%; see --min-evaluated)"
    ]
    assert "only 0 of 6 pairs judged in both orders" in err
