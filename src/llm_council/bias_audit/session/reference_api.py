"""The reference design's audit helpers, with its names, signatures and return shapes.

Users of the council this project follows call ``calculate_length_correlation``,
``audit_reviewer_calibration`` and ``calculate_position_bias`` from
``llm_council.bias_audit``. They are here with the same call shapes, but each computes
the statistic the per-session audit computes (same tables, same tests), not the naive
formula; each docstring says where and why the numbers differ (ADR 0015).
``extract_scores_from_stage2`` lives in :mod:`llm_council.bias_audit.session.stage2_scores`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from llm_council.bias_audit.records.reviewer_profiles import ReviewerProfile
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.noise_priors import history_profiles
from llm_council.bias_audit.session.score_table import (
    UNKNOWN_POSITION,
    ScoreTable,
    checked_score,
    score_table_from_mappings,
)
from llm_council.bias_audit.session.thresholds import AuditThresholds, load_thresholds
from llm_council.errors import InputError
from llm_council.stats.inference.correlation import pearson_correlation_t_test
from llm_council.stats.slots.position_tests import joint_slot_effects, position_randomization_test
from llm_council.stats.slots.slot_identification import slot_effects_identified

#: ``calculate_position_bias`` builds dense matrices of (scored cells)^2; past this many
#: cells pool the sessions with ``llm-council bias-report`` instead.
MAX_POSITION_CELLS = 2_000


def calculate_length_correlation(
    responses: Any, scores: Mapping[str, Mapping[str, float | None]]
) -> tuple[float | None, float | None]:
    """``(r, p)``: Pearson r of ln(word count) vs the mean score from the *other* members.

    One pair per answer: x = ln(max(words, 1)), y = the mean score the answer got from
    reviewers other than its author; p is the exact two-sided t test with n - 2 df
    (:func:`~llm_council.stats.inference.correlation.pearson_correlation_t_test`), the same
    numbers as ``BiasAuditResult.length_score_correlation`` / ``length_score_p_value``.

    Where it differs from the naive formula: the reference correlated raw word counts
    with the mean of *all* scores (a self-preferring author inflates its own point) and
    took p from a normal approximation, which fires far above 5% at n = 4-5. It also
    returned ``(0.0, 1.0)`` when r is undefined (< 3 answers, or a constant variable);
    here that is ``(None, None)``, because "no data" is not "no correlation".
    ``responses``: ``[{"model", "response"}]`` or ``{model: text}``; ``scores``:
    ``{reviewer: {candidate: score}}``.
    """
    table = score_table_from_mappings(responses, scores)
    others = np.where(table.is_self, np.nan, table.scores)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an unscored answer's mean is NaN
        consensus = np.nanmean(others, axis=0) if table.reviewers else np.full(0, np.nan)
    if consensus.size == 0:
        return None, None
    log_words = np.log(np.maximum(table.length_words, 1.0))
    correlation = pearson_correlation_t_test(log_words, consensus)
    return correlation.r, correlation.p_value


def audit_reviewer_calibration(
    scores: Mapping[str, Mapping[str, float | None]],
    *,
    thresholds: AuditThresholds | None = None,
    history: str | Path | Mapping[str, ReviewerProfile] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{reviewer: {"mean", "std", "count", ...}}`` over the scores each reviewer gave.

    ``history``: a JSONL store path or reviewer profiles, as for
    :func:`~llm_council.bias_audit.session.audit.run_bias_audit` (ADR 0045).

    ``mean`` / ``std`` (sample, ddof 1) / ``count`` are over the reviewer's scores of
    *other members'* answers; ``n_self_scores_excluded`` counts its own-answer scores
    left out (a self-preferring reviewer would otherwise look generous). ``offset`` is
    the reviewer's points above the other reviewers *on the same answers* (the audit's
    additive model) and ``offset_p_value`` its Holm-adjusted two-sided p; ``verdict`` is
    ``"harsh"``, ``"generous"`` or ``None`` exactly as the per-session audit decides.

    Where it differs from the naive formula: the reference compared plain means with
    "median - 1 std" of the means, which labels somebody in almost every session (with
    4 reviewers, 1 std of 4 means is always crossed by some mean) and confounds a
    reviewer's leniency with which answers it happened to score. ``std`` is ``None``
    (not 0.0) below two scores. A reviewer whose mapping is empty is omitted.
    """
    table = score_table_from_mappings({}, scores)
    audit = audit_score_table(
        table, thresholds or load_thresholds(), history=history_profiles(history)
    )
    calibration: dict[str, dict[str, Any]] = {}
    for row, reviewer in enumerate(table.reviewers):
        scored = ~np.isnan(table.scores[row])
        if not scored.any():
            continue
        own = scored & table.is_self[row]
        variance = audit.reviewer_score_variance.get(reviewer)
        verdict = (
            "harsh"
            if reviewer in audit.harsh_reviewers
            else "generous"
            if reviewer in audit.generous_reviewers
            else None
        )
        calibration[reviewer] = {
            "mean": audit.reviewer_mean_scores.get(reviewer),
            "std": None if variance is None else math.sqrt(variance),
            "count": int(np.count_nonzero(scored & ~own)),
            "n_self_scores_excluded": int(np.count_nonzero(own)),
            "offset": audit.reviewer_offsets.get(reviewer),
            "offset_p_value": audit.reviewer_offset_p_values.get(reviewer),
            "verdict": verdict,
        }
    return calibration


