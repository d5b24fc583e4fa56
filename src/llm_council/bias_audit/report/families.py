"""The further bias families: anchoring, favouritism, amplification and drift, built together.

Kept in one object so the report model and the renderers each gain one field / one call.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from llm_council.bias_audit.report.amplification import Amplification, amplification
from llm_council.bias_audit.report.anchoring import ReviewerAnchoring, anchoring_by_reviewer
from llm_council.bias_audit.report.drift import Drift, drift_by_reviewer
from llm_council.bias_audit.report.favouritism import Favouritism, favouritism


@dataclass(frozen=True)
class BiasFamilies:
    """Anchoring per reviewer, the favouritism matrix, amplification and weekly drift."""

    anchoring: list[ReviewerAnchoring] = field(default_factory=list)
    favouritism: Favouritism | None = None
    drift: Drift | None = None
    amplification: Amplification | None = None


def bias_families(
    connection: duckdb.DuckDBPyConnection, significance_level: float = 0.05, seed: int = 0
) -> BiasFamilies:
    """Compute every family from the ``records`` and ``scored`` tables."""
    return BiasFamilies(
        anchoring=anchoring_by_reviewer(connection, significance_level),
        favouritism=favouritism(connection, significance_level),
        drift=drift_by_reviewer(connection, significance_level, seed=seed),
        amplification=amplification(connection, significance_level, seed=seed),
    )
