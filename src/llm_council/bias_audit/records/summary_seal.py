"""Seal the summary files beside a store so that an edit of a summary alone is detected.

The files beside a record store (reviewer profiles, adjustment sums, the monitor's state)
are caches: everything in them can be rebuilt from the records. A cache that is trusted
because its ``store_key`` (inode, size, mtime) matches can be forged by anyone who can
stat the store. Each summary therefore carries a seal: HMAC-SHA256 (RFC 2104) of its
kind, the resolved store path and its canonical JSON body, under a key the attacker does
not have. A document whose seal does not verify is treated as absent, and its writer
rebuilds it from the records (with a warning).

The key, in order: ``LLM_COUNCIL_SUMMARY_KEY``; else derived from
``LLM_COUNCIL_HASH_SECRET`` (HMAC of a fixed label, so the query-hash salt itself is never
used as a MAC key); else 32 random bytes in ``<user data dir>/summary.key``, created 0600
on first use (``LLM_COUNCIL_SUMMARY_KEY_FILE`` overrides the path). Without a usable key
(an unwritable data directory) :func:`summary_key` returns ``None``: nothing is sealed and
nothing verifies, so every summary is rebuilt from the records (correct, slower).
The key never appears in logs, records or error messages.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import stat
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import platformdirs

SUMMARY_KEY_VARIABLE = "LLM_COUNCIL_SUMMARY_KEY"
SUMMARY_KEY_FILE_VARIABLE = "LLM_COUNCIL_SUMMARY_KEY_FILE"
HASH_SECRET_VARIABLE = "LLM_COUNCIL_HASH_SECRET"
SEAL_FIELD = "seal"
SEAL_TAG = "hmac-sha256"
_KEY_BYTES = 32
_DERIVATION_LABEL = b"llm-council summary seal v1"


def default_key_file() -> Path:
    """Where the generated key lives unless ``LLM_COUNCIL_SUMMARY_KEY_FILE`` says."""
    override = os.environ.get(SUMMARY_KEY_FILE_VARIABLE, "")
    if override:
        return Path(override)
    return Path(platformdirs.user_data_dir("llm-council")) / "summary.key"


def summary_key() -> bytes | None:
    """The sealing key under the current environment (see the module docstring)."""
    explicit = os.environ.get(SUMMARY_KEY_VARIABLE, "")
    if explicit:
        return hashlib.sha256(explicit.encode("utf-8")).digest()
    secret = os.environ.get(HASH_SECRET_VARIABLE, "")
    if secret:
        return hmac.new(secret.encode("utf-8"), _DERIVATION_LABEL, hashlib.sha256).digest()
    return _file_key(str(default_key_file()))


@lru_cache(maxsize=8)
def _file_key(path_text: str) -> bytes | None:
    """Read the key file, or create it 0600 (O_EXCL: two first users agree on one key)."""
    path = Path(path_text)
    for _ in range(2):
        key = _read_key(path)
        if key is not None:
            return key
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue  # another process created it first: read theirs
        except OSError:
            return None
        try:
            os.write(descriptor, secrets.token_bytes(_KEY_BYTES))
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    return _read_key(path)


def _read_key(path: Path) -> bytes | None:
    """The key file's bytes when it is a regular file of the right length, else None."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        if not _is_regular(descriptor):
            return None
        key = os.read(descriptor, _KEY_BYTES + 1)
    finally:
        os.close(descriptor)
    return key if len(key) == _KEY_BYTES else None


def _is_regular(descriptor: int) -> bool:
    return stat.S_ISREG(os.fstat(descriptor).st_mode)


