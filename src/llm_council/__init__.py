"""llm-council: several LLMs answer, review each other anonymously, and a chairman synthesizes.

The public names are re-exported here; everything else may change.
"""

from __future__ import annotations

from llm_council.anonymize import assign_labels, derive_position_mapping
from llm_council.config import CouncilConfig, CouncilMember, load_council_config
from llm_council.council import run_full_council
from llm_council.errors import (
    ConfigError,
    CouncilError,
    InputError,
    MissingCredentialsError,
    ProviderError,
    RecordError,
)
from llm_council.middleware import (
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

__all__ = [
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
