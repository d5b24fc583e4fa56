"""llm-council: several LLMs answer, review each other anonymously, and a chairman synthesizes.

The public names are re-exported here; everything else may change.

Names are imported on first use (PEP 562), so ``import llm_council`` (and every CLI
command, which imports this package first) does not build pydantic models, structlog
configuration or scipy until a name that needs them is touched.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from llm_council.anonymize import assign_labels, derive_position_mapping
    from llm_council.config import CouncilConfig, CouncilMember, load_council_config
    from llm_council.council import run_full_council
    from llm_council.debiased_aggregate import ReviewerAdjustment
    from llm_council.errors import (
        ConfigError,
        CouncilError,
        InputError,
        MissingCredentialsError,
        ProviderError,
        RecordError,
    )
    from llm_council.middleware import (
        AdjustmentsRequested,
        Middleware,
        SessionCompleted,
        SessionStarted,
        Stage1Completed,
        Stage2Completed,
    )
    from llm_council.providers.base import Completion, CompletionRequest, Message, Provider
    from llm_council.providers.calling import RetryPolicy
    from llm_council.providers.registry import create_provider, register_provider
    from llm_council.ranking_parser import ParsedReview, parse_review
    from llm_council.results import (
        CandidateScore,
        CouncilResult,
        LabelAssignment,
        MemberAnswer,
        ModelStanding,
        Review,
        Synthesis,
    )

_SOURCES: dict[str, str] = {
    "AdjustmentsRequested": "llm_council.middleware",
    "CandidateScore": "llm_council.results",
    "Completion": "llm_council.providers.base",
    "CompletionRequest": "llm_council.providers.base",
    "ConfigError": "llm_council.errors",
    "CouncilConfig": "llm_council.config",
    "CouncilError": "llm_council.errors",
    "CouncilMember": "llm_council.config",
    "CouncilResult": "llm_council.results",
    "InputError": "llm_council.errors",
    "LabelAssignment": "llm_council.results",
    "MemberAnswer": "llm_council.results",
    "Message": "llm_council.providers.base",
    "Middleware": "llm_council.middleware",
    "MissingCredentialsError": "llm_council.errors",
    "ModelStanding": "llm_council.results",
    "ParsedReview": "llm_council.ranking_parser",
    "Provider": "llm_council.providers.base",
    "ProviderError": "llm_council.errors",
    "RecordError": "llm_council.errors",
    "RetryPolicy": "llm_council.providers.calling",
    "Review": "llm_council.results",
    "ReviewerAdjustment": "llm_council.debiased_aggregate",
    "SessionCompleted": "llm_council.middleware",
    "SessionStarted": "llm_council.middleware",
    "Stage1Completed": "llm_council.middleware",
    "Stage2Completed": "llm_council.middleware",
    "Synthesis": "llm_council.results",
    "assign_labels": "llm_council.anonymize",
    "create_provider": "llm_council.providers.registry",
    "derive_position_mapping": "llm_council.anonymize",
    "load_council_config": "llm_council.config",
    "parse_review": "llm_council.ranking_parser",
    "register_provider": "llm_council.providers.registry",
    "run_full_council": "llm_council.council",
}

__all__ = [
    "AdjustmentsRequested",
    "CandidateScore",
    "Completion",
    "CompletionRequest",
    "ConfigError",
    "CouncilConfig",
    "CouncilError",
    "CouncilMember",
    "CouncilResult",
    "InputError",
    "LabelAssignment",
    "MemberAnswer",
    "Message",
    "Middleware",
    "MissingCredentialsError",
    "ModelStanding",
    "ParsedReview",
    "Provider",
    "ProviderError",
    "RecordError",
    "RetryPolicy",
    "Review",
    "ReviewerAdjustment",
    "SessionCompleted",
    "SessionStarted",
    "Stage1Completed",
    "Stage2Completed",
    "Synthesis",
    "assign_labels",
    "create_provider",
    "derive_position_mapping",
    "load_council_config",
    "parse_review",
    "register_provider",
    "run_full_council",
]


def __getattr__(name: str) -> Any:
    module = _SOURCES.get(name)
    if module is None:
        raise AttributeError(f"module 'llm_council' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
