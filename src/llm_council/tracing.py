"""``llm_council.tracing``, a documented import path (shim, ADR 0066).

Only the documented names; the module is :mod:`llm_council.infra.tracing` now.
"""

from __future__ import annotations

from llm_council.infra.tracing import (
    use_tracer_provider,
)

__all__ = [
    "use_tracer_provider",
]
