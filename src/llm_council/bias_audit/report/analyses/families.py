"""The further bias families: anchoring, favouritism, amplification and drift, built together.

Kept in one object so the report model and the renderers each gain one field / one call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import duckdb

from llm_council.bias_audit.report.analyses.amplification import Amplification, amplification
from llm_council.bias_audit.report.analyses.anchoring import (
    ReviewerAnchoring,
    anchoring_by_reviewer,
)
from llm_council.bias_audit.report.analyses.drift import Drift, drift_by_reviewer
from llm_council.bias_audit.report.analyses.favouritism import Favouritism, favouritism
from llm_council.bias_audit.report.analyses.parse_outcomes import (
    ReviewerParseOutcomes,
    parse_outcomes_by_reviewer,
)
from llm_council.bias_audit.report.analyses.reasoning import (
    ReviewerReasoning,
    reasoning_by_reviewer,
)
from llm_council.bias_audit.report.analyses.report_counts import (
    StoreCounts,
    merge_counts,
    summarize_counts,
)
from llm_council.bias_audit.report.analyses.section_runner import SectionRunner
from llm_council.bias_audit.report.analyses.style_mimicry import StyleMimicry, style_mimicry

#: the favouritism and amplification tables are dense (sessions x reviewers x models);
#: above this many cells (e.g. an imported log with thousands of human raters) they are
#: skipped with a note rather than exhausting memory
MAX_TABLE_CELLS = 40_000_000


@dataclass(frozen=True)
class BiasFamilies:
    """Anchoring per reviewer, the favouritism matrix, amplification and weekly drift."""

    anchoring: list[ReviewerAnchoring] = field(default_factory=list)
    favouritism: Favouritism | None = None
    drift: Drift | None = None
    amplification: Amplification | None = None
    reasoning: list[ReviewerReasoning] = field(default_factory=list)  # ADR 0027
    parse_outcomes: list[ReviewerParseOutcomes] = field(default_factory=list)  # ADR 0027

    style_mimicry: StyleMimicry | None = None  # None when no record carries a similarity
    notes: list[str] = field(default_factory=list)  # families skipped, and why


def dense_table_cells(
    connection: duckdb.DuckDBPyConnection, base: StoreCounts | None = None
) -> int:
    """Cells of the dense (sessions x reviewers x models) tables of favouritism and
    amplification: of ``records``, or with ``base`` (the counts of the sessions a tail
    load skipped, ADR 0085) of those and ``records`` together, which a full load would hold."""
    if base is not None:
        return merge_counts(base, summarize_counts(connection)).dense_cells
    size = connection.execute(
        """SELECT count(DISTINCT session) * (SELECT count(*) FROM reviewers)
                  * (SELECT count(*) FROM models) FROM records"""
    ).fetchone()
    return int(size[0]) if size and size[0] is not None else 0


def dense_tables_fit(
    connection: duckdb.DuckDBPyConnection, base: StoreCounts | None = None
) -> bool:
    """Are the dense tables within :data:`MAX_TABLE_CELLS`? (``base``: :func:`dense_table_cells`)"""
    return dense_table_cells(connection, base) <= MAX_TABLE_CELLS


def submit_bias_families(
    runner: SectionRunner,
    significance_level: float = 0.05,
    seed: int = 0,
    level_fixed: frozenset[str] = frozenset(),
    computed: Mapping[str, Future[Any]] | None = None,
    dense_cells: int | None = None,
) -> Callable[[], BiasFamilies]:
    """Start every family on ``runner``; the returned function waits for them all.

    The families are submitted costliest first, so two workers finish close together.
    ``level_fixed`` names the reviewers whose level the scale fixes (rank points, a
    forced-choice scale): anchoring is not identified for them. ``computed``: families
    already started as incremental sections, by section name (ADR 0073). ``dense_cells``:
    the dense tables' size the report decided on (:func:`dense_table_cells`; None: of the
    runner's ``records``).
    """
    done = dict(computed or {})
    cells = dense_table_cells(runner.connection) if dense_cells is None else dense_cells
    dense_ok = cells <= MAX_TABLE_CELLS
    notes = (
        []
        if dense_ok
        else [
            f"favouritism and amplification skipped: sessions x reviewers x models = {cells} "
            f"cells exceeds {MAX_TABLE_CELLS} (narrow the window with --since/--until)"
        ]
    )
    style = done.get("style_mimicry") or runner.submit(style_mimicry, significance_level)
    amplified = (
        (done.get("amplification") or runner.submit(amplification, significance_level, seed=seed))
        if dense_ok
        else None
    )
    # incremental: a PendingFinish (the summary merged), finished here with level_fixed
    pending_anchoring = done.get("anchoring")
    anchoring = pending_anchoring or runner.submit(
        anchoring_by_reviewer, significance_level, level_fixed
    )
    parse_outcomes = done.get("parse_outcomes") or runner.submit(parse_outcomes_by_reviewer)
    favoured = (
        (done.get("favouritism") or runner.submit(favouritism, significance_level))
        if dense_ok
        else None
    )
    drift = done.get("drift") or runner.submit(drift_by_reviewer, significance_level, seed=seed)
    reasoning = done.get("reasoning") or runner.submit(reasoning_by_reviewer, significance_level)

    def collect() -> BiasFamilies:
        return BiasFamilies(
            anchoring=(
                anchoring.result()(level_fixed=level_fixed)
                if pending_anchoring
                else anchoring.result()
            ),
            favouritism=favoured.result() if favoured else None,
            drift=drift.result(),
            amplification=amplified.result() if amplified else None,
            reasoning=reasoning.result(),
            parse_outcomes=parse_outcomes.result(),
            style_mimicry=style.result(),
            notes=notes,
        )

    return collect


def bias_families(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05, seed: int = 0
) -> BiasFamilies:
    """Compute every family from the ``records`` and ``scored`` tables, one after another."""
    with SectionRunner(connection, parallel=False) as runner:
        return submit_bias_families(runner, significance_level, seed)()
