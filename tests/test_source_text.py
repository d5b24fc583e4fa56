"""The project's text files hold no control characters but newlines.

A shell or an editor that interprets escapes turns ``\\top`` in a LaTeX docstring into a
TAB and ``op`` (it happened once), ``\\b`` into a backspace, ``\\a`` into a bell: the
rendered docs then lose the formula, silently. Binary data (gzip, Parquet, images) is
left out by suffix.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEXT_SUFFIXES = {".py", ".md", ".toml", ".txt", ".cfg", ".sh", ".json", ".jsonl", ".csv", ".html"}
# every C0 control but \n, and DEL; \r is refused too (the tree uses \n line ends)
CONTROL = re.compile(rb"[\x00-\x09\x0b-\x1f\x7f]")


def _text_files() -> list[Path]:
    folders = ("src", "tests", "docs", "ADRs", "config", "benchmarks", ".ci")
    files = [ROOT / "README.md", ROOT / "pyproject.toml"]
    for folder in folders:
        files += [
            path
            for path in (ROOT / folder).rglob("*")
            if path.is_file()
            and (path.suffix in TEXT_SUFFIXES or path.parent.name == ".ci")
            and "__pycache__" not in path.parts
        ]
    return files


def test_text_files_hold_no_control_characters() -> None:
    files = _text_files()
    assert len(files) > 300  # the walk found the tree
    offenders = []
    for path in files:
        for number, line in enumerate(path.read_bytes().split(b"\n"), start=1):
            if match := CONTROL.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: byte {match.group()!r}")
    assert offenders == []
