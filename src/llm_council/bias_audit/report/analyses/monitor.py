"""The anytime monitor's section of the report (ADR 0053): each reviewer watching or confirmed.

Read, never written: a JSONL store's sealed state (``<store>.monitor.json``) is verified
and brought up to the store's end in memory (rebuilt from the records in memory when it is
missing, forged, stale or for other settings); nothing is written beside the store, not
even a lock file. The report keeps its own copy of the folded state in its summary file
(ADR 0087: :mod:`.monitor_summary`), saved only when the report saves that file, and
continues the fold from whichever of the two covers more. A PostgreSQL store is folded
from its records, as ``bias-watch`` does.
The settings are the middleware's (``LLM_COUNCIL_MONITOR_DELTA0``/``_ALPHA``), so the
section shows the monitor the sessions answered with.

The monitor is a sequential test over *every* session of the store in written order, so
``--since``/``--until`` do not narrow it, and its confirmations are not findings of the
report's multiplicity procedure (ADR 0054): they carry their own guarantee, at most
``alpha`` chance that any (reviewer, bias) inside ``|effect| <= delta0`` is ever confirmed,
however often anyone looks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llm_council.bias_audit.records.monitor_fold import MonitorState
from llm_council.bias_audit.records.monitor_report_fold import report_states
from llm_council.bias_audit.records.monitor_status import monitor_status
from llm_council.bias_audit.records.monitor_update import monitor_settings
from llm_council.bias_audit.records.store_urls import is_postgres_url
from llm_council.errors import ConfigError, RecordError
from llm_council.stats.monitor.anytime_monitor import MonitorSettings

#: what the section says about its guarantee (every renderer prints it)
GUARANTEE_NOTE = (
    "Not part of the report's findings procedure: a confirmation carries its own anytime-"
    "valid guarantee (at most alpha chance that any reviewer's bias inside |effect| <= "
    "delta0 is ever confirmed, over all reviewers, biases and looks; ADR 0053), and covers "
    "every session in the store, whatever --since/--until."
)


@dataclass(frozen=True)
class MonitorRow:
    """One (reviewer, bias): ``status`` is ``confirmed``, ``watching`` or ``not estimated``
    (no session gave an estimate, e.g. slot preference in 3-member councils); the effect in
    points with its confidence-sequence bounds (valid at every look), the sessions that
    gave an estimate, and the session count at confirmation."""

    reviewer: str
    bias: str
    status: str
    sessions: int
    estimate: float
    low: float
    high: float
    confirmed_at_session: int | None
    direction: str = ""


@dataclass(frozen=True)
class MonitorSection:
    """The monitor over the store: ``status`` ``ok`` or ``unavailable`` (with ``reason``)."""

    status: str
    reason: str = ""
    sessions: int = 0
    delta0: float = float("nan")
    alpha: float = float("nan")
    confirmed: list[str] = field(default_factory=list)
    rows: list[MonitorRow] = field(default_factory=list)
    note: str = GUARANTEE_NOTE


def _number(value: Any) -> float:
    return float("nan") if value is None else float(value)


def section_from_state(state: MonitorState) -> MonitorSection:
    """The section of a monitor state (the same answer a session gets, as rows)."""
    answer = monitor_status(state)
    rows = []
    for reviewer, entry in answer["reviewers"].items():
        for bias, cell in entry["biases"].items():
            at = cell["confirmed_at_session"]
            status = "confirmed" if at else ("watching" if cell["sessions"] else "not estimated")
            low, high = cell["bounds"]
            rows.append(
                MonitorRow(
                    reviewer=reviewer,
                    bias=bias,
                    status=status,
                    sessions=int(cell["sessions"]),
                    estimate=_number(cell["estimate"]),
                    low=_number(low),
                    high=_number(high),
                    confirmed_at_session=at,
                    direction=cell.get("direction", ""),
                )
            )
    return MonitorSection(
        status="ok",
        sessions=int(answer["sessions"]),
        delta0=float(answer["delta0"]),
        alpha=float(answer["alpha"]),
        confirmed=list(answer["confirmed"]),
        rows=rows,
    )


def _read_state(
    store: str | Path, settings: MonitorSettings, saved: MonitorState | None
) -> tuple[MonitorState, MonitorState | None]:
    """The state at the store's end, and the state the summary file may keep (a JSONL
    store's only: a PostgreSQL store keeps its own)."""
    if is_postgres_url(store):
        from llm_council.bias_audit.records.postgres_monitor import postgres_monitor

        return postgres_monitor(str(store), settings), None
    path = Path(store).expanduser()
    if path.is_dir():
        raise RecordError(
            f"{path}: the monitor reads a JSONL or PostgreSQL store, not a Parquet directory"
        )
    return report_states(path, settings, saved)  # read only: the caller writes nothing


def report_monitor(
    store: str | Path, saved: MonitorState | None = None
) -> tuple[MonitorSection, MonitorState | None]:
    """The section for ``store`` (a JSONL path or a PostgreSQL URL), and the folded state
    the report may keep in its summary file (``None``: nothing to keep). ``saved``: the
    state the summary file kept (ADR 0087), used when it still matches the store and
    covers more than ``<store>.monitor.json``. The section is ``unavailable`` with the
    reason on a bad setting, a Parquet directory or an unreadable store."""
    try:
        settings = monitor_settings()
        state, kept = _read_state(store, settings, saved)
        return section_from_state(state), kept
    except ImportError as error:
        reason = f"a PostgreSQL store needs the 'postgres' extra ({error.name})"
        return MonitorSection(status="unavailable", reason=reason), None
    except (ConfigError, RecordError) as error:
        return MonitorSection(status="unavailable", reason=str(error).splitlines()[0]), None


def monitor_section(store: str | Path) -> MonitorSection:
    """The section for ``store`` from its records and ``<store>.monitor.json`` alone."""
    return report_monitor(store)[0]


__all__ = [
    "GUARANTEE_NOTE",
    "MonitorRow",
    "MonitorSection",
    "monitor_section",
    "report_monitor",
]