def _entry_text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"{where} must be text, got {type(value).__name__}")
    return value


def _table_from_session_data(session_data: Any) -> ScoreTable:
    """One row per entry (a reviewer's view), one column per (session_id, candidate)."""
    if not isinstance(session_data, Sequence) or isinstance(session_data, str | bytes):
        raise InputError(
            "session_data must be a list of {'display_order': [...], 'scores': {...}}, got "
            f"{type(session_data).__name__}"
        )
    rows: list[dict[tuple[str, str], tuple[int, float | None]]] = []
    reviewers: list[str | None] = []
    columns: dict[tuple[str, str], int] = {}
    for index, entry in enumerate(session_data):
        where = f"session_data[{index}]"
        if not isinstance(entry, Mapping):
            raise InputError(f"{where} must be a mapping, got {type(entry).__name__}")
        order, given = entry.get("display_order"), entry.get("scores")
        if not isinstance(order, Sequence) or isinstance(order, str | bytes):
            raise InputError(f"{where}['display_order'] must be a list of candidates")
        if not isinstance(given, Mapping):
            raise InputError(f"{where}['scores'] must be a mapping of candidate -> score")
        session = entry.get("session_id", "")
        session = _entry_text(session, f"{where}['session_id']")
        reviewer = entry.get("reviewer")
        reviewers.append(
            None if reviewer is None else _entry_text(reviewer, f"{where}['reviewer']")
        )
        slots: dict[str, int] = {}
        for slot, candidate in enumerate(order):
            name = _entry_text(candidate, f"{where}['display_order'][{slot}]")
            if name in slots:
                raise InputError(f"{where}['display_order'] lists {name!r} twice")
            slots[name] = slot
        row: dict[tuple[str, str], tuple[int, float | None]] = {}
        for candidate, score in given.items():
            name = _entry_text(candidate, f"{where}['scores'] key {candidate!r}")
            if name not in slots:
                raise InputError(f"{where}['scores'][{name!r}]: not in display_order")
            value = checked_score(score, f"{where}['scores'][{name!r}]")
            key = (session, name)
            columns.setdefault(key, len(columns))
            row[key] = (slots[name], value)
        rows.append(row)
    shape = (len(rows), len(columns))
    scores = np.full(shape, np.nan)
    positions = np.full(shape, UNKNOWN_POSITION, dtype=np.intp)
    is_self = np.zeros(shape, dtype=bool)
    names = tuple(f"{session}/{name}" for session, name in columns)
    for row_index, row in enumerate(rows):
        for key, (slot, value) in row.items():
            col = columns[key]
            positions[row_index, col] = slot
            is_self[row_index, col] = key[1] == reviewers[row_index]
            if value is not None:
                scores[row_index, col] = value
    return ScoreTable(
        reviewers=tuple(f"entry {index}" for index in range(len(rows))),
        candidates=names,
        scores=scores,
        positions=positions,
        is_self=is_self,
        length_chars=np.full(len(names), np.nan),
        length_words=np.full(len(names), np.nan),
    )