def canonical_json(body: Any) -> bytes:
    """Sorted keys, no spaces, no NaN or infinity: one byte string per value."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("utf-8")


def _mac(key: bytes, kind: str, store: str, body: Any) -> str:
    return _mac_of_encoded(key, kind, store, canonical_json(body))


def _mac_of_encoded(key: bytes, kind: str, store: str, encoded: bytes) -> str:
    message = b"\x00".join([kind.encode("utf-8"), store.encode("utf-8"), encoded])
    return f"{SEAL_TAG}:{hmac.new(key, message, hashlib.sha256).hexdigest()}"


def store_identity(store: str | Path, *, resolved: bool = False) -> str:
    """The store as one name: its resolved path, so a symlink and its target agree.
    ``resolved=True``: the caller already resolved it (saves a ``realpath`` per line when
    a journal of many sealed lines is verified)."""
    return str(store) if resolved else str(Path(store).resolve())


def seal(
    kind: str, store: str | Path, body: Mapping[str, Any], *, resolved: bool = False
) -> dict[str, Any] | None:
    """``body`` with a ``seal`` field binding it to ``kind`` and ``store``; ``None`` when
    no key is available (the caller then writes no summary) or the body is not finite JSON.
    """
    key = summary_key()
    if key is None or SEAL_FIELD in body:
        return None
    try:
        mac = _mac(key, kind, store_identity(store, resolved=resolved), dict(body))
    except (TypeError, ValueError):
        return None
    return {**body, SEAL_FIELD: mac}


def sealed_json(
    kind: str, store: str | Path, body: Mapping[str, Any], *, resolved: bool = False
) -> bytes | None:
    """:func:`seal`'s document as JSON bytes, encoding the body once (a 9-member council's
    adjustment sums are ~400 KiB): the canonical body with the seal spliced in as its last
    field. ``None`` when :func:`seal` would give ``None``."""
    key = summary_key()
    if key is None or SEAL_FIELD in body:
        return None
    try:
        encoded = canonical_json(dict(body))
    except (TypeError, ValueError):
        return None
    mac = _mac_of_encoded(key, kind, store_identity(store, resolved=resolved), encoded)
    separator = b"," if encoded != b"{}" else b""
    return encoded[:-1] + separator + f'"{SEAL_FIELD}":"{mac}"}}'.encode("ascii")


def unsealed_json(
    kind: str, store: str | Path, raw: bytes, *, resolved: bool = False
) -> dict[str, Any] | None:
    """The body of a document written by :func:`sealed_json`, verified on its bytes as
    written (no re-encoding: a 9-member council's sums are ~400 KiB), then parsed; ``None``
    for anything else (another layout, a wrong seal, no key). Nothing unverified is parsed,
    so hostile JSON (deep nesting, NaN) never reaches the parser."""
    key = summary_key()
    marker = f'"{SEAL_FIELD}":"{SEAL_TAG}:'.encode("ascii")
    at = raw.rfind(marker)
    if key is None or at < 1 or not raw.endswith(b'"}'):
        return None
    mac = raw[at + len(marker) - len(SEAL_TAG) - 1 : -2].decode("ascii", "replace")
    prefix = raw[:at]
    if prefix == b"{":
        encoded = b"{}"
    elif prefix.endswith(b","):
        encoded = prefix[:-1] + b"}"
    else:
        return None
    expected = _mac_of_encoded(key, kind, store_identity(store, resolved=resolved), encoded)
    if not hmac.compare_digest(mac.encode("ascii", "replace"), expected.encode("ascii")):
        return None
    try:
        body = json.loads(encoded)
    except (ValueError, RecursionError):  # pragma: no cover - our writer wrote these bytes
        return None
    return body if isinstance(body, dict) and SEAL_FIELD not in body else None


def unsealed(
    kind: str, store: str | Path, document: Any, *, resolved: bool = False
) -> dict[str, Any] | None:
    """The body of a sealed ``document`` when its seal verifies for ``kind`` and ``store``;
    ``None`` for anything else (no seal, a wrong one, not a JSON object, no key)."""
    if not isinstance(document, Mapping):
        return None
    mac = document.get(SEAL_FIELD)
    key = summary_key()
    if key is None or not isinstance(mac, str):
        return None
    body = {name: value for name, value in document.items() if name != SEAL_FIELD}
    try:
        expected = _mac(key, kind, store_identity(store, resolved=resolved), body)
    except (TypeError, ValueError):
        return None
    return body if hmac.compare_digest(mac, expected) else None


def all_finite(value: Any, *, bound: float = math.inf) -> bool:
    """Every number inside ``value`` (nested lists and dicts) is finite and within
    ``bound`` in absolute value: a plausibility check before a summary's sums are used."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int | float):
        return math.isfinite(value) and abs(value) <= bound
    if isinstance(value, Mapping):
        return all(all_finite(item, bound=bound) for item in value.values())
    if isinstance(value, list | tuple):
        return all(all_finite(item, bound=bound) for item in value)
    return False
