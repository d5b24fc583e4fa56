"""The seal that binds a summary file to its store (records/summary_seal.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat

import pytest

from llm_council.bias_audit.records import summary_seal


@pytest.fixture(autouse=True)
def _key_file(tmp_path, monkeypatch):
    monkeypatch.delenv(summary_seal.SUMMARY_KEY_VARIABLE, raising=False)
    monkeypatch.delenv(summary_seal.HASH_SECRET_VARIABLE, raising=False)
    monkeypatch.setenv(summary_seal.SUMMARY_KEY_FILE_VARIABLE, str(tmp_path / "keys" / "k"))
    summary_seal._file_key.cache_clear()
    yield
    summary_seal._file_key.cache_clear()


def test_a_sealed_body_verifies_and_an_edit_does_not(tmp_path):
    store = tmp_path / "s.jsonl"
    sealed = summary_seal.seal("profiles", store, {"sessions": 3, "sums": [1.5, 2.0]})
    assert sealed is not None
    assert summary_seal.unsealed("profiles", store, sealed) == {"sessions": 3, "sums": [1.5, 2.0]}
    forged = {**sealed, "sessions": 4}
    assert summary_seal.unsealed("profiles", store, forged) is None
    # another kind or another store does not accept it either
    assert summary_seal.unsealed("adjustments", store, sealed) is None
    assert summary_seal.unsealed("profiles", tmp_path / "other.jsonl", sealed) is None
    assert summary_seal.unsealed("profiles", store, {"sessions": 3}) is None
    assert summary_seal.unsealed("profiles", store, "not a mapping") is None


def test_the_mac_is_hmac_sha256_of_kind_store_and_canonical_json(tmp_path, monkeypatch):
    monkeypatch.setenv(summary_seal.SUMMARY_KEY_VARIABLE, "k")
    store = tmp_path / "s.jsonl"
    sealed = summary_seal.seal("profiles", store, {"b": 1, "a": [0.5]})
    # hand derivation: key = SHA-256("k"); message = kind NUL resolved-path NUL JSON
    key = hashlib.sha256(b"k").digest()
    message = b"profiles\x00" + str(store.resolve()).encode() + b'\x00{"a":[0.5],"b":1}'
    assert sealed["seal"] == "hmac-sha256:" + hmac.new(key, message, hashlib.sha256).hexdigest()


def test_a_symlinked_store_and_its_target_share_one_seal(tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_text("")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    sealed = summary_seal.seal("profiles", link, {"n": 1})
    assert summary_seal.unsealed("profiles", target, sealed) == {"n": 1}


def test_the_generated_key_file_is_private_and_reused(tmp_path):
    first = summary_seal.summary_key()
    key_file = tmp_path / "keys" / "k"
    assert first is not None and len(first) == 32
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    summary_seal._file_key.cache_clear()
    assert summary_seal.summary_key() == first


def test_a_symlinked_or_short_key_file_is_not_used(tmp_path, monkeypatch):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.write_bytes(b"x" * 32)
    link = tmp_path / "link.key"
    link.symlink_to(elsewhere)
    monkeypatch.setenv(summary_seal.SUMMARY_KEY_FILE_VARIABLE, str(link))
    assert summary_seal.summary_key() is None
    short = tmp_path / "short.key"
    short.write_bytes(b"x" * 5)
    monkeypatch.setenv(summary_seal.SUMMARY_KEY_FILE_VARIABLE, str(short))
    assert summary_seal.summary_key() is None


def test_without_a_key_nothing_is_sealed_and_nothing_verifies(tmp_path, monkeypatch):
    monkeypatch.setenv(summary_seal.SUMMARY_KEY_FILE_VARIABLE, "/proc/no/such/dir/k")
    store = tmp_path / "s.jsonl"
    assert summary_seal.seal("profiles", store, {"n": 1}) is None
    assert summary_seal.unsealed("profiles", store, {"n": 1, "seal": "hmac-sha256:00"}) is None


def test_the_hash_secret_derives_a_key_but_is_not_the_key(monkeypatch):
    monkeypatch.setenv(summary_seal.HASH_SECRET_VARIABLE, "salt")
    key = summary_seal.summary_key()
    assert key == hmac.new(b"salt", b"llm-council summary seal v1", hashlib.sha256).digest()
    assert b"salt" not in key


def test_non_finite_bodies_are_not_sealed(tmp_path):
    assert summary_seal.seal("p", tmp_path / "s", {"x": float("inf")}) is None
    assert summary_seal.all_finite({"a": [1.0, {"b": 2}]}, bound=1e6)
    assert not summary_seal.all_finite({"a": [1.0, {"b": 1e300}]}, bound=1e6)
    assert not summary_seal.all_finite([float("nan")])
    assert json.loads(summary_seal.canonical_json({"b": 1, "a": 2})) == {"a": 2, "b": 1}
