"""The report's reviewer, model and session counts from merged summaries (ADR 0085).

The report's header counts the reviewers and models of ``records`` (the observational
records: a reviewer that only appears in live check reviews is not one), and the dense
tables of favouritism and amplification are sessions x reviewers x models
(:func:`~.families.dense_table_cells`). Both must come out the same whether the report
loaded every record or only the store's tail (ADR 0081), so they are kept as an
incremental section: the sorted names (sets, merged by union) and the session count
(disjoint sessions, merged by sum). Its size is the names, whatever the store's length.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np

from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader


@dataclass(frozen=True)
class StoreCounts:
    """The distinct reviewers and models of some sessions' records, and their sessions."""

    reviewers: tuple[str, ...]  # sorted
    models: tuple[str, ...]  # sorted
    n_sessions: int

    @property
    def dense_cells(self) -> int:
        """Cells of a dense sessions x reviewers x models table over these sessions."""
        return self.n_sessions * len(self.reviewers) * len(self.models)


def summarize_counts(connection: duckdb.DuckDBPyConnection) -> StoreCounts:
    """The counts of ``records`` in the connection's current schema."""
    reviewers = connection.execute("SELECT DISTINCT reviewer FROM records").fetchall()
    models = connection.execute("SELECT DISTINCT model FROM records").fetchall()
    sessions = connection.execute("SELECT count(DISTINCT session) FROM records").fetchone()
    return StoreCounts(
        tuple(sorted(str(row[0]) for row in reviewers)),
        tuple(sorted(str(row[0]) for row in models)),
        int(sessions[0]) if sessions else 0,
    )


def merge_counts(saved: StoreCounts, new: StoreCounts) -> StoreCounts:
    """The counts of two disjoint sets of sessions."""
    return StoreCounts(
        tuple(sorted({*saved.reviewers, *new.reviewers})),
        tuple(sorted({*saved.models, *new.models})),
        saved.n_sessions + new.n_sessions,
    )


def counts_from_payload(meta: Mapping[str, Any]) -> StoreCounts:
    """The counts back from their payload's ``meta``; ``ValueError`` names a bad field."""
    read = PayloadReader("report_counts", meta, {})
    names = {field: read.names(field) for field in ("reviewers", "models")}
    for field, values in names.items():
        if list(values) != sorted(values):
            raise read.fail(field, "is not sorted")
    return StoreCounts(names["reviewers"], names["models"], read.integer("n_sessions"))


class ReportCountsSection:
    """:class:`StoreCounts` as an incremental section; its result is the merged counts."""

    name = "report_counts"
    version = 1

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> StoreCounts:
        return summarize_counts(connection)

    def merge(self, saved: StoreCounts, new: StoreCounts) -> StoreCounts:
        return merge_counts(saved, new)

    def finish(self, summary: StoreCounts) -> StoreCounts:
        return summary

    def to_payload(self, summary: StoreCounts) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        meta = {
            "reviewers": list(summary.reviewers),
            "models": list(summary.models),
            "n_sessions": summary.n_sessions,
        }
        return meta, {}

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> StoreCounts:
        return counts_from_payload(meta)


REPORT_COUNTS = ReportCountsSection()


def saved_counts(base_summaries: Any) -> StoreCounts | None:
    """The counts a tail load's verified summary file holds (``ReadExtent.base_summaries``);
    None without a file, or when it holds none (a file made before this section: the
    plan then refuses the tail, whose section versions differ)."""
    sections = getattr(base_summaries, "sections", None)
    saved = sections.get(REPORT_COUNTS.name) if sections else None
    if saved is None:
        return None
    try:
        return counts_from_payload(saved.meta)
    except ValueError:
        return None
