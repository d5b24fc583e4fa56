"""Opt-in bias audit of the stage-2 reviewers: per-session statistics and JSONL records.

The reference design's names are here too (``run_bias_audit``, ``derive_position_mapping``,
``calculate_length_correlation``, ``audit_reviewer_calibration``,
``calculate_position_bias``, ``extract_scores_from_stage2``), so its users' imports work.
An outside council plugs in with ``audit_external`` / ``audit_council`` (ADR 0039).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_council.anonymize import derive_position_mapping
    from llm_council.bias_audit.plugin.display_order import (
        SessionDisplayOrder,
        shuffled_display_order,
    )
    from llm_council.bias_audit.plugin.external_audit import audit_council, audit_external
    from llm_council.bias_audit.records.jsonl_store import (
        IncompleteSessionWarning,
        MalformedRecordWarning,
        PartialWriteError,
        RecordReader,
        TornRecordWarning,
        append_records,
        read_records,
        store_path,
    )
    from llm_council.bias_audit.records.schema import SCHEMA_VERSION, ReviewRecord, upgrade_record
    from llm_council.bias_audit.records.stores import open_store, store_spec
    from llm_council.bias_audit.session.audit import audit_score_table, run_bias_audit
    from llm_council.bias_audit.session.reference_api import (
        audit_reviewer_calibration,
        calculate_length_correlation,
        calculate_position_bias,
    )
    from llm_council.bias_audit.session.result import BiasAuditResult
    from llm_council.bias_audit.session.stage2_scores import extract_scores_from_stage2
    from llm_council.bias_audit.session.thresholds import AuditThresholds, load_thresholds


# Public name -> module, imported on first use (PEP 562): ``llm-council bias-report``
# imports ``llm_council.bias_audit.report`` and so runs this file, and must not pay for the
# per-session audit (its statistics, the prompts, the config and providers) it never uses.
_MODULE_OF = {
    "audit_external": "llm_council.bias_audit.plugin.external_audit",
    "audit_council": "llm_council.bias_audit.plugin.external_audit",
    "SessionDisplayOrder": "llm_council.bias_audit.plugin.display_order",
    "shuffled_display_order": "llm_council.bias_audit.plugin.display_order",
    "derive_position_mapping": "llm_council.anonymize",
    "audit_score_table": "llm_council.bias_audit.session.audit",
    "run_bias_audit": "llm_council.bias_audit.session.audit",
    "SCHEMA_VERSION": "llm_council.bias_audit.records.schema",
    "ReviewRecord": "llm_council.bias_audit.records.schema",
    "upgrade_record": "llm_council.bias_audit.records.schema",
    "open_store": "llm_council.bias_audit.records.stores",
    "store_spec": "llm_council.bias_audit.records.stores",
    "audit_reviewer_calibration": "llm_council.bias_audit.session.reference_api",
    "calculate_length_correlation": "llm_council.bias_audit.session.reference_api",
    "calculate_position_bias": "llm_council.bias_audit.session.reference_api",
    "BiasAuditResult": "llm_council.bias_audit.session.result",
    "extract_scores_from_stage2": "llm_council.bias_audit.session.stage2_scores",
    "IncompleteSessionWarning": "llm_council.bias_audit.records.jsonl_store",
    "MalformedRecordWarning": "llm_council.bias_audit.records.jsonl_store",
    "PartialWriteError": "llm_council.bias_audit.records.jsonl_store",
    "RecordReader": "llm_council.bias_audit.records.jsonl_store",
    "TornRecordWarning": "llm_council.bias_audit.records.jsonl_store",
    "append_records": "llm_council.bias_audit.records.jsonl_store",
    "read_records": "llm_council.bias_audit.records.jsonl_store",
    "store_path": "llm_council.bias_audit.records.jsonl_store",
    "AuditThresholds": "llm_council.bias_audit.session.thresholds",
    "load_thresholds": "llm_council.bias_audit.session.thresholds",
}


__all__ = [
    "SessionDisplayOrder",
    "audit_council",
    "audit_external",
    "shuffled_display_order",
    "IncompleteSessionWarning",
    "PartialWriteError",
    "open_store",
    "store_spec",
    "SCHEMA_VERSION",
    "AuditThresholds",
    "BiasAuditResult",
    "MalformedRecordWarning",
    "RecordReader",
    "ReviewRecord",
    "TornRecordWarning",
    "append_records",
    "audit_reviewer_calibration",
    "audit_score_table",
    "calculate_length_correlation",
    "calculate_position_bias",
    "derive_position_mapping",
    "extract_scores_from_stage2",
    "load_thresholds",
    "read_records",
    "run_bias_audit",
    "store_path",
    "upgrade_record",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
