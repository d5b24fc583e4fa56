"""The bias audit installed into a karpathy/llm-council app in one line, both endpoints.

The app's web frontend calls ``POST /api/conversations/{id}/message/stream``, which runs
the stages itself (``stage1_collect_responses``, ``stage2_collect_rankings``,
``calculate_aggregate_rankings``, ``stage3_synthesize_final``) and never calls
``run_full_council``; wrapping ``run_full_council`` alone audits the blocking endpoint and
silently nothing else. :func:`install_bias_audit` instead replaces, in the app's modules:

- ``stage2_collect_rankings`` (in ``backend.council``, which ``run_full_council`` reads at
  call time, and in ``backend.main``, which imported it by name): each reviewer is asked in
  its own seeded order (:mod:`.karpathy_stage2`) and the session is audited right there,
  so both endpoints are audited by the same code;
- ``query_models_parallel`` in ``backend.council``: narrowed to one reviewer during that
  reviewer's stage-2 call, unchanged otherwise;
- ``run_full_council`` in ``backend.main``: the blocking endpoint's ``metadata`` gets
  ``bias_audit``;
- ``storage.add_assistant_message``: the saved message keeps ``bias_audit`` (the app's
  storage keeps stage 1-3 only and would drop it).

Usage, in ``backend/main.py`` after its endpoints and before its ``if __name__ ==
"__main__":`` block (which starts the server and does not return)::

    from llm_council.integrations.karpathy import install_bias_audit
    install_bias_audit(__name__)

An audit that fails is logged and reported in ``bias_audit`` (``error``); the council's
answer always goes out (the middleware's isolation rule).
"""

from __future__ import annotations

import functools
import random
import secrets
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import structlog

from llm_council.bias_audit.plugin.display_order import shuffled_display_order
from llm_council.bias_audit.plugin.external_audit import audit_council
from llm_council.errors import ConfigError, CouncilError
from llm_council.integrations.karpathy_stage2 import narrowed_query, shuffled_stage2

log = structlog.get_logger("llm_council.integrations.karpathy")

_MARK = "__llm_council_bias_audit__"  # set on every function this module installs


class AuditedStage2(list):  # type: ignore[type-arg]
    """The app's stage-2 list, carrying its session's audit (JSON-encodes as a plain list)."""

    bias_audit: dict[str, Any] | None = None


def _module(main: ModuleType | str) -> ModuleType:
    if isinstance(main, ModuleType):
        return main
    module = sys.modules.get(main)
    if module is None:
        raise ConfigError(f"install_bias_audit: no imported module named {main!r}")
    return module


def _required(namespace: Mapping[str, Any], name: str, where: str) -> Any:
    value = namespace.get(name)
    if value is None:
        raise ConfigError(
            f"install_bias_audit: {where} has no {name!r}; is this a karpathy/llm-council app?"
        )
    return value


@dataclass
class Installation:
    """What :func:`install_bias_audit` replaced; :meth:`uninstall` puts the originals back."""

    replaced: list[tuple[dict[str, Any], str, Any]] = field(default_factory=list)

    def replace(self, namespace: dict[str, Any], name: str, new: Any) -> None:
        self.replaced.append((namespace, name, namespace[name]))
        setattr(new, _MARK, True)
        namespace[name] = new

    def uninstall(self) -> None:
        """Restore every replaced name, last first."""
        for namespace, name, original in reversed(self.replaced):
            namespace[name] = original
        self.replaced.clear()


def _audited_stage2(
    original: Callable[..., Any],
    council: dict[str, Any],
    store: str | Path | None,
    shuffle: bool,
    draw_seed: Callable[[], int],
) -> Callable[..., Any]:
    async def audit_only(
        user_query: str, stage1: Any, audit_stage2: Any, metadata: dict[str, Any]
    ) -> tuple[Any, Any, None, dict[str, Any]]:
        return stage1, audit_stage2, None, metadata

    audited = audit_council(audit_only, store=store)

    @functools.wraps(original)
    async def stage2_collect_rankings(
        user_query: str, stage1_results: list[dict[str, Any]], *args: Any, **kwargs: Any
    ) -> tuple[AuditedStage2, dict[str, str]]:
        def ask(query: str, shown: list[dict[str, Any]]) -> Any:
            return original(query, shown, *args, **kwargs)

        seed = draw_seed()
        members = [entry.get("model") for entry in stage1_results if isinstance(entry, Mapping)]
        reviewers = list(council.get("COUNCIL_MODELS") or members)
        unshuffled_because = None
        if shuffle:
            try:  # a stage 1 we cannot order (a model twice, no name) keeps the app's order
                shuffled_display_order(stage1_results, seed=seed)
            except CouncilError as error:
                unshuffled_because = str(error)
                log.warning("bias_audit_order_not_shuffled", error=unshuffled_because)
        if shuffle and unshuffled_because is None:
            outcome = await shuffled_stage2(ask, user_query, stage1_results, reviewers, seed)
            app_results, app_map = outcome.app_results, outcome.app_label_to_model
            audit_results, audit_map = outcome.audit_results, outcome.audit_label_to_model
            extra: dict[str, Any] = {
                "display_order_seed": seed,
                "display_orders": outcome.display_orders,
            }
        else:
            app_results, app_map = await ask(user_query, stage1_results)
            audit_results, audit_map, extra = app_results, app_map, {"display_order_seed": None}
            if unshuffled_because is not None:
                extra["display_order_error"] = unshuffled_because
        metadata: dict[str, Any] = {"label_to_model": audit_map}
        await audited(user_query, stage1_results, audit_results, metadata)
        bias_audit = dict(metadata.get("bias_audit") or {})
        bias_audit.update(extra)
        results = AuditedStage2(app_results)
        results.bias_audit = bias_audit
        return results, app_map

    return stage2_collect_rankings


