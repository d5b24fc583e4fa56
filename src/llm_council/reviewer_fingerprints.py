"""Each council member's fingerprint as a reviewer: what the bias audit records per review.

The prompt hash covers the stage-2 template in both verdict formats (the provider decides
which one a member gets, and the provider is part of the fingerprint) and the verdict
schema's name; the rubric hash covers the system text the reviewer judges by, with the
member's persona in front of it as it is sent (:mod:`llm_council.providers.member_sampling`).
"""

from __future__ import annotations

from typing import Any

from llm_council.config import CouncilConfig, CouncilMember
from llm_council.judge_fingerprint import judge_fingerprint, option_temperature, text_sha256
from llm_council.prompts import (
    REVIEW_SCHEMA_NAME,
    REVIEW_SYSTEM,
    ReviewPromptCandidate,
    build_review_prompt,
)


def review_prompt_sha256(score_scale: tuple[float, float]) -> str:
    """SHA-256 of the stage-2 prompt template (both verdict formats) on this scale."""
    candidates = [ReviewPromptCandidate("{label}", "{answer}")]
    templates = [
        build_review_prompt("{query}", candidates, score_scale, "{nonce}", verdict_format)
        for verdict_format in ("nonce", "structured")
    ]
    return text_sha256(REVIEW_SCHEMA_NAME, *templates)


def review_rubric_sha256(member: CouncilMember) -> str:
    """SHA-256 of the system text the member reviews by, its persona first when it has one."""
    persona = member.options.get("persona")
    persona_text = persona.strip() if isinstance(persona, str) else ""
    return text_sha256(persona_text, REVIEW_SYSTEM)


def reviewer_fingerprints(config: CouncilConfig) -> dict[str, dict[str, Any]]:
    """``{member name: fingerprint}`` for the council's reviewers (no text, no option value)."""
    prompt = review_prompt_sha256(config.score_scale)
    return {
        member.name: judge_fingerprint(
            member.spec,
            member.options,
            option_temperature(member.options),
            prompt_sha256=prompt,
            scale=config.score_scale,
            rubric_sha256=review_rubric_sha256(member),
        )
        for member in config.members
    }
