"""Favouritism: the reviewer x candidate-model matrix of effects beyond quality and leniency.

Per session the scores form a reviewer x model table; a two-way additive fit removes each
answer's quality (column) and each reviewer's leniency that session (row), and each cell's
residual, divided by its leverage complement, estimates that cell's own bonus in points
(see :mod:`llm_council.stats.bias_effects.favouritism`). Sessions are the unit: the interval is a t
interval over the per-session effects; flags are Holm-corrected over every tested cell.
The diagonal (a reviewer on its own answer) is self-preference measured the same way.

The cells are length-controlled: each reviewer's slope on ln(words) (fitted jointly with
the cell effects, so identified only by how a model's answer length varies between
sessions) is taken out of its scores first. Without that, a judge that likes long answers
shows up as favouring whichever model writes long ones, and as self-preference when that
model is its own (the default simulated ``verbose`` judge: +0.84 points on itself before,
about zero after, matching the joint model's self-preference term).

A large favour of ``r`` toward ``m`` leaves a small opposite trace on the rest of row
``r`` and column ``m`` (about ``-delta / (k - 1)`` each, ``+delta / (k - 1)^2`` elsewhere),
because only the double-centred interaction is identified. Flagged cells whose interval
holds the trace the larger flags predict are marked ``spillover`` and listed apart.

Where a reviewer saw a model at one display slot in every session (a fixed order, as in
karpathy's council), favouring the model and favouring the slot give the same scores: the
cell is marked ``confounded_with_slot`` and is never flagged (issue 23, ADR 0040).

The report computes it from per-session summaries (:class:`FavouritismSection`, ADR 0078):
each session's table is kept, and the slopes and the matrix are fitted from all of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.favouritism_summary import (
    FavouritismSummary,
    favouritism_from_payload,
    favouritism_payload,
    merge_favouritism,
    summarize_favouritism,
)
from llm_council.bias_audit.report.estimates import Interval
from llm_council.stats.bias_effects.favouritism import FavouritismMatrix, mutual_blocs
from llm_council.stats.bias_effects.favouritism_residuals import (
    effects_from_residuals,
    matrix_from_session_effects,
    two_way_residuals,
)
from llm_council.stats.design.row_patterns import row_patterns

#: the multiplicity correction applied to the matrix, named in every rendering
CORRECTION = "Holm over all tested cells (holm_p, for reference); flags: the report-wide procedure"


@dataclass(frozen=True)
class FavouritismCell:
    """Reviewer ``reviewer``'s extra points for ``model``'s answers, net of quality and leniency."""

    reviewer: str
    model: str
    is_self: bool
    effect: Interval  # points; p_value is the raw (uncorrected) t-test p
    n_sessions: int
    holm_p: float
    flagged: bool  # Holm-adjusted p < significance level (either sign), not confounded
    spillover: bool = False  # flagged, but the interval holds what larger flags spill onto it
    # the reviewer saw this model at one display slot (``fixed_slot``) in every session:
    # slot and model effects are the same numbers, so the cell is never flagged
    confounded_with_slot: bool = False
    fixed_slot: int | None = None


@dataclass(frozen=True)
class Favouritism:
    """The whole matrix, its flagged pairs and mutual-favour blocs."""

    reviewers: list[str]
    models: list[str]
    cells: list[FavouritismCell]  # row-major: reviewers x models, untestable cells left out
    mutual_blocs: list[list[str]] = field(default_factory=list)  # reviewer ids per bloc
    significance_level: float = 0.05
    correction: str = CORRECTION
    length_controlled: bool = True  # cells net of each reviewer's ln(words) slope
    # reviewers x models: the most common pattern of observed cells, which stands for the
    # design in the spill-over model (re-read when the report-wide procedure re-decides)
    design_pattern: list[list[bool]] = field(default_factory=list)

    def flagged_pairs(self) -> list[FavouritismCell]:
        """Flagged reviewer-model pairs that are not spill-over of a larger flag (no self cells)."""
        return [c for c in self.cells if c.flagged and not c.spillover and not c.is_self]


def _modal_pattern(observed: np.ndarray) -> np.ndarray:
    """The most common reviewers x models pattern of observed cells over sessions (the one
    :func:`~llm_council.stats.bias_effects.favouritism_residuals.matrix_from_session_effects`
    computes spill-over for)."""
    grouped = row_patterns(observed.reshape(observed.shape[0], -1))
    return grouped.patterns[int(np.argmax(grouped.counts))].reshape(observed.shape[1:])


class FavouritismSection:
    """:func:`favouritism` as an incremental section (ADR 0078): each session's table
    (:mod:`.favouritism_summary`), the slopes and the matrix fitted at finish."""

    name = "favouritism"
    version = 1

    def __init__(self, significance_level: float = 0.05) -> None:
        self.significance_level = significance_level

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> FavouritismSummary:
        return summarize_favouritism(connection)

    def merge(self, saved: FavouritismSummary, new: FavouritismSummary) -> FavouritismSummary:
        return merge_favouritism(saved, new)

    def finish(self, summary: FavouritismSummary) -> Favouritism | None:
        return _finished(summary, self.significance_level)

    def to_payload(
        self, summary: FavouritismSummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return favouritism_payload(summary)

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> FavouritismSummary:
        return favouritism_from_payload(meta, arrays)


def favouritism(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05
) -> Favouritism | None:
    """The favouritism matrix from the ``scored`` table (None when nothing is testable): every
    session of ``connection``, :class:`FavouritismSection` with nothing saved."""
    section = FavouritismSection(significance_level)
    return section.finish(section.summarize(connection))


def _fixed_slots(summary: FavouritismSummary) -> dict[tuple[str, str], int]:
    """``{(reviewer, model): slot}`` for each pair scored in two or more sessions, always
    at that one display slot (as :func:`~..load.tables.fixed_slot_pairs` finds them)."""
    fixed = (summary.slot_sessions >= 2) & (summary.slot_low == summary.slot_high)
    return {
        (summary.reviewers[r], summary.models[m]): int(summary.slot_low[r, m])
        for r, m in zip(*np.nonzero(fixed), strict=True)
    }


def _finished(summary: FavouritismSummary, significance_level: float) -> Favouritism | None:
    """The section's result from the summary of every session."""
    reviewers, models = list(summary.reviewers), list(summary.models)
    if summary.session_id.size == 0 or len(reviewers) < 2 or len(models) < 2:
        return None
    observed = np.isfinite(summary.scores)
    lengths = summary.log_words if summary.length_controlled else None
    residuals = two_way_residuals(summary.scores, lengths)
    per_session = effects_from_residuals(residuals, observed)[1]
    del residuals
    matrix = matrix_from_session_effects(
        per_session, observed, significance_level, length_controlled=lengths is not None
    )
    # a reviewer's own model: the first model it reviewed as its own
    own_model = {
        int(r): int(np.argmax(row)) for r, row in enumerate(summary.self_pairs) if row.any()
    }
    fixed = _fixed_slots(summary)
    confounded = np.array(
        [[(reviewer, model) in fixed for model in models] for reviewer in reviewers], dtype=bool
    )
    return _assembled(matrix, summary, own_model, fixed, confounded, significance_level)


