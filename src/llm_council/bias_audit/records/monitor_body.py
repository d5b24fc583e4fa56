"""The monitor state's body: what is sealed in ``<store>.monitor.json`` and read back.

One JSON object: the format and version, the settings, where in the store the state has
read to, the counts, the reviewers in row order, each cell array (``[reviewer][bias]``) as
one base64 string of its little-endian 8-byte numbers (exact, and cheap to encode: ``json``
formats every float through a Python call), and the SHA-256 of the session digests, which
follow the JSON in the file as raw bytes (:mod:`.monitor_state`). Reading it back refuses
any inconsistency, since a body sealed with the right key can still be wrong.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from dataclasses import fields
from typing import Any

import numpy as np

from llm_council.bias_audit.records.monitor_fold import DIGEST_BYTES, SUM_FIELDS, MonitorState
from llm_council.bias_audit.records.summary_seal import all_finite
from llm_council.stats.monitor.anytime_monitor import MonitorSettings, MonitorSums
from llm_council.stats.monitor.monitor_session_effects import BIASES

FORMAT = "llm-council-monitor"
#: 2: the centred prior and the Bonferroni count over estimated cells; 3: the cells as
#: packed columns and the digests as raw bytes after the sealed JSON (bound by a SHA-256)
VERSION = 3

#: the per-cell arrays of the body, each packed as little-endian 8-byte numbers
#: (``[reviewer][bias]``, row by row): the integer counts, then the float sums
INT_COLUMNS = ("n", "confirmed_at")
FLOAT_COLUMNS = (*SUM_FIELDS, "peak_log_e")


def _settings_fields(settings: MonitorSettings) -> dict[str, Any]:
    return {item.name: getattr(settings, item.name) for item in fields(settings)}


def _packed(values: np.ndarray, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def state_body(state: MonitorState) -> dict[str, Any]:
    """The state as the JSON body that is sealed: each cell array as base64 of its
    little-endian 8-byte numbers (exact, and about ten times cheaper to encode than the
    same floats as JSON numbers: ``json`` formats each float through a Python call), and
    the SHA-256 of the digests, which follow the JSON in the file as raw bytes
    (:func:`write_state`)."""
    sums = state.sums
    cells = {key: _packed(getattr(sums, key), "<i8") for key in INT_COLUMNS}
    cells.update({key: _packed(getattr(sums, key), "<f8") for key in FLOAT_COLUMNS})
    return {
        "format": FORMAT,
        "version": VERSION,
        "settings": _settings_fields(state.settings),
        "inode": state.inode,
        "offset": state.offset,
        "fingerprint": state.fingerprint,
        "n_sessions": state.n_sessions,
        "lines_read": state.lines_read,
        "malformed_lines": state.malformed_lines,
        "first_malformed_line": state.first_malformed_line,
        "session_digests_sha256": hashlib.sha256(state.digest_log).hexdigest(),
        "reviewers": list(state.reviewers),
        "cells": cells,
    }


def _column(text: Any, shape: tuple[int, int], dtype: str) -> np.ndarray:
    """One packed body column as an array of ``shape``; ``ValueError`` for another size."""
    raw = base64.b64decode(text, validate=True)
    if len(raw) != shape[0] * shape[1] * 8:
        raise ValueError(f"a column of {len(raw)} bytes, expected {shape[0] * shape[1] * 8}")
    return np.frombuffer(raw, dtype=dtype).reshape(shape).astype(dtype[1:])


def _digests(body: Mapping[str, Any], digests_raw: bytes | None) -> frozenset[bytes] | None:
    """The digests after the body (``None`` when they do not match its hash or size);
    without them (``digests_raw`` None: a PostgreSQL store lists its folded sessions in
    a table), the empty set."""
    if digests_raw is None:
        return frozenset()
    if hashlib.sha256(digests_raw).hexdigest() != body["session_digests_sha256"]:
        return None
    if len(digests_raw) % DIGEST_BYTES:
        return None
    digests = frozenset(
        digests_raw[i : i + DIGEST_BYTES] for i in range(0, len(digests_raw), DIGEST_BYTES)
    )  # a digest written twice makes the set shorter than n_sessions: refused
    return digests if len(digests) == int(body["n_sessions"]) else None


def sums_read_back(state: MonitorState) -> bool:
    """Whether ``state``'s sums pass :func:`state_from_body`'s finiteness checks: the packed
    columns are base64 text, which ``all_finite`` cannot see into, so a writer checks
    this first and never writes a state that would not read back (it would be rebuilt on
    every look)."""
    sums = state.sums
    peaks = sums.peak_log_e
    finite = all(np.isfinite(getattr(sums, key)).all() for key in SUM_FIELDS)
    return finite and not (np.isnan(peaks).any() or (peaks == np.inf).any())


def state_from_body(body: Mapping[str, Any], digests_raw: bytes | None) -> MonitorState | None:
    """The state a verified body and the digests after it describe; ``None`` for any
    inconsistency. ``digests_raw`` ``None``: the folded sessions are kept elsewhere (a
    PostgreSQL store's ``bias_monitor_sessions``), and the state holds none."""
    try:
        if body.get("format") != FORMAT or body.get("version") != VERSION:
            return None
        if not all_finite(body):
            return None
        digests = _digests(body, digests_raw)
        settings = MonitorSettings(**body["settings"])
        n_sessions, offset = int(body["n_sessions"]), int(body["offset"])
        if digests is None or n_sessions < 0 or offset < 0:
            return None
        names = tuple(str(name) for name in body["reviewers"])
        if len(set(names)) != len(names):
            return None
        shape = (len(names), len(BIASES))
        cells = body["cells"]
        sums = MonitorSums(
            **{key: _column(cells[key], shape, "<i8") for key in INT_COLUMNS},
            **{key: _column(cells[key], shape, "<f8") for key in FLOAT_COLUMNS},
        )
        peaks = sums.peak_log_e
        if not all(np.isfinite(getattr(sums, key)).all() for key in SUM_FIELDS):
            return None
        if np.isnan(peaks).any() or (peaks == np.inf).any():  # minus infinity: no estimate yet
            return None
        if (sums.n < 0).any() or (sums.n > n_sessions).any() or (sums.precision < 0).any():
            return None
        if (sums.confirmed_at < 0).any() or (sums.confirmed_at > sums.n).any():
            return None
        lines = [int(body[key]) for key in ("lines_read", "malformed_lines")]
        first_malformed = int(body["first_malformed_line"])
        if not 0 <= lines[1] <= lines[0] or not 0 <= first_malformed <= lines[0]:
            return None
        inode = body["inode"]
        return MonitorState(
            settings=settings,
            reviewers=names,
            sums=sums,
            n_sessions=n_sessions,
            session_digests=digests,
            digest_log=digests_raw or b"",
            inode=None if inode is None else int(inode),
            offset=offset,
            fingerprint=str(body["fingerprint"]),
            lines_read=lines[0],
            malformed_lines=lines[1],
            first_malformed_line=first_malformed,
        )
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


__all__ = ["FORMAT", "VERSION", "state_body", "state_from_body"]
