"""A store's reviewer history without the session being audited.

Auditing a session that is already in the store (``run_bias_audit(..., history=store)``
on a stored session) would count its own residuals twice: once as the session, once in
its reviewers' history, so the drift check (ADR 0051) and the moderated variances would
lean on the very noise they test. The profiles are sums over sessions
(:mod:`~llm_council.bias_audit.records.reviewer_profiles`), so the session's own
contribution, recomputed from its stored lines exactly as the store summed it, is
subtracted.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llm_council.bias_audit.records.reviewer_profiles import (
    Profiles,
    ReviewerProfile,
    merge_profiles,
    records_profiles,
)
from llm_council.bias_audit.records.store_urls import is_postgres_url
from llm_council.bias_audit.session.noise_priors import history_profiles
from llm_council.errors import InputError

#: a sum left below this share of what it was is rounding, not information
_ROUNDING = 1e-9


def stored_session_profiles(store: Path, session_id: str) -> Profiles:
    """The contribution of session ``session_id`` to the store's profiles: each complete
    run of its lines (``session_n_records`` lines, as the store's summary counts it)
    summed as the store sums a session. ``{}`` when the store does not hold it.

    Streams the store once; only lines holding the id's JSON text are parsed, so the
    cost is a byte search over the file (about a second per 500 MB here).
    """
    needle = json.dumps(session_id).encode()
    profiles: Profiles = {}
    run: list[dict[str, Any]] = []

    def finish() -> None:
        nonlocal profiles, run
        expected = run[0].get("session_n_records") if run else None
        if run and (expected is None or expected == len(run)):
            profiles = merge_profiles(profiles, records_profiles(run))
        run = []

    size = store.stat().st_size
    with store.open("rb") as handle:
        for raw_line in handle:
            size -= len(raw_line)
            if size < 0 or not raw_line.endswith(b"\n"):
                break  # written after we started, or a torn last line
            record = _session_record(raw_line, needle, session_id)
            if record is None:
                finish()  # a session's lines are contiguous: another one began
                continue
            run.append(record)
    finish()
    return profiles


def _session_record(raw_line: bytes, needle: bytes, session_id: str) -> dict[str, Any] | None:
    """The line's record when it belongs to ``session_id``, else ``None``."""
    if needle not in raw_line:
        return None
    try:
        record = json.loads(raw_line)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("session_id") != session_id:
        return None
    return record


def _less(total: float, part: float) -> float:
    """``total - part``, with a difference within rounding of zero set to zero."""
    left = total - part
    return 0.0 if abs(left) <= _ROUNDING * max(abs(total), abs(part), 1.0) else left


def profile_without(profile: ReviewerProfile, part: ReviewerProfile) -> ReviewerProfile | None:
    """``profile`` minus ``part`` (one of the sessions summed into it), or ``None`` when
    no session is left."""
    sessions = profile.sessions - part.sessions
    if sessions <= 0:
        return None
    expectation = dict(profile.expectation)
    for name, value in part.expectation.items():
        left = _less(expectation.get(name, 0.0), value)
        if left == 0.0:
            expectation.pop(name, None)
        else:
            expectation[name] = left
    slot_adjusted = profile.slot_adjusted
    if slot_adjusted is not None and part.slot_adjusted is not None:
        slot_adjusted = profile_without(slot_adjusted, part.slot_adjusted)
    return ReviewerProfile(
        sessions,
        max(0.0, _less(profile.residual_sum_of_squares, part.residual_sum_of_squares)),
        max(0.0, _less(profile.residual_df, part.residual_df)),
        expectation,
        slot_adjusted,
    )


def profiles_without(
    history: Mapping[str, ReviewerProfile], session: Mapping[str, ReviewerProfile]
) -> Profiles:
    """``history`` minus one session's contribution (:func:`stored_session_profiles`):
    the sums are additive, so this is the history the store would hold without it."""
    left: Profiles = {}
    for name, profile in history.items():
        part = session.get(name)
        remaining = profile if part is None else profile_without(profile, part)
        if remaining is not None and math.isfinite(remaining.residual_sum_of_squares):
            left[name] = remaining
    return left


def history_without_session(
    history: str | Path | Mapping[str, ReviewerProfile] | None, session_id: str
) -> Profiles:
    """The profiles of store ``history`` (a JSONL path or a PostgreSQL URL:
    :func:`~llm_council.bias_audit.session.noise_priors.history_profiles`) without session
    ``session_id``'s own records. Checked before anything is read: a one-line
    ``InputError`` for an empty id, or for history given as profiles (they carry no
    sessions to look up)."""
    if not isinstance(session_id, str) or not session_id:
        raise InputError(f"session_id must be a non-empty string, got {session_id!r}")
    if isinstance(history, Mapping):
        raise InputError(
            f"session_id={session_id!r} needs history as a store path or URL (history is "
            "profiles given directly: leave its sessions out before passing it)"
        )
    profiles = history_profiles(history)
    if history is None or not profiles:
        return dict(profiles)
    if is_postgres_url(str(history)):
        from llm_council.bias_audit.session.postgres_history import postgres_session_profiles

        return profiles_without(profiles, postgres_session_profiles(str(history), session_id))
    path = Path(history).expanduser()
    return profiles_without(profiles, stored_session_profiles(path, session_id))