def _with_audit_in_metadata(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def run_full_council(*args: Any, **kwargs: Any) -> Any:
        stage1, stage2, stage3, metadata = await original(*args, **kwargs)
        audit = getattr(stage2, "bias_audit", None)
        if audit is not None and isinstance(metadata, dict):
            metadata["bias_audit"] = audit
        return stage1, stage2, stage3, metadata

    return run_full_council


def _with_audit_saved(storage: ModuleType, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def add_assistant_message(conversation_id: str, *args: Any, **kwargs: Any) -> Any:
        returned = original(conversation_id, *args, **kwargs)
        stage2 = kwargs.get("stage2", args[1] if len(args) > 1 else None)
        audit = getattr(stage2, "bias_audit", None)
        if audit is None:
            return returned
        try:
            conversation = storage.get_conversation(conversation_id)
            conversation["messages"][-1]["bias_audit"] = audit
            storage.save_conversation(conversation)
        except Exception as error:  # the saved answer matters more than its audit
            log.warning("bias_audit_not_saved", conversation_id=conversation_id, error=str(error))
        return returned

    return add_assistant_message


def install_bias_audit(
    main: ModuleType | str,
    *,
    store: str | Path | None = None,
    shuffle: bool = True,
    seed: int | None = None,
) -> Installation:
    """Audit every session of the karpathy/llm-council app whose ``main`` module is given.

    ``main``: the app's ``backend.main`` module or its name (``__name__`` from inside it,
    which also works when the app runs as ``python -m backend.main``). ``store``: where
    records go (default: ``LLM_COUNCIL_BIAS_STORE``, else the user data directory).
    ``shuffle=False`` keeps the app's one fixed order (position and self-preference are
    then not testable per session). ``seed``: draw the sessions' order seeds from this
    seed (reproducible runs); by default each session's seed is fresh from ``secrets``
    and saved in ``bias_audit["display_order_seed"]``. Installing twice is a no-op; the returned
    :class:`Installation` undoes it. A module that is not karpathy-shaped is a
    :class:`~llm_council.errors.ConfigError` naming the missing function.
    """
    module = _module(main)
    namespace = vars(module)
    installation = Installation()
    stage2 = _required(namespace, "stage2_collect_rankings", module.__name__)
    if getattr(stage2, _MARK, False):
        log.info("bias_audit_already_installed", module=module.__name__)
        return installation
    full_council = _required(namespace, "run_full_council", module.__name__)
    code = getattr(full_council, "__code__", None)  # functools.wraps hides the wrapper's name
    if code is not None and code.co_qualname.startswith("audit_council."):
        # the README's earlier wrap: kept, it would audit every blocking session twice
        log.warning("bias_audit_replaces_audit_council_wrap", module=module.__name__)
        full_council = full_council.__wrapped__
    storage = _required(namespace, "storage", module.__name__)
    council: dict[str, Any] = full_council.__globals__  # backend.council's own namespace
    council_stage2 = _required(council, "stage2_collect_rankings", "the council module")
    add_message = _required(vars(storage), "add_assistant_message", "the storage module")
    if shuffle:
        query = _required(council, "query_models_parallel", "the council module")
        installation.replace(council, "query_models_parallel", narrowed_query(query))
    draw_seed: Callable[[], int] = (
        functools.partial(secrets.randbits, 63)
        if seed is None
        else functools.partial(random.Random(seed).getrandbits, 63)
    )
    audited = _audited_stage2(council_stage2, council, store, shuffle, draw_seed)
    installation.replace(council, "stage2_collect_rankings", audited)
    installation.replace(namespace, "stage2_collect_rankings", audited)
    installation.replace(namespace, "run_full_council", _with_audit_in_metadata(full_council))
    installation.replace(
        vars(storage), "add_assistant_message", _with_audit_saved(storage, add_message)
    )
    return installation
