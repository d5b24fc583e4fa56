"""The JSONL cache/checkpoint of finished judge calls, so an interrupted run resumes.

Each finished call is one line written with a single ``write`` then flushed and fsynced,
so a crash loses at most the call in flight; a torn line (the crash happened mid write)
is skipped with a warning on the next start, and the next append starts a fresh line.
Only successful calls are stored: a failed call is retried on the next run rather than
replayed as a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from pathlib import Path
from typing import IO, Any

from llm_council.infra.input_files import read_input_text


def call_key(
    judge_key: str, pair_id: str, variant: str, order: str, repetition: int, content: str
) -> str:
    """``sha256:<hex>`` over judge spec + pair id + variant + order + repetition + content.

    ``content`` (the question and both texts) is included so that editing a pair in the
    input file invalidates its cached verdicts instead of silently reusing them.
    """
    material = json.dumps(
        [
            judge_key,
            pair_id,
            variant,
            order,
            repetition,
            hashlib.sha256(content.encode()).hexdigest(),
        ]
    )
    return "sha256:" + hashlib.sha256(material.encode()).hexdigest()


class CallCache:
    """Append-only store of ``key -> completion text``; ``path=None`` keeps it in memory."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] = {}
        self._handle: IO[str] | None = None
        if path is not None and path.exists():
            self._load(path)
        self._loaded = frozenset(self._entries)

    def was_loaded(self, key: str) -> bool:
        """True when ``key`` came from the file at start (a previous run), not this run."""
        return key in self._loaded

    def _load(self, path: Path) -> None:
        lines = read_input_text(path).split("\n")  # regular, bounded (issue 37 A.10)
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = entry["key"]
                entry["text"]  # noqa: B018 - presence check
            except (json.JSONDecodeError, RecursionError, KeyError, TypeError):
                # only this class writes the file, so a bad line is a write torn by a crash
                # (later runs append after it); losing it costs one repeated call
                warnings.warn(
                    f"{path}:{number}: skipped a torn line of the call cache", stacklevel=3
                )
                continue
            self._entries[key] = entry

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> str | None:
        entry = self._entries.get(key)
        return None if entry is None else str(entry["text"])

    def put(self, key: str, text: str, **fields: Any) -> None:
        """Store one finished call durably before returning."""
        entry = {"key": key, **fields, "text": text}
        self._entries[key] = entry
        if self.path is None:
            return
        if self._handle is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._repair_tail()
            self._handle = self.path.open("a", encoding="utf-8")
        self._handle.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def _repair_tail(self) -> None:
        """Terminate a torn last line so the next entry starts on a line of its own."""
        assert self.path is not None
        if self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open("rb") as handle:
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) != b"\n":
                    with self.path.open("a", encoding="utf-8") as append:
                        append.write("\n")

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None
