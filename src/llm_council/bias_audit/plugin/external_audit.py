"""``audit_external`` and ``audit_council``: the audit and its records for an outside council.

``audit_external(stage1, stage2, label_to_model)`` takes karpathy/llm-council's shapes or
the reference design's (see :mod:`.external_session` for what it decides), runs the same
per-session audit our own council's middleware runs, appends the session's records to the
record store, and returns the :class:`BiasAuditResult`. ``audit_council(fn)`` wraps a
function returning ``(stage1, stage2, stage3, metadata)`` with ``metadata["label_to_model"]``
(karpathy's ``run_full_council``), so an app changes one line.

Switches, read at each call (ADR 0039):

- ``LLM_COUNCIL_BIAS_AUDIT`` (ours) or, when it is unset, the reference's
  ``BIAS_AUDIT_ENABLED``: calling these functions is the opt-in, so an unset switch means
  on; ``false`` means off: no audit, no records, ``audit_external`` returns ``None`` and
  ``audit_council`` puts ``{"enabled": false, "records_written": 0, "disabled_by": ...}``
  in the metadata. A word that is not true/false is a ``ConfigError``.
- the reference's ``BIAS_PERSISTENCE_ENABLED=false``: the audit runs, nothing is written.
- the store: the ``store`` argument, else ``LLM_COUNCIL_BIAS_STORE``, else the default
  JSONL path (``bias_records.jsonl`` in the user data directory).

A ``session_id`` the JSONL store already holds is refused (:mod:`.session_ids`): its
sessions would all be dropped by the report. A session none of whose reviews could be
read (every one ``unparseable`` or ``missing``) is logged as a warning
(``bias_audit_no_review_read``) and, under ``audit_council``, noted in
``metadata["bias_audit"]["warning"]``: its records are written, but it tests nothing.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from collections.abc import Callable, Coroutine, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import structlog

from llm_council.bias_audit.middleware import ENABLE_VARIABLE, REFERENCE_ENABLE_VARIABLE
from llm_council.bias_audit.plugin.external_session import external_event
from llm_council.bias_audit.plugin.session_ids import store_has_session
from llm_council.bias_audit.records.jsonl_store import check_store_path
from llm_council.bias_audit.records.query_hash import env_flag
from llm_council.bias_audit.records.store_urls import is_postgres_url
from llm_council.bias_audit.records.stores import store_spec
from llm_council.bias_audit.session.result import BiasAuditResult
from llm_council.bias_audit.session.session_audit import audit_session_result
from llm_council.errors import CouncilError, InputError

PERSISTENCE_VARIABLE = "BIAS_PERSISTENCE_ENABLED"  # the reference council's record switch

log = structlog.get_logger("llm_council.bias_audit")

_T = TypeVar("_T")


def audit_disabled_by(environ: Mapping[str, str] | None = None) -> str | None:
    """The switch that turns the audit off (``"LLM_COUNCIL_BIAS_AUDIT=false"``), or None."""
    env = os.environ if environ is None else environ
    for variable in (ENABLE_VARIABLE, REFERENCE_ENABLE_VARIABLE):
        if env.get(variable, "").strip():
            return None if env_flag(variable, env) else f"{variable}={env[variable].strip()}"
    return None


def persistence_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Records are written unless ``BIAS_PERSISTENCE_ENABLED`` says false."""
    env = os.environ if environ is None else environ
    return not env.get(PERSISTENCE_VARIABLE, "").strip() or env_flag(PERSISTENCE_VARIABLE, env)