def calculate_position_bias(
    session_data: Any,
    position_mapping: Any = None,
    *,
    thresholds: AuditThresholds | None = None,
) -> tuple[float | None, bool | None]:
    """``(variance, detected)`` of display-slot effects fitted next to reviewer and answer.

    ``session_data``: a list of ``{"display_order": [candidate, ...], "scores":
    {candidate: score}}``, one entry per review; optional ``"session_id"`` (entries of
    one session share answers; without it a candidate's name stands for its answers)
    and ``"reviewer"`` (its own answer is left out). The older reference call
    ``calculate_position_bias(scores, position_mapping)`` is accepted too.

    ``variance`` is the count-weighted variance of the slot effects of the model score =
    mean + entry + answer + slot (points squared; Frisch-Waugh-Lovell, see
    :func:`~llm_council.stats.slots.position_tests.joint_slot_effects`); ``detected`` is the
    audit's flag: the randomization test that re-draws each entry's order (valid when
    orders were drawn at random) has p < significance_level and the variance reaches
    ``position_variance_threshold``. ``(None, None)`` when the slots are not identified
    (:func:`~llm_council.stats.slots.slot_identification.slot_effects_identified`: every entry
    saw the same order of the same answers, so a slot cannot be told from an answer) or
    there are too few scores, and for the reference call ``(scores, None)`` (no display
    positions were given: nothing to test).

    Where it differs from the naive formula: the reference took the variance of the raw
    mean score per position, which with one shared order measures answer quality, not
    position, and had no test (so no known false-positive rate).
    """
    if (
        position_mapping is None
        and isinstance(session_data, Mapping)
        and all(isinstance(given, Mapping) for given in session_data.values())
    ):
        # the reference's call ``(scores, None)``: no display positions, nothing to test
        return None, None
    if position_mapping is not None:
        table = score_table_from_mappings({}, session_data, position_mapping)
    else:
        table = _table_from_session_data(session_data)
    usable = ~np.isnan(table.scores) & ~table.is_self & (table.positions != UNKNOWN_POSITION)
    n_cells = int(np.count_nonzero(usable))
    if n_cells > MAX_POSITION_CELLS:
        raise InputError(
            f"session_data has {n_cells} scored cells (at most {MAX_POSITION_CELLS} here): "
            "pool many sessions with `llm-council bias-report` instead"
        )
    row_codes, column_codes = np.nonzero(usable)
    slots = table.positions[usable]
    if not slot_effects_identified(row_codes, column_codes, slots):
        return None, None
    chosen = thresholds or load_thresholds()
    # entry + answer indicators; sessions make the design block-diagonal (not connected),
    # so fit by least squares with the pseudo-inverse: the residuals (a projection) are
    # unique whatever the parametrization
    design = np.hstack(
        [
            (row_codes[:, None] == np.unique(row_codes)[None, :]).astype(float),
            (column_codes[:, None] == np.unique(column_codes)[None, :]).astype(float),
        ]
    )
    observed = table.scores[usable]
    coefficients, *_ = np.linalg.lstsq(design, observed, rcond=None)
    residuals = observed - design @ coefficients
    if observed.size - int(np.linalg.matrix_rank(design)) < 1:
        return None, None
    slot_effects = joint_slot_effects(design, residuals, slots)
    test = position_randomization_test(
        residuals, slots, row_codes, n_permutations=chosen.position_permutations, seed=0
    )
    if slot_effects is None or test is None or not math.isfinite(slot_effects.weighted_variance):
        return None, None
    variance = slot_effects.weighted_variance
    detected = (
        test.p_value < chosen.significance_level and variance >= chosen.position_variance_threshold
    )
    return variance, detected


__all__ = [
    "MAX_POSITION_CELLS",
    "audit_reviewer_calibration",
    "calculate_length_correlation",
    "calculate_position_bias",
]
