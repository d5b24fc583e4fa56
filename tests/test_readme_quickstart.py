"""The README's quickstart runs as written on the offline default (issue 28).

Every fenced ``bash`` block of the "## Quickstart" section is run, in order, as one bash
script in a temporary directory (so ``export`` in step 1 holds for the later steps), with
this interpreter's environment first on ``PATH`` (its ``llm-council`` console script) and
this checkout's ``src`` first on ``PYTHONPATH``. ``tests`` is linked into the directory
because the README's commands run from the checkout and name the shipped sample pairs.
Each block's output is kept apart so a failure names the command, and each block must
print its salient line.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
MARKER = "__readme_block_done__"

#: a line each quickstart block must print, in README order (the README's own excerpts)
SALIENT = [
    re.compile(r"bias audit: overall risk \w+; 25 records written to .*records\.jsonl"),
    re.compile(r"^$"),  # --json goes to session.json: checked below
    re.compile(r"^$"),  # the loop prints nothing
    re.compile(r"harsh\n  Leniency: -\d\.\d\d .*\(harsh, "),
    re.compile(r"favors the first answer[\s\S]*=> Do not trust this judge[\s\S]*exit 3"),
    re.compile(r"human ceiling .*judge vs annotator 0\.24 .*: as good as the humans"),
    re.compile(r'exit 4\n\s*"verdict": "fail",\n\s*"exit_status": 4,'),
]


def quickstart_blocks(text: str) -> list[str]:
    """The ``bash`` fences between ``## Quickstart`` and the next ``## `` heading."""
    section = text.split("\n## Quickstart\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```bash\n(.*?)^```$", section, flags=re.S | re.M)


def test_the_quickstart_has_the_five_steps_and_only_plain_commands() -> None:
    blocks = quickstart_blocks(README.read_text(encoding="utf-8"))
    assert len(blocks) == len(SALIENT)
    commands = "\n".join(blocks)
    # one convention after `source .venv/bin/activate`: no .venv/bin/ paths in the quickstart
    assert ".venv/bin" not in commands
    for command in ("ask", "bias-report", "calibrate"):
        assert f"llm-council {command}" in commands


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_every_quickstart_command_runs_on_the_offline_default(tmp_path: Path) -> None:
    blocks = quickstart_blocks(README.read_text(encoding="utf-8"))
    (tmp_path / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    script = "\n".join(f"{block}\necho {MARKER} >&2\necho {MARKER}" for block in blocks)
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LLM_COUNCIL_", "OPENAI_", "ANTHROPIC_", "GOOGLE_", "GEMINI_"))
        and key not in ("BIAS_AUDIT_ENABLED", "OTEL_TRACES_EXPORTER")
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    env["HOME"] = str(tmp_path / "home")  # nothing written to the real user data directory
    env["COLUMNS"] = "200"
    completed = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    outputs = completed.stdout.split(f"{MARKER}\n")
    errors = completed.stderr.split(f"{MARKER}\n")
    assert completed.returncode == 0, (
        f"block {len(outputs)} failed:\n{blocks[len(outputs) - 1]}\n{errors[-1][-2000:]}"
    )
    assert len(outputs) == len(blocks) + 1
    for number, (pattern, output, block) in enumerate(
        zip(SALIENT, outputs, blocks, strict=False), start=1
    ):
        if pattern.pattern == "^$":
            continue
        assert pattern.search(output + errors[number - 1]), f"block {number}:\n{block}\n{output}"
    session = (tmp_path / "session.json").read_text(encoding="utf-8")
    assert '"bias_audit"' in session and '"record_store"' in session
    records = (tmp_path / "records.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(records) == 10 * 25  # 10 sessions of 5 reviewers x 5 answers
    assert (tmp_path / "report.html").stat().st_size > 0


def test_the_pairs_line_of_the_quickstart_is_a_valid_pair() -> None:
    from llm_council.calibration.pairs import parse_pairs_lines

    line = re.search(r'^\{"id": .*"response_a".*\}$', README.read_text(encoding="utf-8"), re.M)
    assert line is not None
    (pair,) = parse_pairs_lines([line.group(0)], "README.md")
    assert pair.human_label == "a" and len(pair.judgments) == 2
