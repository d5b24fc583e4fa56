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
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import numpy as np

from llm_council.bias_audit.report.estimates import Interval
from llm_council.bias_audit.report.load.tables import (
    dense_codes,
    fixed_slot_pairs,
    nullable_floats,
)
from llm_council.stats.bias_effects.favouritism import favouritism_matrix, mutual_blocs
from llm_council.stats.design.row_patterns import row_patterns

#: past this many floats in the length-control design (reviewers x sessions x reviewers x
#: models, about 8 bytes each) the matrix is fitted without it and its captions drop
#: "length-controlled"; the default five-member council reaches it at 400,000 sessions
LENGTH_CONTROL_MAX_FLOATS = 50_000_000

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


def _modal_pattern(table: np.ndarray) -> np.ndarray:
    """The most common reviewers x models pattern of observed cells over sessions (the one
    :func:`~llm_council.stats.bias_effects.favouritism.favouritism_matrix` computes spill-over
    for)."""
    observed = np.isfinite(table)
    grouped = row_patterns(observed.reshape(observed.shape[0], -1))
    return grouped.patterns[int(np.argmax(grouped.counts))].reshape(observed.shape[1:])


def favouritism(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05
) -> Favouritism | None:
    """The favouritism matrix from the ``scored`` table (None when nothing is testable)."""
    rows = connection.execute(
        "SELECT session, reviewer_index, model_index, score, "
        "ln(greatest(words, 1)) AS log_words FROM scored"
    ).fetchnumpy()
    reviewers = [
        name
        for (name,) in connection.execute("SELECT reviewer FROM reviewers ORDER BY 1").fetchall()
    ]
    models = [
        name for (name,) in connection.execute("SELECT model FROM models ORDER BY 1").fetchall()
    ]
    if len(rows["session"]) == 0 or len(reviewers) < 2 or len(models) < 2:
        return None
    _, session = dense_codes(np.asarray(rows["session"], dtype=np.int64))
    reviewer_index = np.asarray(rows["reviewer_index"], dtype=np.int64)
    model_index = np.asarray(rows["model_index"], dtype=np.int64)
    table = np.full((int(session.max()) + 1, len(reviewers), len(models)), np.nan)
    # flat (session, reviewer, model) index, shared by both tables
    cell = (session * len(reviewers) + reviewer_index) * len(models) + model_index
    table.ravel()[cell] = nullable_floats(rows["score"])
    log_words: np.ndarray | None = None
    if table.size * len(reviewers) <= LENGTH_CONTROL_MAX_FLOATS:
        log_words = np.zeros_like(table)
        log_words.ravel()[cell] = np.asarray(rows["log_words"], dtype=float)
    # the per-record columns are in the dense tables now: not held through the fit
    del rows, cell, session, reviewer_index, model_index
    matrix = favouritism_matrix(table, significance_level, log_words=log_words)
    own_model = dict(
        connection.execute(
            "SELECT DISTINCT reviewer_index, model_index FROM scored WHERE is_self"
        ).fetchall()
    )
    fixed = fixed_slot_pairs(connection)
    confounded = np.array(
        [[(reviewer, model) in fixed for model in models] for reviewer in reviewers], dtype=bool
    )
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
        design_pattern=_modal_pattern(table).tolist(),
    )
