"""An outside council's stage 1 and stage 2 as our :class:`SessionCompleted` event.

Once a karpathy-style or reference-style session is in our event's shape, the audit, the
records and the store write are the ones our own council uses
(:func:`~llm_council.bias_audit.session.session_audit.audit_session_result`), so an
outside council's records are built by the same code and read by the same report.

What this module decides, so the caller never has to (ADR 0039):

- **scores**: the reviewer's own numbers (``parsed_ranking["scores"]``, or our JSON
  verdict in the ``ranking`` text) on ``score_scale``; off-scale numbers are dropped,
  never clipped. A review with a ranking only gets **rank points**: of N labels shown, the
  1st gets N, the 2nd N - 1, ..., on the scale (1, N) (a Borda count, as
  :func:`~llm_council.bias_audit.session.stage2_scores.extract_scores_from_stage2`). A
  shown answer the reviewer did not rank gets no score (never 0).
- **ranks**: 1 = best, from the reviewer's ranking; none when it gave only scores.
- **review status**: ``json`` (scores), ``final_ranking`` (a ranking only), ``refused``
  (``abstained``), ``unparseable`` (a reply without a verdict), ``missing`` (no reply).
- **council id** (``council_config_hash``): ``external:`` + 16 hex of SHA-256 over the
  sorted member names and the score scale, unless the caller names one.
- **labels**: as given (``"Response A"``, any case), or a bare letter (``"A"``) when the
  label map has ``"Response A"`` and no label ``"A"`` (issue 37 C.3).

What it refuses at the door, each in one line (issue 37 A.6, A.7): a scale beyond
+/-:data:`MAX_SCALE_MAGNITUDE` (the report's bound on a score), more than
:data:`~llm_council.config.MAX_COUNCIL_MEMBERS` members or reviews (our council's cap), a
reviewer listed twice in stage 2, a display position outside ``0 <= display_index < n``,
a session or council id that is not a short text.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from llm_council.anonymize import is_label_map_entry, label_assignments
from llm_council.bias_audit.session.session_records import utc_timestamp
from llm_council.config import MAX_COUNCIL_MEMBERS
from llm_council.errors import InputError
from llm_council.middleware import SessionCompleted
from llm_council.ranking_parser import parse_review
from llm_council.results import (
    CandidateScore,
    LabelAssignment,
    MemberAnswer,
    ParseStatus,
    Review,
    Synthesis,
)
from llm_council.storable_text import require_storable

DEFAULT_SCORE_SCALE = (1.0, 10.0)
#: the largest scale end accepted: the report's bound on a score's size
#: (``report.load.raw_records.MAX_ABS_SCORE``, tested equal), so a session's scores are
#: never ones the report drops; ``(-1e308, 1e308)`` with scores of 1e300 poisoned history
MAX_SCALE_MAGNITUDE = 1e6
#: the longest session or council id accepted (a uuid4 hex is 32)
MAX_ID_CHARS = 256


def _is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def external_answers(stage1: Any) -> tuple[MemberAnswer, ...]:
    """``[{"model", "response"}]`` (or our ``MemberAnswer`` list) as member answers."""
    if not _is_list(stage1):
        raise InputError(
            f"stage1 must be a list of {{'model', 'response'}}, got {type(stage1).__name__}"
        )
    if len(stage1) > MAX_COUNCIL_MEMBERS:
        raise InputError(
            f"stage1 has {len(stage1)} answers; a council has at most {MAX_COUNCIL_MEMBERS} "
            "members (the audit's cost grows with the sixth power of the council size)"
        )
    answers: list[MemberAnswer] = []
    for index, entry in enumerate(stage1):
        if isinstance(entry, MemberAnswer):
            answers.append(entry)
            continue
        if not isinstance(entry, Mapping) or not isinstance(entry.get("model"), str):
            raise InputError(f"stage1[{index}] must be a mapping with a 'model' name")
        text = entry.get("response")
        if text is not None and not isinstance(text, str):
            raise InputError(f"stage1[{index}]['response'] must be text, got {type(text).__name__}")
        model = entry["model"]
        if any(answer.member == model for answer in answers):
            raise InputError(f"stage1[{index}]: model {model!r} answers twice")
        answers.append(
            MemberAnswer(member=model, spec=model, text=text, error=None if text else "no response")
        )
    return tuple(answers)


def reviewer_labels(reviewer: str, label_to_model: Any) -> dict[str, LabelAssignment]:
    """What ``reviewer`` was shown: the shared map, or its own in a per-reviewer map."""
    if not isinstance(label_to_model, Mapping):
        raise InputError(f"label_to_model must be a mapping, got {type(label_to_model).__name__}")
    if all(is_label_map_entry(value) for value in label_to_model.values()):
        return _positions_in_range(label_assignments(label_to_model), "label_to_model")
    own = label_to_model.get(reviewer)
    if not isinstance(own, Mapping):
        raise InputError(f"label_to_model has no label map for reviewer {reviewer!r}")
    where = f"label_to_model[{reviewer!r}]"
    return _positions_in_range(label_assignments(own, where), where)


def _positions_in_range(
    labels: dict[str, LabelAssignment], where: str
) -> dict[str, LabelAssignment]:
    """``labels``, once every ``display_index`` is in ``0 <= i < n shown``: a 1-based or
    huge position was accepted, then crashed ``bias-report`` for the whole store."""
    for label, shown in labels.items():
        if not 0 <= shown.display_index < len(labels):
            raise InputError(
                f"{where}[{label!r}]: display_index must be in 0..{len(labels) - 1} "
                f"(0 = shown first, {len(labels)} labels), got {shown.display_index!r:.60}"
            )
    return labels


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _label_of(entry: Any, labels: Mapping[str, LabelAssignment]) -> Any:
    """``entry`` as a shown label: itself, the label it names in another case, or
    ``"Response X"`` for a bare letter ``"X"`` when that label (and no label ``"X"``) was
    shown. Anything else comes back unchanged, to be refused by the caller."""
    if not isinstance(entry, str) or entry in labels:
        return entry
    wanted = " ".join(entry.split()).casefold()
    if len(wanted) <= 2 and wanted.isalpha():
        wanted = f"response {wanted}"
    matches = [label for label in labels if " ".join(label.split()).casefold() == wanted]
    return matches[0] if len(matches) == 1 else entry


def _verdict(
    result: Mapping[str, Any], labels: Mapping[str, LabelAssignment], scale: tuple[float, float]
) -> tuple[dict[str, float], list[str], ParseStatus, tuple[float, float]]:
    """``(scores by label, ranking of labels, status, scale of the scores)``."""
    parsed: Any = result.get("parsed_ranking")
    if result.get("abstained") or (isinstance(parsed, Mapping) and parsed.get("abstained")):
        return {}, [], "refused", scale
    ranking: list[Any] = []
    if isinstance(parsed, Mapping):
        given = parsed.get("scores")
        given_ranking: Any = parsed.get("ranking")
        ranking = [_label_of(e, labels) for e in given_ranking] if _is_list(given_ranking) else []
        if not all(isinstance(label, str) for label in ranking):
            return {}, [], "unparseable", scale  # [["Response A"]]: not a ranking of labels
        if isinstance(given, Mapping) and given:
            scores = {
                label: value
                for key, raw in given.items()
                if (label := _label_of(key, labels)) in labels
                and (value := _number(raw)) is not None
                and scale[0] <= value <= scale[1]
            }
            return scores, [label for label in ranking if label in labels], "json", scale
    elif _is_list(parsed):
        ranking = [_label_of(entry, labels) for entry in parsed]
    text = result.get("ranking")
    if not ranking and isinstance(text, str) and text.strip():
        verdict = parse_review(text, list(labels), scale)
        if verdict.scores:
            return dict(verdict.scores), list(verdict.ranking), "json", scale
        ranking = list(verdict.ranking)
    if (
        not all(isinstance(label, str) for label in ranking)
        or len(set(ranking)) != len(ranking)
        or not set(ranking) <= set(labels)
    ):
        # a repeated or unknown label leaves the order unknown: dropping it would move the
        # labels after it up a place, a rank the reviewer never gave
        return {}, [], "unparseable", scale
    shown_ranking = list(ranking)
    if not shown_ranking:
        has_reply = isinstance(text, str) and bool(text.strip()) or parsed is not None
        return {}, [], "unparseable" if has_reply else "missing", scale
    n_shown = len(labels)
    points = {label: float(n_shown - place) for place, label in enumerate(shown_ranking)}
    return points, shown_ranking, "final_ranking", (1.0, float(n_shown))


def external_review(
    index: int, result: Any, label_to_model: Any, scale: tuple[float, float]
) -> Review:
    """One stage-2 entry (``{"model", "ranking", "parsed_ranking"}``) as our ``Review``."""
    if not isinstance(result, Mapping) or not isinstance(result.get("model"), str):
        raise InputError(f"stage2[{index}] must be a mapping with the reviewer's 'model' name")
    reviewer = result["model"]
    labels = reviewer_labels(reviewer, label_to_model)
    scores, ranking, status, review_scale = _verdict(result, labels, scale)
    rank_of = {label: place for place, label in enumerate(ranking, start=1)}
    candidates = tuple(
        CandidateScore(
            candidate=shown.model,
            label=label,
            display_index=shown.display_index,
            score=scores.get(label),
            rank=rank_of.get(label),
            is_self_review=shown.model == reviewer,
        )
        for label, shown in sorted(labels.items(), key=lambda item: item[1].display_index)
    )
    return Review(
        reviewer=reviewer,
        label_to_model=labels,
        candidates=candidates if status in ("json", "final_ranking") else (),
        ranking=tuple(labels[label].model for label in ranking),
        score_scale=review_scale,
        parse_status=status,
    )


def external_council_id(answers: Sequence[MemberAnswer], scale: tuple[float, float]) -> str:
    """``external:`` + 16 hex of SHA-256 over the sorted members and the score scale."""
    members = sorted({answer.member for answer in answers})
    digest = hashlib.sha256(json.dumps([members, list(scale)]).encode("utf-8")).hexdigest()
    return f"external:{digest[:16]}"


def _checked_scale(score_scale: Any) -> tuple[float, float]:
    if score_scale is None:
        return DEFAULT_SCORE_SCALE
    if not _is_list(score_scale) or len(score_scale) != 2:
        raise InputError(f"score_scale must be (low, high), got {score_scale!r:.60}")
    low, high = (_number(value) for value in score_scale)
    if low is None or high is None or low >= high:
        raise InputError(f"score_scale must be two finite numbers, low < high: {score_scale!r}")
    if max(abs(low), abs(high)) > MAX_SCALE_MAGNITUDE:
        raise InputError(
            f"score_scale must lie within +/-{MAX_SCALE_MAGNITUDE:g} (the report drops larger "
            f"scores), got {score_scale!r:.60}"
        )
    return low, high


def external_event(
    stage1: Any,
    stage2: Any,
    label_to_model: Any,
    *,
    session_id: str | None = None,
    council_id: str | None = None,
    score_scale: Any = None,
    query: str | None = None,
) -> SessionCompleted:
    """The outside session as our event; bad shapes raise a one-line ``InputError``."""
    scale = _checked_scale(score_scale)
    for name, value in (("session_id", session_id), ("council_id", council_id)):
        if value is not None and not (
            isinstance(value, str) and value.strip() and len(value) <= MAX_ID_CHARS
        ):
            raise InputError(
                f"{name} must be a non-empty text of at most {MAX_ID_CHARS} characters, "
                f"got {type(value).__name__} {value!r:.60}"
            )
        if value is not None:
            require_storable(name, value)
    answers = external_answers(stage1)
    if not _is_list(stage2):
        raise InputError(
            "stage2 must be a list of {'model', 'ranking', 'parsed_ranking'}, got "
            f"{type(stage2).__name__}"
        )
    if len(stage2) > MAX_COUNCIL_MEMBERS:  # one review per reviewer: the same cap
        raise InputError(
            f"stage2 has {len(stage2)} reviews; a council has at most {MAX_COUNCIL_MEMBERS} "
            "reviewers (one review each)"
        )
    reviews = tuple(
        external_review(index, result, label_to_model, scale) for index, result in enumerate(stage2)
    )
    first_review: dict[str, int] = {}
    for index, review in enumerate(reviews):
        if review.reviewer in first_review:
            # counted twice, it was a sixth reviewer of a 4-member council (n_reviewers 5)
            raise InputError(
                f"stage2[{index}]: reviewer {review.reviewer!r} reviews twice (also "
                f"stage2[{first_review[review.reviewer]}]); send one review per reviewer"
            )
        first_review[review.reviewer] = index
    members = {answer.member for answer in answers}
    for index, review in enumerate(reviews):
        for label, shown in review.label_to_model.items():
            if shown.model not in members:
                raise InputError(
                    f"stage2[{index}] ({review.reviewer!r}) was shown {label!r} = "
                    f"{shown.model!r}, which has no stage-1 entry"
                )
    return SessionCompleted(
        session_id=session_id or uuid.uuid4().hex,
        query=query or "",
        council_config_hash=council_id or external_council_id(answers, scale),
        answers=answers,
        reviews=reviews,
        standings=(),
        synthesis=Synthesis(chairman="", text=""),
        started_at=utc_timestamp(),
    )
