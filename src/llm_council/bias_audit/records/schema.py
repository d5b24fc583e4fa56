"""The bias-audit record: one JSON line per (session, reviewer, candidate).

Privacy: a record holds lengths, positions, scores and ids, never the query or answer
text. ``query_hash`` is null unless the user opted in, and is then an HMAC-SHA256 under
the user's secret, tagged with its algorithm (``hmac-sha256:<hex>``).

Versioning: every line carries ``schema_version``. A bump adds a migration in
:func:`upgrade_record` so readers keep reading older lines.

Completeness (version 2): every record of a session carries ``session_n_records``, the
number of records its session wrote. A reader that finds a different number of valid
lines for a session drops the whole session and reports it, so a write cut short by a
crash never pools part of a session (ADR 0020). ``None`` means "unknown": a version-1
line written before the field existed.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from llm_council.storable_text import lone_surrogate_at

SCHEMA_VERSION = 2

_SHA256_HEX = r"^[0-9a-f]{64}$"
_NO_CONTROL_CHARACTERS = r"^[^\x00-\x1f\x7f]*$"


class ReviewerFingerprint(BaseModel):
    """The reviewer's set-up when it wrote the review (ADR 0062): hashes and settings, never
    a prompt's text or an option's value (:mod:`llm_council.judge_fingerprint`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(min_length=1, max_length=64, pattern=_NO_CONTROL_CHARACTERS)
    model: str = Field(max_length=256, pattern=_NO_CONTROL_CHARACTERS)
    prompt_sha256: str = Field(pattern=_SHA256_HEX)
    rubric_sha256: str | None = Field(default=None, pattern=_SHA256_HEX)
    temperature: float | None = Field(default=None, ge=0.0, le=100.0, allow_inf_nan=False)
    scale: tuple[float, float] = Field(description="the score scale the reviewer was given")
    options_sha256: str = Field(pattern=_SHA256_HEX)

    @model_validator(mode="after")
    def _scale_is_finite_and_ordered(self) -> ReviewerFingerprint:
        low, high = self.scale
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"scale {list(self.scale)} is not [low, high] with low < high")
        return self


class ReviewRecord(BaseModel):
    """One reviewer's verdict on one candidate answer in one audited session."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: int = SCHEMA_VERSION
    session_id: str
    timestamp: str = Field(description="session end, ISO 8601 in UTC")
    reviewer_id: str
    model_id: str = Field(description="the member whose answer was reviewed (the candidate)")
    position: int = Field(ge=0, description="the display_index this reviewer saw the answer at")
    n_candidates: int = Field(ge=1, description="how many answers this reviewer was shown")
    response_length_chars: int = Field(ge=0)
    response_length_words: int = Field(ge=0)
    score_value: float | None = Field(
        description="null when no score was given; never 0 for missing; never NaN or infinite",
        allow_inf_nan=False,
    )
    score_scale: tuple[float, float] = (1.0, 10.0)
    rank: int | None = Field(default=None, ge=1, description="1 = best; null when unranked")
    is_self_review: bool
    council_config_hash: str
    query_hash: str | None = None
    session_n_records: int | None = Field(
        default=None,
        ge=1,
        description="how many records this session wrote; null for legacy (version 1) lines",
    )
    # live bias checks (ADR 0024), optional and appended so older lines still read:
    # null for the review that counts; "reshuffle", "repeat", "padding" or "identity" for a
    # check review
    check_kind: str | None = None
    # where this reviewer saw this answer in the review the check repeats (its position)
    check_of_position: int | None = Field(default=None, ge=0)
    # "padding" / "identity": whether this answer is the padded / signed one; null otherwise
    check_treated: bool | None = None
    # issue 11 section 2, optional and appended like the check fields (null = not measured,
    # or a line written before the field existed):
    # style mimicry: lexical similarity in [0, 1] of this answer to the reviewer's own
    # stage-1 answer, computed at audit time (the texts go no further); null for a
    # self-review or when the reviewer gave no answer
    similarity_to_own: float | None = Field(default=None, ge=0.0, le=1.0)
    # reasoning-chain bias: characters of this review's rationale; null when it gave none
    rationale_chars: int | None = Field(default=None, ge=0)
    # how this review's verdict was read: "json", "final_ranking", "unparseable",
    # "missing", "refused" or "error"; null on lines written before the field existed
    review_status: str | None = None
    # ADR 0062, optional and appended (null on lines written before it, or by an importer
    # that does not know the reviewer's set-up): what the reviewer was when it reviewed
    reviewer_fingerprint: ReviewerFingerprint | None = None

    @model_validator(mode="after")
    def _position_is_a_shown_slot(self) -> ReviewRecord:
        """``position < n_candidates``: a 1-based or huge position was written, then
        crashed ``bias-report`` for the whole store (issue 37 A.7)."""
        if self.position >= self.n_candidates:
            raise ValueError(
                f"position {self.position} is not a slot of the {self.n_candidates} "
                "answers shown (0-based: 0 is shown first)"
            )
        return self


def lone_surrogate_field(record: ReviewRecord) -> tuple[str, int] | None:
    """(field, character index) of the first text field holding a lone UTF-16 surrogate,
    which UTF-8 cannot store (:mod:`llm_council.storable_text`); ``None`` when none does.
    The fingerprint's text fields need no look: their patterns refuse such text."""
    for name, value in record:
        at = lone_surrogate_at(value) if isinstance(value, str) else None
        if at is not None:
            return name, at
    return None


def upgrade_record(raw: dict[str, Any]) -> dict[str, Any]:
    """Bring a parsed line of any known schema version to the current one.

    Numbered migrations, applied in order: 1 -> 2 adds ``session_n_records = None``
    ("unknown, legacy": a reader keeps such lines, having nothing to check them against).
    """
    version = raw.get("schema_version")
    if version == 1:
        raw = {**raw, "schema_version": 2, "session_n_records": None}
        version = 2
    if version == SCHEMA_VERSION:
        return raw
    raise ValueError(f"unknown schema_version {version!r} (this reader knows 1..{SCHEMA_VERSION})")
