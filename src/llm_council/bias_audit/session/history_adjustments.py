"""Per-reviewer bias adjustments for the debiased aggregate, from the store's history.

:func:`reviewer_adjustments` is the one place the audit turns past sessions into the
plain numbers the core's :func:`~llm_council.debiased_aggregate.debiased_aggregate`
takes (ADR 0046). It reads the sufficient statistics the store's writer keeps beside a
JSONL store (:mod:`~llm_council.bias_audit.records.adjustment_sidecar`, ADR 0049), so a
lookup costs milliseconds whatever the store's size; :func:`full_read_adjustments` is the
reference it reproduces: every record read with the store's own reader (complete sessions
only, torn or malformed lines skipped) and fitted by
:func:`~llm_council.stats.reviewers.reviewer_effects.fit_reviewer_effects`, in time linear in the
store's size.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path

from llm_council.bias_audit.records.adjustment_history import load_council_sums
from llm_council.bias_audit.records.jsonl_store import read_records
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.records.score_history import history_arrays
from llm_council.bias_audit.records.store_urls import is_postgres_url
from llm_council.debiased_aggregate import ReviewerAdjustment
from llm_council.errors import RecordError
from llm_council.stats.reviewers.reviewer_effect_sums import ReviewerEffectSums, effects_from_sums
from llm_council.stats.reviewers.reviewer_effects import ReviewerEffects, fit_reviewer_effects

__all__ = [
    "adjustments_from_records",
    "adjustments_from_sums",
    "full_read_adjustments",
    "history_arrays",
    "reviewer_adjustments",
]


def adjustments_from_records(
    records: Iterable[ReviewRecord], reviewers: Sequence[str] | None = None, *, min_scores: int = 10
) -> dict[str, ReviewerAdjustment]:
    """The adjustments of ``reviewers`` (default: every reviewer in ``records``) fitted on
    ``records``; a reviewer with fewer than ``min_scores`` scores of others' answers is
    left out (the debiased aggregate then takes its scores as they are)."""
    arrays = history_arrays(records)
    if arrays is None:
        return {}
    names = [str(name) for name in arrays["names"]]
    effects = fit_reviewer_effects(
        arrays["answer"],
        arrays["reviewer"],
        arrays["slot"],
        arrays["log2_length"],
        arrays["score"],
        len(names),
        min_scores=min_scores,
    )
    return _as_adjustments(names, effects, reviewers)


def adjustments_from_sums(
    sums: ReviewerEffectSums, reviewers: Sequence[str] | None = None, *, min_scores: int = 10
) -> dict[str, ReviewerAdjustment]:
    """:func:`adjustments_from_records` from the summed history instead of the records
    (:func:`~llm_council.stats.reviewers.reviewer_effect_sums.effects_from_sums`: the same
    numbers)."""
    effects = effects_from_sums(sums, min_scores=min_scores)
    return _as_adjustments(sums.reviewers, effects, reviewers)


def _as_adjustments(
    names: Sequence[str],
    effects: Sequence[ReviewerEffects | None],
    reviewers: Sequence[str] | None,
) -> dict[str, ReviewerAdjustment]:
    """The fitted effects of ``reviewers`` (default: all) in the core's type; a reviewer
    the fit left out (too few scores) is absent, so its scores are taken as they are."""
    wanted = set(names if reviewers is None else reviewers)
    return {
        name: ReviewerAdjustment(
            leniency=effect.leniency,
            slot_effects=effect.slot_effects,
            length_slope=effect.length_slope,
            n_scores=effect.n_scores,
        )
        for name, effect in zip(names, effects, strict=True)
        if effect is not None and name in wanted
    }


def reviewer_adjustments(
    store: str | Path,
    reviewers: Sequence[str],
    *,
    council_config_hash: str | None = None,
) -> dict[str, ReviewerAdjustment]:
    """The adjustments of ``reviewers`` from the JSONL store at ``store``.

    ``council_config_hash`` keeps only that council's past sessions (same members, scale
    and recusal, so the slots and scores mean the same). Read from the store's summed
    history (:func:`~llm_council.bias_audit.records.adjustment_history.load_council_sums`:
    rebuilt when stale; a :class:`RecordError` while a large store's is rebuilt in the
    background). A missing store gives ``{}``; a PostgreSQL store is not read yet (a
    :class:`RecordError` saying so).
    """
    if is_postgres_url(str(store)):
        raise RecordError("the debiased aggregate reads JSONL stores only (not PostgreSQL yet)")
    councils = load_council_sums(Path(store))
    if council_config_hash is not None:
        sums = councils.get(council_config_hash)
    else:
        sums = None
        for council_sums in councils.values():
            sums = council_sums if sums is None else sums.merged(council_sums)
    if sums is None:
        return {}
    return adjustments_from_sums(sums, reviewers)


def full_read_adjustments(
    store: str | Path,
    reviewers: Sequence[str],
    *,
    council_config_hash: str | None = None,
) -> dict[str, ReviewerAdjustment]:
    """:func:`reviewer_adjustments` by reading every record and fitting them (the reference
    the summed history is checked against; time linear in the store's size)."""
    with warnings.catch_warnings():
        # a torn or malformed line is the report's to show, not every session's
        warnings.simplefilter("ignore")
        records: Iterable[ReviewRecord] = list(read_records(Path(store)))
    if council_config_hash is not None:
        records = [r for r in records if r.council_config_hash == council_config_hash]
    return adjustments_from_records(records, reviewers)
