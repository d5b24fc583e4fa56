"""Per-reviewer noise sums of sessions: computed, merged, encoded (no files here).

For each reviewer a profile holds sums that add across sessions: the sessions seen, the
residual sum of squares :math:`\\sum RSS_r` of the additive model (and, apart, of the model
with display-slot effects where the session's orders identify them), its df share
:math:`\\sum d_r`
(:func:`~llm_council.stats.sessions.moderated_session_tests.reviewer_residual_variances`) and Rao's
expectation coefficients by reviewer name
(:func:`~llm_council.stats.sessions.moderated_session_tests.reviewer_noise_expectation`), from which
the lookup solves each reviewer's variance. The files that keep them beside a JSONL store
are :mod:`~llm_council.bias_audit.records.reviewer_profiles`'.

A session with a score that is not finite or larger than
:data:`~llm_council.bias_audit.records.summary_files.SCORE_BOUND` in size contributes
nothing (a hostile session of 1e300 scores would otherwise overflow the sums to infinity).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import structlog

from llm_council.bias_audit.records.summary_files import SCORE_BOUND
from llm_council.stats.design.additive_model import AdditiveFit
from llm_council.stats.design.design_cache import fit_additive_two_way_cached
from llm_council.stats.sessions.moderated_session_tests import (
    reviewer_noise_expectation,
    reviewer_residual_variances,
)
from llm_council.stats.slots.slot_adjusted_fit import with_slot_effects

log = structlog.get_logger("llm_council.bias_audit")

#: 2: each profile may carry its slot-adjusted sums (format 1 summaries are rebuilt)
PROFILE_FORMAT = 2
#: a cell whose display slot is not recorded
UNKNOWN_SLOT = -1


@dataclass(frozen=True)
class ReviewerProfile:
    r"""One reviewer's summed noise statistics over its past sessions.

    ``expectation[other]`` sums :math:`A_{r,other}` (see
    :func:`~llm_council.stats.sessions.moderated_session_tests.reviewer_noise_expectation`): the
    expected residual sum of squares of this reviewer is :math:`\sum_{o} A_{r,o}
    \sigma_o^2`, which the lookup solves for unbiased per-reviewer variances.
    ``slot_adjusted`` holds the same sums from the model with display-slot effects, over
    the sessions whose orders identified them (``None`` before any): the noise the slot
    test compares with, free of a favoured slot. The reviewer and self-preference tests
    keep the two-way sums, the noise of their own model.
    """

    sessions: int
    residual_sum_of_squares: float
    residual_df: float
    expectation: Mapping[str, float] = field(default_factory=dict)
    slot_adjusted: ReviewerProfile | None = None

    def merged(self, other: ReviewerProfile) -> ReviewerProfile:
        expectation = dict(self.expectation)
        for name, value in other.expectation.items():
            expectation[name] = expectation.get(name, 0.0) + value
        slot_adjusted = (
            other.slot_adjusted
            if self.slot_adjusted is None
            else self.slot_adjusted
            if other.slot_adjusted is None
            else self.slot_adjusted.merged(other.slot_adjusted)
        )
        return ReviewerProfile(
            self.sessions + other.sessions,
            self.residual_sum_of_squares + other.residual_sum_of_squares,
            self.residual_df + other.residual_df,
            expectation,
            slot_adjusted,
        )

    @property
    def variance(self) -> float | None:
        r""":math:`\sum RSS_r / \sum d_r` (the pooled variance split by leverage; biased
        toward the other reviewers' noise), or ``None`` without residual information."""
        if self.residual_df <= 0.0:
            return None
        return self.residual_sum_of_squares / self.residual_df


Profiles = dict[str, ReviewerProfile]


#: one non-self scored cell: reviewer, candidate, score and, when known, its display slot
Cell = tuple[str, str, float] | tuple[str, str, float, int | None]


def session_profiles(cells: Iterable[Cell]) -> Profiles:
    """One session's contribution from its non-self cells ``(reviewer, candidate, score
    [, display slot])``. With every slot known and identified, each profile also carries
    ``slot_adjusted`` sums from the model with slot effects
    (:func:`~llm_council.stats.slots.slot_adjusted_fit.with_slot_effects`), so the slot test's
    noise does not count a judge's favourite slot.

    A session with a score that is not finite or beyond :data:`SCORE_BOUND` in size gives
    ``{}`` (with a warning): its squares would overflow or swamp every honest session's."""
    cells = list(cells)
    if not scores_in_bounds(cell[2] for cell in cells):
        log.warning("summary_session_skipped", reason=f"a score beyond {SCORE_BOUND:g}")
        return {}
    reviewers: dict[str, int] = {}
    candidates: dict[str, int] = {}
    entries = []
    for cell in cells:
        reviewer, candidate, score = cell[0], cell[1], cell[2]
        slot = cell[3] if len(cell) > 3 else None
        entries.append(
            (
                reviewers.setdefault(reviewer, len(reviewers)),
                candidates.setdefault(candidate, len(candidates)),
                score,
                UNKNOWN_SLOT if slot is None else slot,
            )
        )
    if len(reviewers) < 2 or len(candidates) < 2:
        return {}
    table = np.full((len(reviewers), len(candidates)), np.nan)
    slot_table = np.full((len(reviewers), len(candidates)), UNKNOWN_SLOT, dtype=np.intp)
    for row, column, score, slot in entries:
        table[row, column] = score
        slot_table[row, column] = slot
    fit = fit_additive_two_way_cached(table)
    if fit is None:
        return {}
    names = list(reviewers)
    plain = _fit_profiles(fit, names)
    slot_fit = with_slot_effects(fit, slot_table[fit.rows, fit.columns])
    if slot_fit is fit:
        return plain
    adjusted = _fit_profiles(slot_fit, names)
    return {
        name: dataclasses.replace(profile, slot_adjusted=adjusted[name])
        for name, profile in plain.items()
    }


def _fit_profiles(fit: AdditiveFit, names: Sequence[str]) -> Profiles:
    """One session's sums from one fit: residual sums of squares, df shares, Rao's A."""
    variances, dfs = reviewer_residual_variances(fit)
    sums = np.where(dfs > 0.0, np.nan_to_num(variances) * dfs, 0.0)
    expectation = reviewer_noise_expectation(fit).tolist()
    return {
        name: ReviewerProfile(
            1,
            float(sums[index]),
            float(dfs[index]),
            {
                other: value
                for other, value in zip(names, expectation[index], strict=True)
                if value != 0.0
            },
        )
        for index, name in enumerate(names)
    }


def scores_in_bounds(scores: Iterable[float]) -> bool:
    """Every score is finite and at most :data:`SCORE_BOUND` in size."""
    return all(math.isfinite(score) and abs(score) <= SCORE_BOUND for score in scores)


def merge_profiles(
    base: Mapping[str, ReviewerProfile], extra: Mapping[str, ReviewerProfile]
) -> Profiles:
    merged = dict(base)
    for name, profile in extra.items():
        merged[name] = merged[name].merged(profile) if name in merged else profile
    return merged


def _usable_cell(record: Mapping[str, Any]) -> Cell | None:
    """The record's non-self scored cell of the review that counts (with its display slot
    when recorded as a non-negative integer), else ``None``. A non-finite score is kept, so
    :func:`session_profiles` leaves its whole session out."""
    score = record.get("score_value")
    if record.get("check_kind") is not None or record.get("is_self_review") or score is None:
        return None
    if not isinstance(score, int | float) or isinstance(score, bool):
        return None
    position = record.get("position")
    slot = position if isinstance(position, int) and not isinstance(position, bool) else None
    if slot is not None and slot < 0:
        slot = None
    return str(record["reviewer_id"]), str(record["model_id"]), float(score), slot


#: the record fields the profiles read (a stored line's keys, or a ReviewRecord's attributes)
PROFILE_FIELDS = (
    "score_value",
    "check_kind",
    "is_self_review",
    "reviewer_id",
    "model_id",
    "position",
)


def profile_fields(records: Iterable[Any]) -> list[dict[str, Any]]:
    """The fields :func:`records_profiles` reads, from in-memory records (the append path
    of both stores; a rebuild reads them straight from the stored lines)."""
    return [{name: getattr(record, name) for name in PROFILE_FIELDS} for record in records]


def records_profiles(records: Sequence[Mapping[str, Any]]) -> Profiles:
    """Profiles of one session's records (the append path)."""
    cells = [cell for record in records if (cell := _usable_cell(record)) is not None]
    return session_profiles(cells)


def _encode_one(profile: ReviewerProfile) -> list[Any]:
    encoded: list[Any] = [
        profile.sessions,
        profile.residual_sum_of_squares,
        profile.residual_df,
        dict(profile.expectation),
    ]
    if profile.slot_adjusted is not None:
        encoded.append(_encode_one(profile.slot_adjusted))
    return encoded


def _encode(profiles: Mapping[str, ReviewerProfile]) -> dict[str, list[Any]]:
    return {name: _encode_one(profile) for name, profile in sorted(profiles.items())}


def _decode_one(
    name: str, values: Sequence[Any], bound: float, *, nested: bool = False
) -> ReviewerProfile:
    if not isinstance(values, list) or not 4 <= len(values) <= (4 if nested else 5):
        raise ValueError(f"reviewer profile {name!r}: not a list of 4 or 5 fields")
    sessions = values[0]
    if not isinstance(sessions, int) or isinstance(sessions, bool) or not 0 <= sessions <= bound:
        raise ValueError(f"reviewer profile {name!r}: a bad session count")
    if not isinstance(values[3], dict):
        raise ValueError(f"reviewer profile {name!r}: no expectation coefficients")
    sums = [float(values[1]), float(values[2])]
    expectation = {str(other): float(a) for other, a in values[3].items()}
    numbers = [*sums, *expectation.values()]
    if not all(math.isfinite(x) and abs(x) <= bound for x in numbers) or min(sums) < 0:
        raise ValueError(f"reviewer profile {name!r}: a sum is negative, not finite or too large")
    slot_adjusted = _decode_one(name, values[4], bound, nested=True) if len(values) == 5 else None
    return ReviewerProfile(sessions, sums[0], sums[1], expectation, slot_adjusted)


def _decode(encoded: Mapping[str, Any], bound: float = math.inf) -> Profiles:
    """Profiles from their JSON form; a count, sum or df that is negative, not finite or
    beyond ``bound`` in size (a damaged or hand-edited file) raises ``ValueError``, so the
    file is not used."""
    if not isinstance(encoded, Mapping):
        raise ValueError("reviewer profiles: not a JSON object")
    return {str(name): _decode_one(str(name), values, bound) for name, values in encoded.items()}


def encode_profiles(profiles: Mapping[str, ReviewerProfile]) -> dict[str, list[Any]]:
    """Profiles in the sidecar's JSON form (``{reviewer: [sessions, rss, df, {A}, ...]}``),
    for another store's summary (the PostgreSQL store's profile tables)."""
    return _encode(profiles)


def decode_profiles(encoded: Mapping[str, Any], bound: float = math.inf) -> Profiles:
    """Profiles from :func:`encode_profiles`' form; a damaged entry (or a count or sum
    beyond ``bound`` in size) raises ``ValueError`` (or ``KeyError``/``TypeError``/
    ``IndexError`` for a wrong shape)."""
    return _decode(encoded, bound)
