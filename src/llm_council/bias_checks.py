"""Live interventional bias checks: which reviewer gets one extra review, and of what kind.

With ``bias_check_probability = p`` each (session, reviewer) is chosen independently with
probability ``p`` for one extra stage-2 request (ADR 0024). The choice, the kind and the
intervention are pure functions of the session seed and the reviewer's name, so a run
with ``--seed`` is reproducible:

- ``reshuffle``: the same answers in a fresh display order (never the original order);
- ``repeat``: the same answers in the same order, asked again (a fresh sampling seed);
- ``padding``: the same order, one answer (drawn uniformly) padded with
  :data:`PADDING_SENTENCE` repeated until its word count has doubled;
- ``identity`` (opt-in): the same order, one answer that is *not* the reviewer's own
  (drawn uniformly) signed with the reviewer's own model name (:data:`IDENTITY_SIGNATURE`),
  so a reviewer that favours what looks like its own work shows it.

A check review goes through the same prompt and parser as the review it checks, carries
``check_kind``, and never enters the aggregate ranking or the synthesis.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from llm_council.prompts import label_for
from llm_council.results import LabelAssignment, Review

CheckKind = Literal["reshuffle", "repeat", "padding", "identity"]
CHECK_KINDS: tuple[CheckKind, ...] = ("reshuffle", "repeat", "padding", "identity")
#: kinds drawn unless configured otherwise; ``identity`` is opt-in (weight 0 by default)
DEFAULT_CHECK_WEIGHTS: dict[str, float] = {
    "reshuffle": 1.0,
    "repeat": 1.0,
    "padding": 1.0,
    "identity": 0.0,
}

#: The padding filler: one sentence that states nothing about any question. It is
#: appended (after a blank line) to one answer until that answer's word count has doubled,
#: so the padded answer differs from the original only in content-free length.
PADDING_SENTENCE = "This sentence is padding and adds no information."
#: The identity check's signature line, appended (after a blank line) to one other
#: member's answer; ``{model}`` is the reviewer's model name from its spec (``gpt-4o``).
IDENTITY_SIGNATURE = "(Answer written by {model}.)"


_MIN_SHOWN = {"reshuffle": 2}


def unit_draw(session_seed: int, reviewer: str, purpose: str) -> float:
    """A uniform number in [0, 1) from sha256(seed, reviewer, purpose): reproducible."""
    material = f"{session_seed}\x00{reviewer}\x00bias-check\x00{purpose}".encode()
    return int.from_bytes(hashlib.sha256(material).digest()[:8], "big") / float(1 << 64)


def chosen_for_check(session_seed: int, reviewer: str, probability: float) -> bool:
    """Whether this (session, reviewer) gets a check: ``unit_draw < probability``."""
    return probability > 0 and unit_draw(session_seed, reviewer, "select") < probability


def draw_check_kind(
    session_seed: int, reviewer: str, mix: Mapping[str, float], n_shown: int
) -> CheckKind | None:
    """The kind, drawn with probability proportional to its weight in ``mix``.

    ``n_shown`` is how many answers the reviewer was shown: ``reshuffle`` needs two, the
    others one (the caller leaves ``identity`` out of ``mix`` when the only answer shown is
    the reviewer's own). Kinds that cannot apply are left out of the draw; None when none can.
    """
    usable = {
        kind: float(mix.get(kind, 0.0))
        for kind in CHECK_KINDS
        if mix.get(kind, 0.0) > 0 and n_shown >= _MIN_SHOWN.get(kind, 1)
    }
    total = sum(usable.values())
    if total <= 0:
        return None
    threshold = unit_draw(session_seed, reviewer, "kind") * total
    cumulative = 0.0
    for kind, weight in usable.items():
        cumulative += weight
        if threshold < cumulative:
            return kind
    return list(usable)[-1]  # float round-off at the top end


def reshuffled_labels(
    original: Mapping[str, LabelAssignment], session_seed: int, reviewer: str
) -> dict[str, LabelAssignment]:
    """A fresh display order of the same answers, guaranteed to differ from ``original``."""
    order = [a.model for a in sorted(original.values(), key=lambda a: a.display_index)]
    fresh = list(order)
    random.Random(unit_draw(session_seed, reviewer, "order")).shuffle(fresh)
    if fresh == order:  # the identity permutation would be a repeat: rotate by one
        fresh = fresh[1:] + fresh[:1]
    return {
        label_for(index): LabelAssignment(model=model, display_index=index)
        for index, model in enumerate(fresh)
    }


def treated_candidate(
    original: Mapping[str, LabelAssignment], session_seed: int, reviewer: str, kind: str
) -> str:
    """Which shown answer gets padded or signed: uniform over those the kind may change
    (for ``identity``, every shown answer but the reviewer's own)."""
    order = [a.model for a in sorted(original.values(), key=lambda a: a.display_index)]
    if kind == "identity":
        order = [model for model in order if model != reviewer]
    return order[int(unit_draw(session_seed, reviewer, f"treat:{kind}") * len(order))]


def signed_text(text: str, model: str) -> str:
    """``text`` with the :data:`IDENTITY_SIGNATURE` of ``model`` appended."""
    return text + "\n\n" + IDENTITY_SIGNATURE.format(model=model)


def pad_text(text: str) -> str:
    """``text`` with :data:`PADDING_SENTENCE` appended until its words have doubled.

    At least one sentence is added. The copy is not cut to the session's answer cap: an
    answer already at the cap would come back unpadded and still be recorded as a padding
    treatment, biasing the padding effect toward zero. Its size stays bounded: the answer
    was cut to ``max_answer_chars`` in stage 1, so the copy is at most about twice that.
    """
    words = len(text.split())
    per_sentence = len(PADDING_SENTENCE.split())
    repeats = max(1, -(-words // per_sentence))
    return text + "\n\n" + " ".join([PADDING_SENTENCE] * repeats)


def bias_check_summary(
    check_reviews: Sequence[Review], probability: float, mix: Mapping[str, float]
) -> dict[str, Any]:
    """``metadata["bias_checks"]``: the setting, and calls, attempts and tokens by kind."""
    by_kind: dict[str, dict[str, int]] = {}
    for review in check_reviews:
        kind = review.check_kind or "unknown"
        entry = by_kind.setdefault(
            kind,
            {"calls": 0, "parsed": 0, "attempts": 0, "input_tokens": 0, "output_tokens": 0},
        )
        entry["calls"] += 1
        entry["parsed"] += int(review.ok)
        entry["attempts"] += review.attempts
        entry["input_tokens"] += review.input_tokens or 0
        entry["output_tokens"] += review.output_tokens or 0
    totals = {
        key: sum(entry[key] for entry in by_kind.values())
        for key in ("calls", "parsed", "attempts", "input_tokens", "output_tokens")
    }
    return {
        "probability": probability,
        "kinds": {kind: float(mix.get(kind, 0.0)) for kind in CHECK_KINDS},
        "checked_reviewers": {r.reviewer: r.check_kind for r in check_reviews},
        **totals,
        "by_kind": by_kind,
    }