def _assembled(
    matrix: FavouritismMatrix,
    summary: FavouritismSummary,
    own_model: dict[int, int],
    fixed: dict[tuple[str, str], int],
    confounded: np.ndarray,
    significance_level: float,
) -> Favouritism | None:
    """The section from the fitted matrix: cells, spill-over, slot confounding and blocs."""
    reviewers, models = list(summary.reviewers), list(summary.models)
    cells = []
    for r, reviewer in enumerate(reviewers):
        for m, model in enumerate(models):
            estimate = matrix.effects[r][m]
            if not np.isfinite(estimate.estimate):
                continue
            cells.append(
                FavouritismCell(
                    reviewer=reviewer,
                    model=model,
                    is_self=own_model.get(r) == m,
                    effect=Interval.from_estimate(estimate),
                    n_sessions=estimate.n_clusters,
                    holm_p=float(matrix.holm_p[r, m]),
                    flagged=bool(matrix.flagged[r, m]) and not confounded[r, m],
                    spillover=bool(matrix.spillover is not None and matrix.spillover[r, m])
                    and not confounded[r, m],
                    confounded_with_slot=bool(confounded[r, m]),
                    fixed_slot=fixed.get((reviewer, model)),
                )
            )
    if not cells:
        return None
    sources = (
        matrix.flagged
        & ~(matrix.spillover if matrix.spillover is not None else np.zeros_like(matrix.flagged))
        & ~confounded
    )
    positive = sources & np.array(
        [[cell.estimate > 0 for cell in row] for row in matrix.effects], dtype=bool
    )
    blocs = mutual_blocs(positive, [own_model.get(r) for r in range(len(reviewers))])
    return Favouritism(
        reviewers=reviewers,
        models=models,
        cells=cells,
        mutual_blocs=[[reviewers[i] for i in bloc] for bloc in blocs],
        significance_level=significance_level,
        length_controlled=matrix.length_controlled,
        design_pattern=_modal_pattern(np.isfinite(summary.scores)).tolist(),
    )
