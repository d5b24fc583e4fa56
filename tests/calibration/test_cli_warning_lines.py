"""Warnings reach a CLI user as one ``warning: ...`` line (issue 26 item 7).

``label-ui`` used to print the torn-line repair as Python's raw ``UserWarning`` display:
``/path/label_store.py:97: UserWarning: ...`` and then the source line of the call.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

from llm_council.calibration.label_store import LabelStore
from llm_council.calibration.pairs import read_pairs

from .conftest import simulated_pair_records, write_jsonl


def test_label_ui_reports_a_repaired_torn_line_in_one_clean_line(tmp_path: Path) -> None:
    pairs_path = write_jsonl(tmp_path / "pairs.jsonl", simulated_pair_records(4, seed=12))
    pairs = read_pairs(pairs_path)
    output = tmp_path / "reviewed.jsonl"
    store = LabelStore(pairs, output)
    store.record(pairs[0].pair_id, "left", "")
    store.record(pairs[1].pair_id, "tie", "")
    with output.open("ab") as handle:  # what a writer killed mid-label leaves
        handle.write(b'{"id": ' + json.dumps(pairs[2].pair_id).encode() + b', "respo')
    command = [
        sys.executable,
        "-c",
        "from llm_council.cli.app import main; main()",
        "label-ui",
        str(pairs_path),
        "--output",
        str(output),
        "--port",
        "0",
    ]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        assert re.search(r"http://127\.0\.0\.1:\d+", process.stdout.readline())
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    assert stderr.splitlines() == [
        f"warning: {output}:3: removed a torn last line (a label whose write was "
        f"interrupted, never confirmed); kept in {output}.torn"
    ]


def test_calibrate_reports_a_torn_pairs_line_in_one_clean_line(tmp_path: Path) -> None:
    pairs_path = write_jsonl(tmp_path / "pairs.jsonl", simulated_pair_records(4, seed=12))
    with pairs_path.open("a") as handle:
        handle.write('{"id": "torn", "quest')
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from llm_council.cli.app import main; main()",
            "export-openai-evals",
            str(pairs_path),
            "--out",
            str(tmp_path / "evals"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines == [
        f"warning: {pairs_path}:{len(pairs_path.read_text().split(chr(10)))}: "
        "skipped a torn last line (no newline, not valid JSON)"
    ]
