"""The plug-in point: the council emits events, middleware subscribes.

The core never imports a middleware. Middleware classes are found through the
``llm_council.middleware`` entry-point group (or passed in explicitly), each decides in
:meth:`Middleware.enabled` whether it runs (from config or environment), and each may
add exactly one key, its ``name``, to the session metadata. A hook that raises is
logged and listed in ``metadata["middleware_errors"]``; the session still completes.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, ClassVar

import structlog

from llm_council.debiased_aggregate import ReviewerAdjustment
from llm_council.results import MemberAnswer, ModelStanding, Review, Synthesis

ENTRY_POINT_GROUP = "llm_council.middleware"

log = structlog.get_logger("llm_council.middleware")


@dataclass(frozen=True)
class SessionStarted:
    session_id: str
    query: str
    members: tuple[str, ...]
    council_config_hash: str
    seed: int | None


@dataclass(frozen=True)
class Stage1Completed:
    session_id: str
    answers: tuple[MemberAnswer, ...]


@dataclass(frozen=True)
class Stage2Completed:
    session_id: str
    answers: tuple[MemberAnswer, ...]
    reviews: tuple[Review, ...]
    standings: tuple[ModelStanding, ...]


@dataclass(frozen=True)
class AdjustmentsRequested:
    """The council asks for per-reviewer bias adjustments (``aggregation = "debiased"``)."""

    session_id: str
    council_config_hash: str
    reviewers: tuple[str, ...]


@dataclass(frozen=True)
class SessionCompleted:
    session_id: str
    query: str
    council_config_hash: str
    answers: tuple[MemberAnswer, ...]
    reviews: tuple[Review, ...]
    standings: tuple[ModelStanding, ...]
    synthesis: Synthesis
    started_at: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


class Middleware:
    """Base class: override the hooks you need. Hooks are async and must not mutate events."""

    #: the metadata key this middleware may fill from :meth:`on_session_end`
    name: ClassVar[str] = ""

    def enabled(self) -> bool:
        return True

    def check_config(self) -> None:
        """Raise :class:`~llm_council.errors.ConfigError` if this middleware cannot run.

        Called before any model call, and not isolated: a configuration mistake stops
        the session before it costs anything, instead of surfacing after it.
        """
        return None

    async def on_session_start(self, event: SessionStarted) -> None:
        return None

    async def on_stage1_complete(self, event: Stage1Completed) -> None:
        return None

    async def on_stage2_complete(self, event: Stage2Completed) -> None:
        return None

    async def on_session_end(self, event: SessionCompleted) -> dict[str, Any] | None:
        return None

    async def reviewer_adjustments(
        self, event: AdjustmentsRequested
    ) -> Mapping[str, ReviewerAdjustment] | None:
        """Per-reviewer bias adjustments for the debiased aggregate (ADR 0046), or None
        when this middleware supplies none. Called only when the council asks for them."""
        return None

    def supplies_adjustments(self) -> bool:
        """Whether this middleware overrides :meth:`reviewer_adjustments`."""
        return type(self).reviewer_adjustments is not Middleware.reviewer_adjustments


@functools.cache
def _registered_middleware_classes() -> tuple[type[Middleware], ...]:
    """The classes of the entry-point group, loaded once per process.

    Scanning installed distributions costs a few milliseconds, more than the bias audit
    itself, so it is not repeated for every session.
    """
    classes: list[type[Middleware]] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            classes.append(ep.load())
        except Exception as error:  # a broken plug-in must not stop the council
            log.warning("middleware_load_failed", entry_point=ep.name, error=str(error))
    return tuple(classes)


def discover_middleware() -> list[Middleware]:
    """Instantiate every registered middleware whose ``enabled()`` is true (checked per call,
    so switching one on or off through the environment takes effect at the next session)."""
    found: list[Middleware] = []
    for middleware_class in _registered_middleware_classes():
        try:
            instance = middleware_class()
        except Exception as error:
            log.warning(
                "middleware_init_failed", middleware=middleware_class.__name__, error=str(error)
            )
            continue
        if instance.enabled():
            found.append(instance)
    return found


class MiddlewareDispatcher:
    """Calls each middleware's hook in turn, isolating failures."""

    def __init__(self, middleware: Iterable[Middleware]) -> None:
        self.middleware: Sequence[Middleware] = list(middleware)
        self.errors: list[dict[str, str]] = []
        self.timings_ms: dict[str, float] = {}

    def check_config(self) -> None:
        """Let every middleware refuse a bad configuration before the session starts."""
        for instance in self.middleware:
            instance.check_config()

    async def _call(self, instance: Middleware, hook: str, event: object) -> Any:
        started = time.perf_counter()
        try:
            return await getattr(instance, hook)(event)
        except Exception as error:
            label = instance.name or type(instance).__name__
            log.warning("middleware_failed", middleware=label, hook=hook, error=str(error))
            self.errors.append(
                {"middleware": label, "hook": hook, "error": f"{type(error).__name__}: {error}"}
            )
            return None
        finally:
            key = instance.name or type(instance).__name__
            elapsed_ms = (time.perf_counter() - started) * 1000
            self.timings_ms[key] = self.timings_ms.get(key, 0.0) + elapsed_ms

    async def session_started(self, event: SessionStarted) -> None:
        for instance in self.middleware:
            await self._call(instance, "on_session_start", event)

    async def stage1_completed(self, event: Stage1Completed) -> None:
        for instance in self.middleware:
            await self._call(instance, "on_stage1_complete", event)

    async def stage2_completed(self, event: Stage2Completed) -> None:
        for instance in self.middleware:
            await self._call(instance, "on_stage2_complete", event)

    def supplies_adjustments(self) -> bool:
        return any(instance.supplies_adjustments() for instance in self.middleware)

    async def reviewer_adjustments(
        self, event: AdjustmentsRequested
    ) -> dict[str, ReviewerAdjustment] | None:
        """The first middleware's non-None adjustments (each value checked to be a finite
        :class:`ReviewerAdjustment`), or None when none supplied any."""
        for instance in self.middleware:
            if not instance.supplies_adjustments():
                continue
            supplied = await self._call(instance, "reviewer_adjustments", event)
            if supplied is None:
                continue
            label = instance.name or type(instance).__name__
            if not isinstance(supplied, Mapping):
                self.errors.append(
                    {
                        "middleware": label,
                        "hook": "reviewer_adjustments",
                        "error": f"returned {type(supplied).__name__}, not a mapping",
                    }
                )
                continue
            valid = {
                str(reviewer): adjustment
                for reviewer, adjustment in supplied.items()
                if isinstance(adjustment, ReviewerAdjustment) and adjustment.is_finite()
            }
            if len(valid) != len(supplied):
                self.errors.append(
                    {
                        "middleware": label,
                        "hook": "reviewer_adjustments",
                        "error": f"{len(supplied) - len(valid)} adjustment(s) not finite "
                        "ReviewerAdjustment values, left out",
                    }
                )
            return valid
        return None

    async def session_completed(self, event: SessionCompleted) -> dict[str, Any]:
        """Return the metadata keys the middleware added (one per middleware at most)."""
        added: dict[str, Any] = {}
        for instance in self.middleware:
            contribution = await self._call(instance, "on_session_end", event)
            if contribution is None:
                continue
            key = instance.name or type(instance).__name__
            if key in added or key in event.metadata:
                self.errors.append(
                    {
                        "middleware": key,
                        "hook": "on_session_end",
                        "error": f"metadata key '{key}' already taken",
                    }
                )
                continue
            added[key] = contribution
        return added
