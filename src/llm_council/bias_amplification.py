"""The reference design's ``llm_council.bias_amplification`` at its import path (shim, ADR 0066).

Implemented in :mod:`llm_council.bias_audit.reference.amplification`.
Every other attribute read, write or delete goes to the implementation, so a test
that patches a private name here patches what the implementation calls (ADR 0039).
"""

from __future__ import annotations

from llm_council.bias_audit.reference import amplification as _implementation
from llm_council.bias_audit.reference.amplification import (
    SessionAgreement,
    SessionDecomposition,
    amplification_report,
    format_amplification_report,
    session_agreement_decomposition,
)
from llm_council.bias_audit.reference.forwarding import forward_to_implementation

__all__ = [
    "SessionAgreement",
    "SessionDecomposition",
    "amplification_report",
    "format_amplification_report",
    "session_agreement_decomposition",
]

forward_to_implementation(__name__, _implementation)
