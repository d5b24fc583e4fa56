"""The background prefix hash (ADR 0094) gives the digest ADR 0081's synchronous hash gave,
at every offset the resume placement can choose, and refuses what ADR 0081 refused.

Reference values: ``hashlib.sha256`` over the file's bytes, read whole in the test."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
import structlog

from bias_audit.report.analyses.split_stores import independent_sessions, json_lines
from bias_audit.report.analyses.test_incremental_runner import assert_same_report
from llm_council.bias_audit.report import build
from llm_council.bias_audit.report.build import build_report
from llm_council.bias_audit.report.load import next_resume, prefix_hasher
from llm_council.bias_audit.report.load.prefix_hasher import SYNC_MARGIN_BYTES, PrefixHasher
from llm_council.bias_audit.report.load.resume_point import TailRefused
from llm_council.bias_audit.report.load.session_summaries import read_summaries
from llm_council.bias_audit.report.model import BiasReport

MARGIN = 1000  # a small margin, so the tests reach both sides of ``stop``


def _file(tmp_path: Path, size: int = 10_000) -> tuple[Path, bytes]:
    path = tmp_path / "store.jsonl"
    content = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    path.write_bytes(content)
    return path, content


def _sha(content: bytes) -> str:
    return "sha256:" + hashlib.sha256(content).hexdigest()


def _hasher(path: Path, *, start: int, expected: str | None) -> PrefixHasher:
    descriptor = os.open(path, os.O_RDONLY)
    return PrefixHasher(descriptor, start=start, end=path.stat().st_size, expected=expected)


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.fixture(autouse=True)
def small_margin(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(prefix_hasher, "SYNC_MARGIN_BYTES", MARGIN)


@pytest.mark.parametrize("start", [0, 1, 4_000])
def test_every_offset_gets_the_digest_of_its_bytes(start: int, tmp_path: Path) -> None:
    path, content = _file(tmp_path)
    expected = _sha(content[:start]) if start else None
    stop = len(content) - MARGIN
    hasher = _hasher(path, start=start, expected=expected)
    with path.open("rb") as stream:
        # at start, between start and stop (from the state at start), at stop, past it, end
        for offset in (start, (start + stop) // 2, stop, stop + 1, len(content)):
            state = hasher.state_at(stream.fileno(), offset)
            assert "sha256:" + state.hexdigest() == _sha(content[:offset])
    hasher.confirm()


def test_the_descriptor_is_closed_once_hashed(tmp_path: Path) -> None:
    path, _ = _file(tmp_path)
    before = _open_descriptors()
    hasher = _hasher(path, start=0, expected=None)
    with path.open("rb") as stream:
        hasher.state_at(stream.fileno(), 10)
    assert _open_descriptors() == before


def test_a_changed_prefix_is_refused_at_confirm_and_at_state(tmp_path: Path) -> None:
    path, content = _file(tmp_path)
    hasher = _hasher(path, start=4_000, expected=_sha(content[:3_999] + b"?"))
    with pytest.raises(TailRefused, match=r"the prefix's bytes changed \(SHA-256 differs\)"):
        hasher.confirm()
    with path.open("rb") as stream, pytest.raises(TailRefused):
        hasher.state_at(stream.fileno(), 5_000)


def test_a_file_shorter_than_the_prefix_refuses_a_tail_and_fails_a_cold_hash(
    tmp_path: Path,
) -> None:
    path, content = _file(tmp_path, 3_000)
    descriptor = os.open(path, os.O_RDONLY)
    checked = PrefixHasher(descriptor, start=4_000, end=4_000, expected=_sha(content))
    with pytest.raises(TailRefused, match="cannot read the prefix: the file ends at 3000"):
        checked.confirm()
    cold = PrefixHasher(os.open(path, os.O_RDONLY), start=0, end=9_000, expected=None)
    cold.confirm()  # nothing to check: returns at once
    with path.open("rb") as stream, pytest.raises(OSError, match="the file ends at 3000"):
        cold.state_at(stream.fileno(), 3_000)


def test_an_offset_before_the_start_is_a_programming_error(tmp_path: Path) -> None:
    path, content = _file(tmp_path)
    hasher = _hasher(path, start=4_000, expected=_sha(content[:4_000]))
    with path.open("rb") as stream, pytest.raises(ValueError, match="before the hashed start"):
        hasher.state_at(stream.fileno(), 3_999)


def test_of_path_follows_a_symlink_and_refuses_another_file(tmp_path: Path) -> None:
    path, content = _file(tmp_path)
    status = path.stat()
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    hasher = PrefixHasher.of_path(link, status.st_dev, status.st_ino, end=len(content))
    assert hasher is not None
    with path.open("rb") as stream:
        assert hasher.state_at(stream.fileno(), 50).hexdigest() == _sha(content[:50])[7:]
    (tmp_path / "new").write_bytes(content)
    os.replace(tmp_path / "new", path)  # another inode at the same path
    assert PrefixHasher.of_path(path, status.st_dev, status.st_ino, end=len(content)) is None


def test_the_margin_covers_the_furthest_resume_offset() -> None:
    """``_place_window`` moves the offset back at most ``_MAX_MOVES`` times, each by at most
    ``MAX_WINDOW_BYTES``, from a window of at most ``MAX_WINDOW_BYTES``."""
    furthest = next_resume.MAX_WINDOW_BYTES * (next_resume._MAX_MOVES + 1)
    assert furthest <= SYNC_MARGIN_BYTES


def test_a_prefix_edited_during_the_report_gives_the_cold_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``build_report``: the check is deferred (the report reads on while the prefix
    is hashed), so a changed prefix is found in the plan, the attempt is abandoned before
    any section runs or any file is written, and the report is the cold one."""
    monkeypatch.setattr(build, "COMPUTED_FROM_EVERY_RECORD", ())
    lines = json_lines(independent_sessions(3, 60, 11, missing_score_rate=0.1))
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(lines[: len(lines) // 2]))
    build_report(store, n_resamples=20, seed=3, reproducible=True)
    saved = read_summaries(store)
    assert saved is not None and saved.resume is not None
    at = store.read_bytes().index(b'"score_value": ') + len(b'"score_value": ')
    with store.open("r+b") as stream:  # one byte of the prefix, size and inode kept
        stream.seek(at)
        old = stream.read(1)
        stream.seek(at)
        stream.write(b"1" if old != b"1" else b"2")
    with store.open("ab") as stream:
        stream.write(b"".join(lines[len(lines) // 2 :]))
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as logs:
        report = build_report(store, n_resamples=20, seed=3, reproducible=True)
    events = [entry["event"] for entry in logs]
    assert "report_tail_loaded" not in events
    rebuilt = [entry["reason"] for entry in logs if entry["event"] == "report_sessions_rebuilt"]
    assert rebuilt[0] == (
        "the tail load was abandoned: the prefix's bytes changed (SHA-256 differs)"
    )
    cold = build_report(store, n_resamples=20, seed=3, reproducible=True, session_summaries=False)
    assert report.n_records == cold.n_records == len(lines)
    assert_same_report(_canonical(report), _canonical(cold))


def _canonical(report: BiasReport) -> str:
    data = report.to_dict()
    data.pop("generated_at")
    return json.dumps(data, sort_keys=True, allow_nan=True)
