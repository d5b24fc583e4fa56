"""A ``calibrate`` run killed with SIGKILL mid-way resumes from its checkpoint.

The judge is a simulated one (deterministic for a seed) slowed down a little so the kill
lands mid-run. The resumed run must pay only for the calls that had not finished, leave
no half-written report behind the kill, and produce the same report as a run that was
never interrupted.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

PAIRS = 30
WORDS = ("measure", "compare", "document", "test", "review", "simplify")
# fields that describe how the run went, not what it found
RUN_FIELDS = ("model_calls", "cached_calls", "reused_calls_in_run", "cache")


def _pairs_file(path: Path) -> Path:
    rng = np.random.default_rng(11)
    lines = []
    for index in range(PAIRS):
        texts = []
        for author in ("alpha", "beta"):
            body = " ".join(
                WORDS[int(i)] for i in rng.integers(len(WORDS), size=int(rng.integers(40, 300)))
            )
            quality = 6.5 + 1.5 * rng.standard_normal()
            texts.append(
                f"{body}.\n\n[simulated author={author}:{index:08x} quality={quality:.3f}]"
            )
        lines.append(
            json.dumps(
                {
                    "id": f"p{index}",
                    "prompt": f"Question {index}?",
                    "response_a": texts[0],
                    "response_b": texts[1],
                    "metadata": {"model_a": "alpha", "model_b": "beta"},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def _command(pairs: Path, cache: Path, output: Path) -> list[str]:
    code = "import sys; from llm_council.cli.app import main; main(sys.argv[1:])"
    return [
        sys.executable,
        "-c",
        code,
        "calibrate",
        str(pairs),
        "--model",
        "simulated:primacy",
        "-o",
        "latency_s=0.02",
        "--cache",
        str(cache),
        "--output",
        str(output),
        "--concurrency",
        "2",
        "--seed",
        "5",
    ]


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(CI="true", LLM_COUNCIL_BIAS_CHECK_PROBABILITY="0.25")
    return env


def _findings(report_path: Path) -> list[dict[str, Any]]:
    document = json.loads(report_path.read_text())
    return [
        {k: v for k, v in report.items() if k not in RUN_FIELDS} for report in document["reports"]
    ]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_killed_calibrate_resumes_and_reports_what_an_uninterrupted_run_reports(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from llm_council.cli.app import main

    pairs = _pairs_file(tmp_path / "pairs.jsonl")
    env = _environment()
    monkeypatch.setenv(
        "LLM_COUNCIL_BIAS_CHECK_PROBABILITY", env["LLM_COUNCIL_BIAS_CHECK_PROBABILITY"]
    )
    clean_out = tmp_path / "clean.json"
    with pytest.raises(SystemExit) as clean:  # the uninterrupted run, in-process (faster)
        main(_command(pairs, tmp_path / "clean-cache.jsonl", clean_out)[3:])
    assert clean.value.code == 0, capsys.readouterr().err
    (clean_report,) = json.loads(clean_out.read_text())["reports"]
    assert clean_report["cached_calls"] == 0
    total_calls = _lines(tmp_path / "clean-cache.jsonl")
    assert total_calls >= 2 * PAIRS

    cache, output = tmp_path / "cache.jsonl", tmp_path / "report.json"
    killed = subprocess.Popen(
        _command(pairs, cache, output),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while (
            _lines(cache) < total_calls // 3
            and time.monotonic() < deadline
            and killed.poll() is None
        ):
            time.sleep(0.005)
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert killed.returncode == -signal.SIGKILL, "the run finished before it could be killed"
    done_before_kill = _lines(cache)
    assert 0 < done_before_kill < total_calls
    assert not output.exists()  # no half-written report

    resumed = subprocess.run(
        _command(pairs, cache, output), env=env, capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    assert _findings(output) == _findings(clean_out)
    (report,) = json.loads(output.read_text())["reports"]
    assert report["model_calls"] == total_calls - done_before_kill  # no finished call paid twice
    # issue 10.9: every checkpointed call is reused, probe calls included (the old count
    # covered only position-swap hits), and requests = paid + checkpoint + shared in run:
    # resumed (cached + reused) = clean reused + what the killed run had checkpointed
    assert report["cached_calls"] >= done_before_kill
    assert (
        report["cached_calls"] + report["reused_calls_in_run"]
        == clean_report["reused_calls_in_run"] + done_before_kill
    )
    assert _lines(cache) == total_calls  # every call checkpointed once
