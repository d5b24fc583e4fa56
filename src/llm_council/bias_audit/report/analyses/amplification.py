"""Amplification: sessions where the council agrees strongly and the consensus follows order.

A session is *suspect* when its reviewers' scores correlate strongly (mean pairwise r at or
above :data:`AGREEMENT_THRESHOLD`) and its scores fall (or rise) with display slot beyond
what re-randomised orders produce (two-sided randomization p < alpha; see
:mod:`llm_council.stats.bias_effects.amplification`). With no position effect each session is
flagged
with probability <= alpha, so the report also shows the count expected by chance and a
one-sided binomial test of the excess over all sessions that pass the agreement gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.anchoring import MAX_SLOTS
from llm_council.bias_audit.report.analyses.incremental_section import SummaryNotMergeable
from llm_council.bias_audit.report.analyses.session_rows import session_ids_of
from llm_council.bias_audit.report.load.tables import dense_codes, nullable_floats
from llm_council.stats.bias_effects.amplification import (
    alignment_randomization_p,
    mean_pairwise_correlation,
)
from llm_council.stats.numerics.distribution_functions import binomial_greater_p
from llm_council.stats.numerics.keyed_uniforms import KeyedUniforms, text_keys

#: mean pairwise r at or above which a council "agrees strongly" (descriptive gate)
AGREEMENT_THRESHOLD = 0.7
#: how many suspect session ids the report lists (the count is always complete)
_LISTED = 20


@dataclass(frozen=True)
class Amplification:
    n_sessions: int
    n_agreeing: int  # sessions passing the agreement gate
    n_suspect: int
    expected_by_chance: float  # alpha * n_agreeing (an upper bound with no position effect)
    excess_p_value: float  # one-sided binomial test of n_suspect against alpha * n_agreeing
    shared_order: bool  # every reviewer saw the same order in every session
    agreement_threshold: float
    significance_level: float
    suspect_sessions: list[str] = field(default_factory=list)  # first few session ids
    # the excess is a finding of the report-wide procedure (set by report_verdicts, ADR 0054)
    excess_is_finding: bool = False


def _every_session_shares_one_order(
    connection: duckdb.DuckDBPyConnection, answer: np.ndarray, position: np.ndarray
) -> bool:
    """Did every reviewer see each answer at the same display slot, in every session?

    ``answer`` numbers the fetched rows' (session, model) pairs, ``position`` their slots.
    Two slots for one answer among them settle it (the usual case, with per-reviewer
    orders); only when they agree is every record asked, unscored and malformed ones too.
    """
    slot_of_answer = np.empty(int(answer.max()) + 1, dtype=position.dtype)
    slot_of_answer[answer] = position  # one of each answer's slots
    if np.any(slot_of_answer[answer] != position):
        return False
    shared_row = connection.execute(
        # one display slot per answer <=> its first and last slot agree (no DISTINCT count)
        """SELECT coalesce(bool_and(first_slot = last_slot), false) FROM (
               SELECT min(position) AS first_slot, max(position) AS last_slot
               FROM records GROUP BY session, model)"""
    ).fetchone()
    return bool(shared_row[0]) if shared_row else False


@dataclass(frozen=True)
class AmplificationSummary:
    """Per session (sorted by id): the agreement, the randomization p (NaN below the gate)
    and whether it is suspect; ``shared_order`` for the whole set (None: no session)."""

    session_id: np.ndarray
    agreement: np.ndarray
    p_value: np.ndarray
    suspect: np.ndarray
    shared_order: bool | None


def _score_tables(
    connection: duckdb.DuckDBPyConnection,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool] | None:
    """(session codes' dense indices, by_slot, by_model, shared order) of the scored cells."""
    rows = connection.execute(
        # ``scored`` is ``records`` with a score, indices joined; no per-record session_id
        # strings (a million Python objects) are fetched
        f"""SELECT session, reviewer_index, model_index, position, score
           FROM scored WHERE position >= 0 AND position < least(n_candidates, {MAX_SLOTS})"""
    ).fetchnumpy()
    if len(rows["session"]) == 0:
        return None
    session_of_code, session = dense_codes(np.asarray(rows["session"], dtype=np.int64))
    reviewer = np.asarray(rows["reviewer_index"], dtype=np.int64)
    model = np.asarray(rows["model_index"], dtype=np.int64)
    position = np.asarray(rows["position"], dtype=np.int64)
    score = nullable_floats(rows["score"])
    n_sessions = int(session.max()) + 1
    n_reviewers, n_models = _count(connection, "reviewers"), _count(connection, "models")
    n_slots = int(position.max()) + 1
    by_slot = np.full((n_sessions, n_reviewers, n_slots), np.nan)
    by_model = np.full((n_sessions, n_reviewers, n_models), np.nan)
    cell = session * n_reviewers + reviewer  # flat (session, reviewer) row of both tables
    by_slot.ravel()[cell * n_slots + position] = score
    cell *= n_models
    cell += model
    by_model.ravel()[cell] = score
    del cell
    shared = _every_session_shares_one_order(connection, session * n_models + model, position)
    return session_of_code, by_slot, by_model, shared


def _count(connection: duckdb.DuckDBPyConnection, table: str) -> int:
    row = connection.execute(f"SELECT coalesce(max({table[:-1]}_index), -1) + 1 FROM {table}")
    found = row.fetchone()
    return int(found[0]) if found else 0


class AmplificationSection:
    """:func:`amplification` as an incremental section (ADR 0073). Each session's
    re-randomised orders come from its own stream, keyed by its id (and each reviewer's
    name): :class:`~llm_council.stats.numerics.keyed_uniforms.KeyedUniforms`, so a
    session's p is the same whichever sessions it is screened with."""

    name = "amplification"
    version = 1

    def __init__(
        self, significance_level: float = 0.05, seed: int = 0, n_permutations: int = 99
    ) -> None:
        self.significance_level = significance_level
        self.seed = seed
        self.n_permutations = n_permutations

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> AmplificationSummary:
        tables = _score_tables(connection)
        if tables is None:
            empty = np.zeros(0)
            return AmplificationSummary(np.zeros(0, dtype=str), empty, empty, empty > 0, None)
        session_of_code, by_slot, by_model, shared = tables
        ids = session_ids_of(connection, session_of_code)
        agreement = mean_pairwise_correlation(by_model)
        del by_model
        gated = np.where(np.isfinite(agreement), agreement >= AGREEMENT_THRESHOLD, False)
        p_value = np.full(gated.shape, np.nan)
        if gated.any():
            reviewers = [
                str(name)
                for (name,) in connection.execute(
                    "SELECT reviewer FROM reviewers ORDER BY reviewer_index"
                ).fetchall()
            ]
            if shared:
                keys = text_keys(ids[gated].tolist()).reshape(-1, 1)
            else:
                keys = text_keys(
                    f"{session}\x00{reviewer}" for session in ids[gated] for reviewer in reviewers
                ).reshape(-1, len(reviewers))
            p_value[gated] = alignment_randomization_p(
                by_slot[gated],
                cast(np.random.Generator, KeyedUniforms(self.seed, keys)),
                self.n_permutations,
                shared,
            )
        suspect = gated & np.where(np.isfinite(p_value), p_value < self.significance_level, False)
        order = np.argsort(ids, kind="stable")
        return AmplificationSummary(
            ids[order], agreement[order], p_value[order], suspect[order], shared
        )

    def merge(self, saved: AmplificationSummary, new: AmplificationSummary) -> AmplificationSummary:
        if None not in (saved.shared_order, new.shared_order) and (
            saved.shared_order != new.shared_order
        ):
            # the permutation scheme is chosen for the whole store: recompute
            raise SummaryNotMergeable("amplification: the shared display order changed")
        shared = new.shared_order if saved.shared_order is None else saved.shared_order
        ids = np.concatenate([saved.session_id, new.session_id])
        order = np.argsort(ids, kind="stable")
        return AmplificationSummary(
            ids[order],
            np.concatenate([saved.agreement, new.agreement])[order],
            np.concatenate([saved.p_value, new.p_value])[order],
            np.concatenate([saved.suspect, new.suspect])[order],
            shared,
        )

    def finish(self, summary: AmplificationSummary) -> Amplification | None:
        return _amplification(summary, self.significance_level)

    def to_payload(
        self, summary: AmplificationSummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {
            "session_id": summary.session_id,
            "agreement": summary.agreement,
            "p_value": summary.p_value,
            "suspect": summary.suspect,
        }
        return {"shared_order": summary.shared_order}, arrays

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> AmplificationSummary:
        shared = meta.get("shared_order")
        if shared is not None and not isinstance(shared, bool):
            raise ValueError("amplification summary: shared_order is not a boolean")
        names = ("session_id", "agreement", "p_value", "suspect")
        missing = [name for name in names if name not in arrays]
        if missing:
            raise ValueError(f"amplification summary: no array {missing[0]!r}")
        if len({arrays[name].shape for name in names}) != 1:
            raise ValueError("amplification summary: arrays of different lengths")
        ids, agreement, p_value, suspect = (arrays[name] for name in names)
        return AmplificationSummary(ids, agreement, p_value, suspect, shared)


def _amplification(
    summary: AmplificationSummary, significance_level: float
) -> Amplification | None:
    """The section's result from the summary of every session."""
    if summary.session_id.size == 0:
        return None
    n_agreeing = int(np.sum(np.nan_to_num(summary.agreement, nan=-1.0) >= AGREEMENT_THRESHOLD))
    n_suspect = int(summary.suspect.sum())
    excess = (
        binomial_greater_p(n_suspect, n_agreeing, significance_level)
        if n_agreeing
        else float("nan")
    )
    return Amplification(
        n_sessions=int(summary.session_id.size),
        n_agreeing=n_agreeing,
        n_suspect=n_suspect,
        expected_by_chance=float(significance_level * n_agreeing),
        excess_p_value=excess,
        shared_order=bool(summary.shared_order),
        agreement_threshold=AGREEMENT_THRESHOLD,
        significance_level=significance_level,
        suspect_sessions=[str(s) for s in summary.session_id[summary.suspect][:_LISTED]],
    )


def amplification(
    connection: duckdb.DuckDBPyConnection,
    significance_level: float = 0.05,
    seed: int = 0,
    n_permutations: int = 99,
) -> Amplification | None:
    """Screen every session with at least 2 reviewers and 3 answers.

    99 re-randomisations per gated session: p-values in steps of 0.01, exact at alpha = 0.05
    (every session of ``connection``: :class:`AmplificationSection` with nothing saved).
    """
    section = AmplificationSection(significance_level, seed, n_permutations)
    return section.finish(section.summarize(connection))
