"""Typed results of the three stages: what a council session produced.

Names: a *member* is a council seat (its ``name`` is unique in the council, its ``spec``
says which provider and model fill it); a *candidate* is the member whose stage-1 answer
is being reviewed; a *label* is the neutral name a reviewer saw (``Response A``), and the
label letter is always the ``display_index`` (A = 0): see ADR 0001.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

#: how a review's verdict was read: "json" / "final_ranking" (a verdict), "refused" (the
#: reviewer declined to judge, in a channel candidates cannot write into: ADR 0027),
#: "unparseable" (a reply, but no verdict could be read), "missing" (no reply)
ParseStatus = Literal["json", "final_ranking", "refused", "unparseable", "missing"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class MemberAnswer(_Frozen):
    """A member's stage-1 answer, or the error that kept it from answering."""

    member: str
    spec: str
    text: str | None = None
    # the answer's length before it was cut to ``max_answer_chars``; None when not cut
    original_chars: int | None = None
    error: str | None = None
    attempts: int = 0
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.text is not None


class LabelAssignment(_Frozen):
    """Which member's answer a reviewer saw under one label, and where in the order."""

    model: str
    display_index: int


class CandidateScore(_Frozen):
    """One reviewer's verdict on one candidate answer."""

    candidate: str
    label: str
    display_index: int
    score: float | None = None
    rank: int | None = None  # 1 = best; None when the reviewer left it unranked
    is_self_review: bool = False


class Review(_Frozen):
    """One reviewer's stage-2 review: what it was shown and how it judged it."""

    reviewer: str
    label_to_model: dict[str, LabelAssignment]
    candidates: tuple[CandidateScore, ...] = ()
    ranking: tuple[str, ...] = ()  # member names, best first
    score_scale: tuple[float, float] = (1.0, 10.0)
    parse_status: ParseStatus = "missing"
    parse_error: str | None = None
    rationale: str | None = None
    # characters of the rationale as the reviewer wrote it (``rationale`` keeps at most
    # 2000); None when it gave none
    rationale_chars: int | None = None
    raw_text: str | None = None
    error: str | None = None
    attempts: int = 0
    duration_s: float = 0.0
    # where the verdict was read (ADR 0018): "structured" (the SDK's structured output),
    # "nonce" (text tagged with the prompt's nonce) or "untagged" (free text, all verdicts
    # in it agreeing); and the server's refusal when native structured output fell back
    verdict_channel: str | None = None
    structured_output_refused: str | None = None
    # tokens the provider reported for this review's call(s); None when it reported none
    input_tokens: int | None = None
    output_tokens: int | None = None
    # a live bias check (ADR 0024): None for the review that counts; "reshuffle", "repeat",
    # "padding" or "identity" for the extra review of the same reviewer's answers that
    # checks it. Check reviews never enter the aggregate ranking or the synthesis.
    check_kind: str | None = None
    # "padding" / "identity": the candidate whose answer was padded / signed; else None
    check_target: str | None = None
    # ``review_orders = 2`` (ADR 0046): 0 for the review in the reviewer's own shuffled
    # order, 1 for its second review of the same answers in the reverse order
    review_order: int = 0

    @property
    def ok(self) -> bool:
        return self.parse_status in ("json", "final_ranking")


class ModelStanding(_Frozen):
    """A member's place in the aggregate of all reviews (self-votes excluded)."""

    model: str
    place: int
    mean_rank: float | None
    borda_points: float
    mean_score: float | None
    rank_votes: int
    score_votes: int
    excluded_self_votes: int
    tie_note: str | None = None


class Synthesis(_Frozen):
    """The chairman's final answer (or the fallback when the chairman failed)."""

    chairman: str
    text: str
    is_fallback: bool = False
    error: str | None = None
    attempts: int = 0
    duration_s: float = 0.0


class CouncilResult(_Frozen):
    """Everything a session returns; unpacks, indexes and measures (``len`` 4) like the
    tuple ``(stage1, stage2, stage3, metadata)`` the reference council returns."""

    stage1: list[MemberAnswer]
    stage2: list[Review]
    stage3: Synthesis
    metadata: dict[str, Any]
    # the live bias checks' reviews (ADR 0024), never part of ``stage2``'s ranking
    bias_check_reviews: list[Review] = []

    def _stages(self) -> tuple[Any, Any, Any, Any]:
        return (self.stage1, self.stage2, self.stage3, self.metadata)

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        return iter(self._stages())

    def __getitem__(self, index: int | slice) -> Any:
        """``result[3]`` is the metadata, as in the reference's 4-tuple (ADR 0039)."""
        return self._stages()[index]

    def __len__(self) -> int:
        return 4

    def to_json_dict(self) -> dict[str, Any]:
        """The result as JSON; ``bias_check_reviews`` only when there are some (ADR 0024)."""
        exclude = None if self.bias_check_reviews else {"bias_check_reviews"}
        return self.model_dump(mode="json", exclude=exclude)
