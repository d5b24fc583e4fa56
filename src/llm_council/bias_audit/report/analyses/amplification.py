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

from dataclasses import dataclass, field

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.anchoring import MAX_SLOTS
from llm_council.bias_audit.report.load.tables import dense_codes, nullable_floats
from llm_council.stats.bias_effects.amplification import amplification_screen
from llm_council.stats.numerics.distribution_functions import binomial_greater_p

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


def amplification(
    connection: duckdb.DuckDBPyConnection,
    significance_level: float = 0.05,
    seed: int = 0,
    n_permutations: int = 99,
) -> Amplification | None:
    """Screen every session with at least 2 reviewers and 3 answers.

    99 re-randomisations per gated session: p-values in steps of 0.01, exact at alpha = 0.05,
    and about 1 CPU second per million records.
    """
    rows = connection.execute(
        # ``scored`` is ``records`` with a score, indices joined; no per-record session_id
        # strings (a million Python objects) are fetched, only the listed sessions' below
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
    n_reviewers, n_models = int(reviewer.max()) + 1, int(model.max()) + 1
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
    del rows, session, reviewer, model, position, score  # the tables hold what is needed
    screen = amplification_screen(
        by_slot,
        by_model,
        np.random.default_rng(seed),
        agreement_threshold=AGREEMENT_THRESHOLD,
        significance_level=significance_level,
        n_permutations=n_permutations,
        shared_order=shared,
    )
    listed = [int(s) for s in session_of_code[screen.suspect][:_LISTED]]
    id_of_session = (
        dict(
            connection.execute(
                "SELECT session, any_value(session_id) FROM records WHERE session IN "
                "(SELECT unnest(?::INTEGER[])) GROUP BY session",
                [listed],
            ).fetchall()
        )
        if listed
        else {}
    )
    n_agreeing = int(np.sum(np.nan_to_num(screen.agreement, nan=-1.0) >= AGREEMENT_THRESHOLD))
    n_suspect = int(screen.suspect.sum())
    excess = (
        binomial_greater_p(n_suspect, n_agreeing, significance_level)
        if n_agreeing
        else float("nan")
    )
    return Amplification(
        n_sessions=n_sessions,
        n_agreeing=n_agreeing,
        n_suspect=n_suspect,
        expected_by_chance=screen.expected_false_flags,
        excess_p_value=excess,
        shared_order=shared,
        agreement_threshold=AGREEMENT_THRESHOLD,
        significance_level=significance_level,
        suspect_sessions=[str(id_of_session[s]) for s in listed],
    )
