"""One council session's fixed inputs and its stage clock (ADR 0069).

:class:`SessionContext` is what every stage of ``run_full_council`` reads (the query, the
config, the seed, the call gate, ...), frozen, so a stage takes one argument instead of
eight. :meth:`StageClock.stage` is the sequence each stage used to write out by hand:
its wall time, its tracing span and its ``<stage>_done`` log line.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from llm_council.config import CouncilConfig
from llm_council.infra import tracing
from llm_council.middleware import MiddlewareDispatcher
from llm_council.providers.calling import CallGate


@dataclass(frozen=True)
class SessionContext:
    """What every stage of one session reads; built once, after ``session_started``."""

    session_id: str
    query: str
    config: CouncilConfig
    config_hash: str  # once per session: the span and the records share it
    seed: int
    dispatcher: MiddlewareDispatcher
    gate: CallGate  # the counted calls' slots, deadline and costs
    started_at: str  # ISO time the session started (milliseconds, UTC)
    started_perf: float  # ``time.perf_counter()`` at the same moment, for ``duration_s``
    log: Any  # the module's structlog logger bound to ``session_id``


@dataclass
class StageRun:
    """What a running stage reports: attributes for its span, fields for its log line."""

    trace: tracing.SpanRecorder | None = None
    log_fields: dict[str, Any] | None = None

    def set(self, attributes: Mapping[str, Any]) -> None:
        """Set attributes on the stage's span (nothing for a stage without one)."""
        if self.trace is not None:
            self.trace.set(attributes)

    def log(self, **fields: Any) -> None:
        """Fields of the ``<stage>_done`` line logged when the stage ends (with its duration)."""
        self.log_fields = fields


class StageClock:
    """Each stage's wall time in seconds, by stage key, in the order the stages ran."""

    def __init__(self, log: Any) -> None:
        self.durations: dict[str, float] = {}
        self._log = log

    @contextmanager
    def stage(self, key: str, span: str | None = None) -> Iterator[StageRun]:
        """Time the block as ``durations[key]``, inside the span ``span`` when given.

        When the block ends normally, logs ``<key>_done`` with the fields the block gave
        :meth:`StageRun.log` (no line when it gave none) and ``duration_s``. A block that
        raises records no duration and logs nothing; its span records the error.
        """
        start = time.perf_counter()
        run = StageRun()
        with tracing.stage_span(span) if span is not None else nullcontext() as trace:
            run.trace = trace
            yield run
        self.durations[key] = time.perf_counter() - start
        if run.log_fields is not None:
            duration_s = round(self.durations[key], 3)
            self._log.info(f"{key}_done", **run.log_fields, duration_s=duration_s)
