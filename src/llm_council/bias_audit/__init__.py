"""Opt-in bias audit of the stage-2 reviewers: per-session statistics and JSONL records."""

from __future__ import annotations

from llm_council.bias_audit.audit import audit_score_table, run_bias_audit
from llm_council.bias_audit.record_schema import SCHEMA_VERSION, ReviewRecord, upgrade_record
from llm_council.bias_audit.result import BiasAuditResult
from llm_council.bias_audit.store import (
    MalformedRecordWarning,
    RecordReader,
    TornRecordWarning,
    append_records,
    read_records,
    store_path,
)
from llm_council.bias_audit.thresholds import AuditThresholds, load_thresholds

__all__ = [
    "SCHEMA_VERSION",
    "AuditThresholds",
    "BiasAuditResult",
    "MalformedRecordWarning",
    "RecordReader",
    "ReviewRecord",
    "TornRecordWarning",
    "append_records",
    "audit_score_table",
    "load_thresholds",
    "read_records",
    "run_bias_audit",
    "store_path",
    "upgrade_record",
]
