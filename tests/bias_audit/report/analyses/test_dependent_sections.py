"""A section whose ``finish`` needs other sections' results (:class:`DependentSection`):
its summary is made on the worker as any section's, and the report finishes it later with
the inputs (:class:`PendingFinish`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import numpy as np
import pytest

from llm_council.bias_audit.report.analyses.incremental_runner import (
    IncrementalPlan,
    _run_section,
)
from llm_council.bias_audit.report.analyses.incremental_section import (
    PendingFinish,
    needs_inputs,
)


class _ScaledCount:
    """Toy dependent section: the number of records times an input known only later."""

    name = "scaled_count"
    version = 1
    needs_inputs = True

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> int:
        return int(connection.execute("SELECT count(*) FROM records").fetchone()[0])

    def merge(self, saved: int, new: int) -> int:
        return saved + new

    def finish(self, summary: int, *, scale: float) -> float:
        return summary * scale

    def to_payload(self, summary: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return {"n": summary}, {}

    def from_payload(self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> int:
        return int(meta["n"])


class _Count(_ScaledCount):
    needs_inputs = False

    def finish(self, summary: int) -> float:  # type: ignore[override]
        return float(summary)


def _plan() -> IncrementalPlan:
    """Every session in the main schema, nothing saved (a report without a summary file)."""
    return IncrementalPlan(
        how="off",
        reason="disabled",
        schema="main",
        held_schema=None,
        saved=None,
        session_ids=np.array([], dtype=str),
        session_records=np.zeros((0, 2), dtype=np.uint64),
        coverage=None,
        settings={},
        n_new=0,
    )


def _connection(n_records: int) -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE records AS SELECT range AS session FROM range(?)", [n_records])
    return connection


def test_a_dependent_section_is_finished_later_with_its_inputs() -> None:
    result, folded = _run_section(_connection(7), _ScaledCount(), _plan())
    assert isinstance(result, PendingFinish)
    assert folded == 7  # the summary to save does not depend on the inputs
    assert repr(result) == "PendingFinish('scaled_count')"
    assert result(scale=0.5) == 3.5
    assert result.summary is None  # released: the report keeps the object to its end
    with pytest.raises(RuntimeError, match="already finished"):
        result(scale=2.0)


def test_an_ordinary_section_is_finished_on_the_worker() -> None:
    assert needs_inputs(_ScaledCount()) and not needs_inputs(_Count())
    result, folded = _run_section(_connection(4), _Count(), _plan())
    assert result == 4.0 and folded == 4
