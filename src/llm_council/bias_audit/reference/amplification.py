"""The reference design's ``llm_council.bias_amplification``, as a thin facade over our screen.

"Do reviewers converge because the work is good, or because of shared position effects?"
Per session (its ADR-047, report-only), over the reference's records or ours
(:class:`~llm_council.bias_persistence.BiasMetricRecord`). The numbers are our
amplification screen's (:mod:`llm_council.stats.bias_effects.amplification`, ADR 0039):

- ``agreement_index``: the mean pairwise Pearson r of the reviewers' scores over the
  answers both scored (pairs with fewer than 3 common answers are left out; None when no
  pair is left);
- ``position_alignment``: the mean over reviewers of Pearson r(-slot, score) in each
  reviewer's own display order (positive: earlier slots score higher; None when no
  reviewer has two slots with different scores). Descriptive;
- ``alignment_p_value``: the two-sided randomization test of the within-reviewer
  slot-score covariance, re-drawing the display orders (one order for all reviewers when
  the session showed one shared order), exact under random orders (Edgington & Onghena
  2007), so a session without a position effect is flagged with probability at most 5%;
- ``amplification_suspect``: agreement >= 0.7 and p < 0.05. Where the reference
  flagged alignment > 0.5 (a correlation over 3 answers that chance passes often), this
  flag has a known false-positive rate; with one shared order of 3 answers the smallest
  possible p is 1/6, so such a session is never flagged.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from llm_council.bias_audit.reference.persistence import BiasMetricRecord
from llm_council.stats.bias_effects.amplification import amplification_screen

AGREEMENT_THRESHOLD = 0.7
SIGNIFICANCE_LEVEL = 0.05
N_PERMUTATIONS = 199


@dataclass(frozen=True)
class SessionDecomposition:
    """One session's agreement and display-order alignment (the reference's name and fields)."""

    session_id: str
    n_reviewers: int
    n_models: int
    agreement_index: float | None
    position_alignment: float | None
    alignment_p_value: float | None  # None when the agreement gate was not passed
    shared_order: bool
    amplification_suspect: bool


#: the name this module gave it before the reference's was adopted
SessionAgreement = SessionDecomposition


def _finite(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _reviewer_alignment(slots: list[int], scores: list[float]) -> float | None:
    if len(set(slots)) < 2 or len(set(scores)) < 2:
        return None
    return float(np.corrcoef(-np.asarray(slots, dtype=float), scores)[0, 1])


def _session(session_id: str, rows: list[BiasMetricRecord], seed: int) -> SessionDecomposition:
    reviewers = sorted({row.reviewer_id for row in rows})
    models = sorted({row.model_id for row in rows})
    n_slots = max(row.position for row in rows) + 1
    by_slot = np.full((1, len(reviewers), n_slots), np.nan)
    by_model = np.full((1, len(reviewers), len(models)), np.nan)
    per_reviewer: dict[str, tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
    slots_of_model: dict[str, set[int]] = defaultdict(set)
    for row in rows:
        r = reviewers.index(row.reviewer_id)
        by_slot[0, r, row.position] = row.score_value
        by_model[0, r, models.index(row.model_id)] = row.score_value
        per_reviewer[row.reviewer_id][0].append(row.position)
        per_reviewer[row.reviewer_id][1].append(row.score_value)
        slots_of_model[row.model_id].add(row.position)
    shared = all(len(slots) == 1 for slots in slots_of_model.values())
    screen = amplification_screen(
        by_slot,
        by_model,
        np.random.default_rng(seed),
        agreement_threshold=AGREEMENT_THRESHOLD,
        significance_level=SIGNIFICANCE_LEVEL,
        n_permutations=N_PERMUTATIONS,
        shared_order=shared,
    )
    alignments = [
        value
        for slots, scores in per_reviewer.values()
        if (value := _reviewer_alignment(slots, scores)) is not None
    ]
    return SessionDecomposition(
        session_id=session_id,
        n_reviewers=len(reviewers),
        n_models=len(models),
        agreement_index=_finite(screen.agreement[0]),
        position_alignment=float(np.mean(alignments)) if alignments else None,
        alignment_p_value=_finite(screen.p_value[0]),
        shared_order=shared,
        amplification_suspect=bool(screen.suspect[0]),
    )


def session_agreement_decomposition(
    records: Sequence[BiasMetricRecord], seed: int = 0
) -> list[SessionDecomposition]:
    """One decomposition per session with at least two reviewers, in first-seen order.

    Only records whose ``position`` is a display slot (schema >= 1.2.0, or ours) with a
    position >= 0 are used: before 1.2.0 the reference wrote the *ranking* index there,
    which correlates with the score by construction (alignment 1.0 for any session).
    Pure: reads nothing, writes nothing.
    """
    by_session: dict[str, list[BiasMetricRecord]] = defaultdict(list)
    for record in records:
        if record.position >= 0 and record.position_is_display_order:
            by_session[record.session_id].append(record)
    return [
        _session(session_id, rows, seed)
        for session_id, rows in by_session.items()
        if len({row.reviewer_id for row in rows}) >= 2
    ]


def amplification_report(records: Sequence[BiasMetricRecord], seed: int = 0) -> dict[str, Any]:
    """Counts over sessions: analysed, agreeing (gate passed), suspect, and the rate."""
    sessions = session_agreement_decomposition(records, seed)
    agreeing = [
        s
        for s in sessions
        if s.agreement_index is not None and s.agreement_index >= AGREEMENT_THRESHOLD
    ]
    suspects = [s for s in agreeing if s.amplification_suspect]
    return {
        "sessions_analyzed": len(sessions),
        "high_agreement_sessions": len(agreeing),
        "amplification_suspects": len(suspects),
        "amplification_rate_among_agreement": len(suspects) / len(agreeing) if agreeing else 0.0,
        "expected_by_chance_at_most": SIGNIFICANCE_LEVEL * len(agreeing),
        "shared_order_sessions": sum(s.shared_order for s in sessions),
        "suspect_sessions": [s.session_id for s in suspects],
        "report_only": True,
    }


def format_amplification_report(report: dict[str, Any]) -> str:
    """Plain text of :func:`amplification_report` (report-only: it never gates a session)."""
    if not report.get("sessions_analyzed"):
        return "Amplification (report-only): insufficient data, no session with 2+ reviewers.\n"
    return (
        "Amplification (report-only, never gates a session)\n"
        f"sessions analysed: {report['sessions_analyzed']}; agreeing (mean r >= "
        f"{AGREEMENT_THRESHOLD}): {report['high_agreement_sessions']}; amplification suspects "
        f"(agreement and display-order alignment p < {SIGNIFICANCE_LEVEL}): "
        f"{report['amplification_suspects']}, at most "
        f"{report['expected_by_chance_at_most']:.2f} expected by chance\n"
        f"sessions with one shared display order: {report['shared_order_sessions']} (slot and "
        "model are confounded there; 3 answers in one shared order can never be flagged)\n"
    )


__all__ = [
    "SessionAgreement",
    "SessionDecomposition",
    "amplification_report",
    "format_amplification_report",
    "session_agreement_decomposition",
]
