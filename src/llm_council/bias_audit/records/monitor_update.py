"""The monitor after a session: settings from the environment, the state brought up to
date, and an answer that is ``unavailable`` (with the reason) instead of an error.

Settings: ``LLM_COUNCIL_MONITOR_DELTA0`` (points, default 0.5) and
``LLM_COUNCIL_MONITOR_ALPHA`` (default 0.05). A JSONL store whose state must be rebuilt
from more than :data:`REBUILD_IN_SESSION_MAX_BYTES` is rebuilt in a background thread;
that session's answer says so. A PostgreSQL store's state is folded by the writer in the
session's transaction; the answer reads it, and rebuilds it from the records when it does
not check (:mod:`.postgres_monitor`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import structlog

from llm_council.bias_audit.records.background_rebuild import rebuild_once_in_background
from llm_council.bias_audit.records.monitor_append import appended_session
from llm_council.bias_audit.records.monitor_sessions import MonitoredRecord
from llm_council.bias_audit.records.monitor_settings import (  # re-exported: names kept
    ALPHA_VARIABLE as ALPHA_VARIABLE,
)
from llm_council.bias_audit.records.monitor_settings import (
    DELTA0_VARIABLE as DELTA0_VARIABLE,
)
from llm_council.bias_audit.records.monitor_settings import (
    monitor_settings as monitor_settings,
)
from llm_council.bias_audit.records.monitor_state import (
    MonitorRebuilding,
    current_monitor,
    update_monitor,
)
from llm_council.bias_audit.records.monitor_status import monitor_status, monitor_unavailable
from llm_council.bias_audit.records.store_urls import is_postgres_url
from llm_council.errors import ConfigError, RecordError
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

#: as for the reviewer profiles (ADR 0045): about 5 s of reading on this project's machine
REBUILD_IN_SESSION_MAX_BYTES = 32 * 1024 * 1024

log = structlog.get_logger("llm_council.bias_audit")


def monitor_after_session(
    spec: str, appended: Sequence[MonitoredRecord] | None = None
) -> dict[str, Any]:
    """The monitor's answer for the store ``spec`` after a session was appended to it.

    ``appended``: that session's records as this process wrote them; a JSONL store's
    state then folds them from memory when the store's tail is exactly their lines
    (:mod:`.monitor_append`), and reads the tail otherwise."""
    try:
        settings = monitor_settings()
    except ConfigError as error:
        return monitor_unavailable(str(error))
    if is_postgres_url(spec):
        return _postgres_answer(spec, settings)
    path = Path(spec).expanduser()
    try:
        session = appended_session(appended) if appended else None
        update = update_monitor(
            path, settings, max_read_bytes=REBUILD_IN_SESSION_MAX_BYTES, appended=session
        )
        # how often the tail had to be read instead: other writers, killed sessions
        log.debug("bias_monitor_updated", path=update.path)
        state = update.state
    except MonitorRebuilding as error:
        rebuild_once_in_background(
            f"monitor:{path.absolute()}",
            lambda: current_monitor(path, settings),
            lambda failure: log.warning("bias_monitor_not_rebuilt", error=str(failure)),
            thread_name="monitor-rebuild",
        )
        return monitor_unavailable(str(error))
    except RecordError as error:
        return monitor_unavailable(str(error))
    return monitor_status(state)


#: a PostgreSQL state that does not check is rebuilt from every record; past this many
#: records (about 400 five-member sessions) the session answers ``unavailable`` and points
#: at ``bias-watch``, which has the full limit (and saves the rebuilt state)
SESSION_POSTGRES_MAX_RECORDS = 10_000


def _postgres_answer(url: str, settings: MonitorSettings) -> dict[str, Any]:
    """A PostgreSQL store's monitor: its saved state, or rebuilt and saved while the store
    is small enough to re-read in a session."""
    try:
        from llm_council.bias_audit.records.postgres_monitor import postgres_monitor
    except ImportError as error:
        return monitor_unavailable(f"a PostgreSQL store needs the 'postgres' extra ({error.name})")
    try:
        state = postgres_monitor(url, settings, max_records=SESSION_POSTGRES_MAX_RECORDS, save=True)
    except RecordError as error:
        return monitor_unavailable(
            f"{error}; run `llm-council bias-watch --store URL` (cron) for this store"
        )
    return monitor_status(state)
