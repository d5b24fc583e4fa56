"""The reference design's per-install query-hash key: created private, reused, never trusted
when others could read or choose it."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat
from pathlib import Path

import pytest

from llm_council.bias_persistence import ConsentLevel, hash_query_if_enabled
from llm_council.integrations.reference_hash_secret import resolve_hash_secret


@pytest.fixture
def key_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("LLM_COUNCIL_HASH_SECRET", raising=False)
    path = tmp_path / "deep" / "hash_secret"
    monkeypatch.setenv("LLM_COUNCIL_HASH_SECRET_FILE", str(path))
    return path


def test_a_missing_key_is_created_once_private_and_used_for_the_hash(key_file: Path) -> None:
    digest = hash_query_if_enabled("which tests?", ConsentLevel.RESEARCH)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert len(key) == 64 and int(key, 16) >= 0
    # the hash is HMAC-SHA256 under that key, 16 hex kept (the reference's format)
    expected = hmac.new(key.encode(), b"which tests?", hashlib.sha256).hexdigest()[:16]
    assert digest == expected
    assert resolve_hash_secret() == key  # reused, not re-created


@pytest.mark.parametrize("mode", [0o644, 0o660, 0o604])
def test_a_key_others_can_read_or_write_is_refused_not_replaced(
    key_file: Path, mode: int, caplog: pytest.LogCaptureFixture
) -> None:
    key_file.parent.mkdir(parents=True)
    key_file.write_text("k" * 64)
    os.chmod(key_file, mode)
    with caplog.at_level(logging.WARNING):
        assert hash_query_if_enabled("q", ConsentLevel.RESEARCH) is None
    assert "mode must be 0600" in caplog.text and "k" * 16 not in caplog.text
    assert key_file.read_text() == "k" * 64


def test_a_symlinked_or_short_key_is_refused(
    key_file: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    target = tmp_path / "chosen"
    target.write_text("c" * 64)
    os.chmod(target, 0o600)
    key_file.parent.mkdir(parents=True)
    key_file.symlink_to(target)
    with caplog.at_level(logging.WARNING):
        assert resolve_hash_secret() is None
    key_file.unlink()
    key_file.write_text("short")
    os.chmod(key_file, 0o600)
    assert resolve_hash_secret() is None
    assert "shorter than 16" in caplog.text


def test_a_short_configured_secret_skips_the_hash(
    key_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLM_COUNCIL_HASH_SECRET", "tooshort")
    assert hash_query_if_enabled("q", ConsentLevel.RESEARCH) is None
    assert not key_file.exists()  # a configured secret never creates a file


def test_an_uncreatable_key_file_skips_the_hash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    monkeypatch.delenv("LLM_COUNCIL_HASH_SECRET", raising=False)
    monkeypatch.setenv("LLM_COUNCIL_HASH_SECRET_FILE", str(blocker / "hash_secret"))
    assert hash_query_if_enabled("q", ConsentLevel.RESEARCH) is None
