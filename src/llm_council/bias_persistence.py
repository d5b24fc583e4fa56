"""The reference design's ``llm_council.bias_persistence`` at its import path (shim, ADR 0066).

Implemented in :mod:`llm_council.bias_audit.reference.persistence`.
Every other attribute read, write or delete goes to the implementation, so a test
that patches a private name here patches what the implementation calls (ADR 0039).
"""

from __future__ import annotations

from llm_council.bias_audit.reference import persistence as _implementation
from llm_council.bias_audit.reference.forwarding import forward_to_implementation
from llm_council.bias_audit.reference.persistence import (
    BIAS_PERSISTENCE_ENABLED,
    BiasMetricRecord,
    ConsentLevel,
    append_bias_records,
    create_bias_records_from_session,
    from_review_record,
    get_bias_store_stats,
    hash_query_if_enabled,
    persist_session_bias_data,
    read_bias_records,
)

__all__ = [
    "BIAS_PERSISTENCE_ENABLED",
    "BiasMetricRecord",
    "ConsentLevel",
    "append_bias_records",
    "create_bias_records_from_session",
    "from_review_record",
    "get_bias_store_stats",
    "hash_query_if_enabled",
    "persist_session_bias_data",
    "read_bias_records",
]

forward_to_implementation(__name__, _implementation)
