"""A report made only of the incremental sections, with the tail load's gate open (ADR 0081).

``build_report`` keeps the gate closed while any section is computed from every record,
so the tests drive the same steps it takes when the gate is open: the tail load (or,
when it refuses, the full load keeping its extent), the analysis tables, the plan with
the next resume point, the incremental sections, and the save. Nothing is patched.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llm_council.bias_audit.report.analyses.incremental_runner import (
    IncrementalPlan,
    plan_incremental,
    submit_incremental,
)
from llm_council.bias_audit.report.analyses.report_counts import saved_counts
from llm_council.bias_audit.report.analyses.section_runner import SectionRunner
from llm_council.bias_audit.report.build import incremental_sections_and_settings
from llm_council.bias_audit.report.load.loading import LoadedStore, load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables
from llm_council.bias_audit.report.load.tail_load import load_tail, tail_options

SEED, RESAMPLES = 3, 20
#: the header a full load gives, field by field
HEADER = (
    "n_lines",
    "n_records",
    "n_sessions",
    "n_unreadable",
    "n_unknown_version",
    "n_incomplete_sessions",
    "n_incomplete_records",
    "warnings",
)


@dataclass(frozen=True)
class TailRun:
    """What one run did: read the tail or everything, its header, results and plan."""

    used_tail: bool
    header: dict[str, Any]
    results: dict[str, str]
    plan: IncrementalPlan
    saved: bool


def header_of(store: LoadedStore) -> dict[str, Any]:
    return {name: getattr(store, name) for name in HEADER}


def load(store: Path, *, tail: bool) -> tuple[LoadedStore, bool]:
    """The tail load when ``tail`` and it is allowed, else the full load keeping its extent."""
    loaded = load_tail(store, tail_options(0.05, SEED, RESAMPLES), reproducible=True)
    if tail and loaded is not None:
        return loaded, True
    if loaded is not None:
        loaded.connection.close()
    return load_store(store, reproducible=True, keep_extent=True), False


def run_all_incremental(store: Path, *, tail: bool = True) -> TailRun:
    """One run of the all-incremental report on ``store``, saving the summary file."""
    loaded, used_tail = load(store, tail=tail)
    connection = loaded.connection
    try:
        create_analysis_tables(connection)
        base = loaded.extent.base_summaries if loaded.extent is not None else None
        sections, settings = incremental_sections_and_settings(
            connection, seed=SEED, n_resamples=RESAMPLES, base_counts=saved_counts(base)
        )
        plan = plan_incremental(
            connection, store, settings, enabled=True, extent=loaded.extent, sections=sections
        )
        with SectionRunner(connection, parallel=False, one_blas_thread=True) as runner:
            futures, save = submit_incremental(runner, plan, sections)
            results = {name: repr(future.result()) for name, future in futures.items()}
        saved = save(store)
    finally:
        connection.close()
    return TailRun(used_tail, header_of(loaded), results, plan, saved)


def cold_results(store: Path) -> tuple[dict[str, Any], dict[str, str]]:
    """The header and section results from every record, without the summary file."""
    loaded = load_store(store, reproducible=True)
    connection = loaded.connection
    try:
        create_analysis_tables(connection)
        sections, settings = incremental_sections_and_settings(
            connection, seed=SEED, n_resamples=RESAMPLES
        )
        plan = plan_incremental(connection, store, settings, enabled=False)
        with SectionRunner(connection, parallel=False, one_blas_thread=True) as runner:
            futures, _save = submit_incremental(runner, plan, sections)
            results = {name: repr(future.result()) for name, future in futures.items()}
    finally:
        connection.close()
    return header_of(loaded), results
