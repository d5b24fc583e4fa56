"""The file side of the summaries beside a store (records/summary_files.py) and the
single-encoding seal (summary_seal.sealed_json)."""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path

import pytest

from llm_council.bias_audit.records import summary_files, summary_seal
from llm_council.bias_audit.records.summary_files import (
    SummaryUnverifiable,
    append_summary_line,
    read_summary,
    remove_stale_temporaries,
    write_summary_atomically,
)


@pytest.mark.parametrize("body", [{"b": [1.5, 2], "a": {"x": "y"}}, {}])
def test_sealed_json_is_the_sealed_document_encoded_once(tmp_path: Path, body: dict) -> None:
    store = tmp_path / "records.jsonl"
    encoded = summary_seal.sealed_json("profiles.log", store, body)
    assert encoded is not None
    document = json.loads(encoded)
    assert document == summary_seal.seal("profiles.log", store, body)
    assert summary_seal.unsealed("profiles.log", store, document) == body
    assert summary_seal.unsealed("profiles.json", store, document) is None
    assert summary_seal.sealed_json("k", store, {"x": float("nan")}) is None


def test_unsealed_json_verifies_the_bytes_before_parsing_them(tmp_path: Path) -> None:
    store = tmp_path / "records.jsonl"
    body = {"reviewers": {'x"seal":"hmac-sha256:': [1, 2.5]}, "store_key": [1, 2, 3]}
    encoded = summary_seal.sealed_json("profiles.json", store, body)
    assert encoded is not None
    assert summary_seal.unsealed_json("profiles.json", store, encoded) == body
    assert summary_seal.unsealed_json("profiles.log", store, encoded) is None
    assert summary_seal.unsealed_json("profiles.json", tmp_path / "other", encoded) is None
    empty = summary_seal.sealed_json("k", store, {})
    assert empty is not None and summary_seal.unsealed_json("k", store, empty) == {}
    seal_text = encoded[encoded.rfind(b',"seal"') :]
    hostile = [
        encoded.replace(b"2.5", b"0.5"),  # a number edited
        encoded[: len(encoded) // 2],  # truncated
        encoded[: encoded.rfind(b',"seal"')] + b"}",  # seal deleted
        b"[" * 100_000 + seal_text,  # deep nesting under a copied seal: never parsed
        b'{"a":NaN' + seal_text,
        json.dumps(json.loads(encoded), indent=1).encode(),  # same content, other bytes
        b"\xff\xfe",
        b"",
    ]
    for raw in hostile:
        assert summary_seal.unsealed_json("profiles.json", store, raw) is None


def test_read_summary_refuses_links_fifos_and_giants(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"12345")
    assert read_summary(target) == b"12345"
    assert read_summary(target, offset=2) == b"345"
    assert read_summary(tmp_path / "missing") is None
    link = tmp_path / "link"
    link.symlink_to(target)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path in (link, fifo, tmp_path):
        with pytest.raises(SummaryUnverifiable):
            read_summary(path)
    with pytest.raises(SummaryUnverifiable, match="larger"):
        read_summary(target, max_bytes=4)


def test_writes_are_0600_and_never_follow_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    path = tmp_path / "summary.json"
    path.symlink_to(victim)
    write_summary_atomically(path, b"{}")  # replaces the link itself
    assert victim.read_bytes() == b"precious" and not path.is_symlink()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    journal = tmp_path / "journal.log"
    journal.symlink_to(victim)
    with pytest.raises(OSError):
        append_summary_line(journal, b"line\n")
    assert victim.read_bytes() == b"precious"
    journal.unlink()
    assert append_summary_line(journal, b"line\n") == (5, 5)
    assert stat.S_IMODE(journal.stat().st_mode) == 0o600


def test_stale_temporaries_are_swept_at_most_once_a_minute(tmp_path: Path) -> None:
    store = tmp_path / "s.jsonl"
    summary_files._LAST_SWEEP.clear()
    stale = tmp_path / ".s.jsonl.adjustments.json.abc.tmp"
    stale.write_bytes(b"")
    now = time.time()
    os.utime(stale, (now - 61, now - 61))
    assert remove_stale_temporaries(store, now=now) == 1
    stale.write_bytes(b"")
    os.utime(stale, (now - 61, now - 61))
    assert remove_stale_temporaries(store, now=now + 30) == 0  # swept 30 s ago
    assert remove_stale_temporaries(store, now=now + 61) == 1


class _FakeLog:
    """Records what would be logged (structlog may be configured to cache its loggers)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, object]] = []

    def warning(self, event: str, **fields: object) -> None:
        self.entries.append({"event": event, **fields})


def test_an_unverifiable_summary_is_reported_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _FakeLog()
    monkeypatch.setattr(summary_files, "log", fake)
    summary_files.forget_rebuilt()
    for _ in range(3):
        summary_files.warn_unverifiable("profiles", tmp_path, "the seal does not verify")
    summary_files.warn_unverifiable("adjustments", tmp_path, "not JSON")
    events = [(entry["event"], entry["kind"]) for entry in fake.entries]
    assert events == [
        ("summary_unverifiable_rebuilt", "profiles"),
        ("summary_unverifiable_rebuilt", "adjustments"),
    ]