def _run_to_end(coroutine: Coroutine[Any, Any, _T]) -> _T:
    """Run ``coroutine`` from synchronous code, inside a running event loop or not."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    # called synchronously from async code (a FastAPI handler, say): a loop of its own in a
    # worker thread, since this thread's loop is busy running the caller
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def _audit(
    stage1: Any,
    stage2: Any,
    label_to_model: Any,
    *,
    store: str | Path | None,
    session_id: str | None,
    council_id: str | None,
    score_scale: Any,
    query: str | None,
) -> tuple[BiasAuditResult, dict[str, Any]] | None:
    disabled_by = audit_disabled_by()
    if disabled_by is not None:
        return None
    event = external_event(
        stage1,
        stage2,
        label_to_model,
        session_id=session_id,
        council_id=council_id,
        score_scale=score_scale,
        query=query,
    )
    write = persistence_enabled()
    _refuse_a_store_that_is_not_a_file(store)
    if write and session_id is not None:
        _refuse_a_reused_session_id(event.session_id, store)
    result, audit = await audit_session_result(event, store=store, write=write)
    unread = _unread_reviews_warning(event.reviews)
    if unread is not None:
        log.warning("bias_audit_no_review_read", session_id=event.session_id, reason=unread)
        audit["warning"] = unread
    audit["session_id"] = event.session_id
    audit["council_config_hash"] = event.council_config_hash
    return result, audit


def _refuse_a_store_that_is_not_a_file(store: str | Path | None) -> None:
    """The store's own one-line ``RecordError`` for a JSONL store path that is a directory
    or a FIFO, before anything reads it: its history read hung on a FIFO (the middleware
    runs the same check before a session's first model call)."""
    spec = str(store) if store is not None else store_spec()
    if not is_postgres_url(spec):
        check_store_path(Path(spec).expanduser())


def _refuse_a_reused_session_id(session_id: str, store: str | Path | None) -> None:
    """A one-line ``InputError`` when the JSONL store already holds ``session_id``
    (a PostgreSQL store refuses a repeated session in its own transaction)."""
    spec = str(store) if store is not None else store_spec()
    if is_postgres_url(spec):
        return
    path = Path(spec).expanduser()
    if store_has_session(path, session_id):
        raise InputError(
            f"session_id {session_id!r:.80} is already in the record store {str(path)!r}: "
            "reusing it would make the report drop both sessions; pass a new id, or none "
            "for a random one"
        )


_READ = ("json", "final_ranking")


def _unread_reviews_warning(reviews: Any) -> str | None:
    """Why this session tests nothing, when none of its reviews could be read."""
    if any(review.parse_status in _READ for review in reviews):
        return None
    statuses = sorted({review.parse_status for review in reviews})
    return (
        f"no review of this session could be read ({len(reviews)} reviews: "
        f"{', '.join(statuses) or 'none given'}); check that parsed_ranking names the "
        "labels of label_to_model (e.g. 'Response A'); its records test nothing"
    )


def audit_external(
    stage1: Any,
    stage2: Any,
    label_to_model: Any,
    *,
    store: str | Path | None = None,
    session_id: str | None = None,
    council_id: str | None = None,
    score_scale: Any = None,
    query: str | None = None,
) -> BiasAuditResult | None:
    """Audit one outside session and append its records; ``None`` when the audit is off.

    ``stage1``: ``[{"model", "response"}]``. ``stage2``: ``[{"model", "ranking",
    "parsed_ranking"}]`` with ``parsed_ranking`` a list of labels (karpathy's) or a dict
    with ``ranking`` / ``scores`` / ``abstained`` (the reference's). ``label_to_model``:
    one shared ``{label: model}`` (or ``{label: {"model", "display_index"}}``), or one map
    per reviewer (ours: ``{reviewer: {label: ...}}``). ``score_scale`` (default 1-10)
    is the scale of the reviewers' own scores; rank-only reviews get rank points on
    (1, N). ``query``: only for the opt-in ``query_hash`` (HMAC under your secret).
    Bad shapes raise a one-line :class:`~llm_council.errors.InputError`, a store path that
    is a directory or a FIFO a one-line ``RecordError`` (before anything reads it); a store
    that fails while writing is reported in the log and the result is still returned.
    """
    outcome = _run_to_end(
        _audit(
            stage1,
            stage2,
            label_to_model,
            store=store,
            session_id=session_id,
            council_id=council_id,
            score_scale=score_scale,
            query=query,
        )
    )
    if outcome is None:
        return None
    result, audit = outcome
    if "record_store_error" in audit:
        log.warning("bias_records_not_written", error=audit["record_store_error"])
    return result


def _query_of(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> str | None:
    """The council's query: its first positional text argument, or ``user_query``/``query``."""
    for candidate in (*args[:1], kwargs.get("user_query"), kwargs.get("query")):
        if isinstance(candidate, str):
            return candidate
    return None


async def _audit_outcome(outcome: Any, query: str | None, store: str | Path | None) -> Any:
    """Attach ``metadata["bias_audit"]`` to the council's 4-tuple; never fails the council."""
    try:
        stage1, stage2, _stage3, metadata = outcome
        if isinstance(stage1, str | bytes | Mapping):  # four of something else, not stages
            raise ValueError
    except (TypeError, ValueError):
        raise CouncilError(
            "audit_council: the wrapped function must return (stage1, stage2, stage3, "
            f"metadata), got {type(outcome).__name__}"
        ) from None
    if not isinstance(metadata, dict):
        raise CouncilError(f"audit_council: metadata must be a dict, got {type(metadata).__name__}")
    try:
        disabled_by = audit_disabled_by()
        if disabled_by is not None:
            metadata["bias_audit"] = {
                "enabled": False,
                "records_written": 0,
                "disabled_by": disabled_by,
            }
            return outcome
        if "label_to_model" not in metadata:
            raise InputError(
                "audit_council: metadata has no 'label_to_model' (which model each reviewer "
                "saw under each label); return it, or call audit_external yourself"
            )
        audited = await _audit(
            stage1,
            stage2,
            metadata["label_to_model"],
            store=store,
            session_id=metadata.get("session_id"),
            council_id=None,
            score_scale=None,
            query=query,
        )
    except CouncilError as error:  # bad shapes, bad config: reported, the answer still goes out
        log.warning("bias_audit_failed", error=str(error))
        metadata["bias_audit"] = {"records_written": 0, "error": str(error)}
        return outcome
    except Exception as error:  # a bug in the audit: the council's answer still goes out
        # (issue 37 A.8: anything but a CouncilError used to replace the answer with a
        # traceback); the type names the bug, the text is ours, never the answers'
        log.exception("bias_audit_crashed", error_type=type(error).__name__)
        metadata["bias_audit"] = {
            "records_written": 0,
            "error": f"the audit failed ({type(error).__name__}); the log has the traceback",
        }
        return outcome
    if audited is not None:
        metadata["bias_audit"] = audited[1]
    return outcome


def audit_council(fn: Callable[..., Any] | None = None, *, store: str | Path | None = None) -> Any:
    """Wrap a council function returning ``(stage1, stage2, stage3, metadata)``.

    The wrapper returns the same object, with ``metadata["bias_audit"]`` set to the
    audit's JSON plus ``records_written``, ``record_store`` (password redacted),
    ``session_id`` and ``council_config_hash``. Works on ``async def`` and plain functions;
    ``label_to_model`` is read from ``metadata["label_to_model"]`` (karpathy's), and
    ``metadata["session_id"]`` is used when present. An audit that cannot run (bad shapes,
    a bad switch) puts ``{"records_written": 0, "error": ...}`` there and logs a warning:
    the council's answer is never lost to its audit. Use as ``audit_council(fn)`` or
    ``@audit_council(store="...")``.
    """
    if fn is None:
        return functools.partial(audit_council, store=store)
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def audited_async(*args: Any, **kwargs: Any) -> Any:
            outcome = await fn(*args, **kwargs)
            return await _audit_outcome(outcome, _query_of(args, kwargs), store)

        return audited_async

    @functools.wraps(fn)
    def audited(*args: Any, **kwargs: Any) -> Any:
        outcome = fn(*args, **kwargs)
        return _run_to_end(_audit_outcome(outcome, _query_of(args, kwargs), store))

    return audited
