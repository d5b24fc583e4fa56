"""Seals on a PostgreSQL store's reviewer-profile rows, so that made-up sums are detected.

A writer role may insert into ``bias_profile_deltas`` and update ``bias_reviewer_profiles``
(compaction needs both), so without a seal one ``INSERT`` of invented sums changed every
replica's history, silently (issue 37 B8). Each delta and base row therefore carries
``seal``: HMAC-SHA256 (RFC 2104) of its kind, the store's id (``llm_council_store``) and the
row's canonical JSON, under the key of :mod:`~llm_council.bias_audit.records.summary_seal`.

The key must be the same on every replica, so only an explicit one is used here:
``LLM_COUNCIL_SUMMARY_KEY`` (or one derived from ``LLM_COUNCIL_HASH_SECRET``). The
per-machine key file that module falls back to would differ between replicas; without an
explicit key nothing is sealed and nothing verified (as before), and the lookup says so
once in the log. A MAC here is not :func:`summary_seal.seal`: that one binds a resolved
file path, and a database has no path, only its id.

What is detected: a row whose body was invented or edited. What is not: a copy of a
genuine delta inserted again after its compaction (counts that session twice), and
deleted rows (history loses sessions). ADR 0056.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from collections.abc import Sequence
from typing import Any

import structlog
from psycopg.types.json import Jsonb

from llm_council.bias_audit.records.reviewer_profiles import (
    PROFILE_FORMAT,
    Profiles,
    decode_profiles,
    encode_profiles,
)
from llm_council.bias_audit.records.summary_seal import (
    HASH_SECRET_VARIABLE,
    SEAL_TAG,
    SUMMARY_KEY_VARIABLE,
    canonical_json,
    summary_key,
)

log = structlog.get_logger("llm_council.bias_audit")

DELTA_KIND = "postgres-profile-delta"
BASE_KIND = "postgres-reviewer-profile"


def sealing_key() -> bytes | None:
    """The shared key, when the environment gives one explicitly; else ``None``."""
    if os.environ.get(SUMMARY_KEY_VARIABLE) or os.environ.get(HASH_SECRET_VARIABLE):
        return summary_key()
    return None


def _as_floats(value: Any) -> Any:
    """Every number as a float: jsonb gives ``1e+16`` back as an integer, so a seal over
    the value as stored must not depend on how a number was typed."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, dict):
        return {str(key): _as_floats(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_as_floats(item) for item in value]
    raise TypeError(f"cannot seal a {type(value).__name__}")


def row_seal(key: bytes, kind: str, store_id: str, body: dict[str, Any]) -> str:
    """``hmac-sha256:<hex>`` of ``kind``, ``store_id`` and ``body`` (canonical JSON)."""
    message = b"\x00".join(
        [kind.encode("utf-8"), store_id.encode("utf-8"), canonical_json(_as_floats(body))]
    )
    return f"{SEAL_TAG}:{hmac.new(key, message, hashlib.sha256).hexdigest()}"


def seal_verifies(key: bytes, kind: str, store_id: str, body: dict[str, Any], seal: object) -> bool:
    """Whether ``seal`` is :func:`row_seal` of the row (constant-time compare)."""
    if not isinstance(seal, str):
        return False
    try:
        expected = row_seal(key, kind, store_id, body)
    except (TypeError, ValueError):  # a non-finite number or an unknown type: not ours
        return False
    return hmac.compare_digest(seal, expected)


def delta_body(session_id: str | None, profile_format: int, profiles: Any) -> dict[str, Any]:
    """What a delta row's seal covers."""
    return {"session_id": session_id, "format": profile_format, "profiles": profiles}


def base_body(reviewer_id: str, profile_format: int, profile: Any) -> dict[str, Any]:
    """What a base row's seal covers."""
    return {"reviewer_id": reviewer_id, "format": profile_format, "profile": profile}


def verified_base(base: dict[str, Any], key: bytes | None, store_id: str) -> Profiles | None:
    """The base's profiles; ``None`` when a row's seal does not verify (the caller
    rebuilds: one reviewer's whole history cannot be skipped like one session)."""
    rows = {reviewer: row[0] for reviewer, row in base.items()}
    if key is not None:
        forged = [
            reviewer
            for reviewer, (profile, row_seal) in base.items()
            if not seal_verifies(
                key, BASE_KIND, store_id, base_body(reviewer, PROFILE_FORMAT, profile), row_seal
            )
        ]
        if forged:
            log.warning("reviewer_profiles_unsealed_base", reviewers=len(forged))
            return None
    return decode_profiles(rows)


def verified_delta(delta: Sequence[Any], key: bytes | None, store_id: str) -> Profiles | None:
    """A delta's profiles; ``None`` (skipped, with a warning) when its seal does not verify."""
    _, encoded, session_id, row_seal = delta
    if key is not None and not seal_verifies(
        key, DELTA_KIND, store_id, delta_body(session_id, PROFILE_FORMAT, encoded), row_seal
    ):
        log.warning("reviewer_profiles_unsealed_delta_skipped", delta_id=int(delta[0]))
        return None
    return decode_profiles(encoded)


_NOTED_UNSEALED: set[str] = set()


def key_or_note() -> bytes | None:
    """The sealing key; without one, say once per process that rows are not verified."""
    key = sealing_key()
    if key is None and "noted" not in _NOTED_UNSEALED:
        _NOTED_UNSEALED.add("noted")
        log.warning(
            "reviewer_profiles_not_sealed",
            hint="set LLM_COUNCIL_SUMMARY_KEY (the same on every replica) to detect "
            "forged profile rows",
        )
    return key


def sealed_base(profiles: Profiles, store_id: str) -> Jsonb:
    """The parameter of :data:`_UPSERT_BASE`: each reviewer's encoded profile and its seal
    (null without a key)."""
    key = sealing_key()
    rows = {}
    for reviewer, encoded in encode_profiles(profiles).items():
        body = base_body(reviewer, PROFILE_FORMAT, encoded)
        rows[reviewer] = [encoded, row_seal(key, BASE_KIND, store_id, body) if key else None]
    return Jsonb(rows)
