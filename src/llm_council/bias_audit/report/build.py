"""Build the whole cross-session report from a store: load, derive tables, analyse."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import structlog

from llm_council.bias_audit.report.analyses.amplification import AmplificationSection
from llm_council.bias_audit.report.analyses.anchoring import AnchoringSection
from llm_council.bias_audit.report.analyses.causal_checks import CausalChecks
from llm_council.bias_audit.report.analyses.causal_checks_summary import CausalChecksSection
from llm_council.bias_audit.report.analyses.decisions import DECISIONS, DecisionsAffected
from llm_council.bias_audit.report.analyses.drift import DriftSection
from llm_council.bias_audit.report.analyses.families import (
    BiasFamilies,
    dense_tables_fit,
    submit_bias_families,
)
from llm_council.bias_audit.report.analyses.favouritism import FavouritismSection
from llm_council.bias_audit.report.analyses.fingerprints import FingerprintHistory
from llm_council.bias_audit.report.analyses.fingerprints_summary import FINGERPRINTS
from llm_council.bias_audit.report.analyses.incremental_runner import (
    plan_incremental,
    section_settings,
    submit_incremental,
    tail_load_allowed,
)
from llm_council.bias_audit.report.analyses.incremental_section import IncrementalSection
from llm_council.bias_audit.report.analyses.joint import JointFit
from llm_council.bias_audit.report.analyses.joint_summary import JOINT_MODEL
from llm_council.bias_audit.report.analyses.leaderboard import (
    LeaderboardSection,
    with_adjusted_means,
)
from llm_council.bias_audit.report.analyses.length import LENGTH
from llm_council.bias_audit.report.analyses.monitor import MonitorSection, report_monitor
from llm_council.bias_audit.report.analyses.monitor_summary import (
    monitor_entry,
    saved_monitor_state,
)
from llm_council.bias_audit.report.analyses.parse_outcomes import PARSE_OUTCOMES
from llm_council.bias_audit.report.analyses.position_summary import PositionSection
from llm_council.bias_audit.report.analyses.reasoning import ReasoningSection
from llm_council.bias_audit.report.analyses.reliability import CouncilReliability
from llm_council.bias_audit.report.analyses.reliability_summary import ReliabilitySection
from llm_council.bias_audit.report.analyses.report_counts import (
    REPORT_COUNTS,
    StoreCounts,
    saved_counts,
)
from llm_council.bias_audit.report.analyses.reviewers import (
    REVIEWER_PROFILES,
    ProfiledReviewers,
)
from llm_council.bias_audit.report.analyses.section_runner import (
    PARALLEL_MAX_RECORDS,
    SectionRunner,
)
from llm_council.bias_audit.report.analyses.self_preference import SELF_PREFERENCE
from llm_council.bias_audit.report.analyses.session_chunks import with_blocks
from llm_council.bias_audit.report.analyses.style_mimicry_summary import StyleMimicrySection
from llm_council.bias_audit.report.finding import ERROR_RATES
from llm_council.bias_audit.report.load.loading import (
    DEFAULT_MEMORY_LIMIT,
    LoadedStore,
    load_store,
    parse_since,
)
from llm_council.bias_audit.report.load.tables import (
    create_analysis_tables,
)
from llm_council.bias_audit.report.load.tail_load import TailRefused, load_tail, tail_options
from llm_council.bias_audit.report.model import (
    BiasReport,
    Leaderboard,
    LengthBias,
    PositionBias,
    SelfPreference,
)
from llm_council.bias_audit.report.report_verdicts import decide_findings
from llm_council.errors import ConfigError, RecordError
from llm_council.infra.log_setup import ensure_default_logging

log = structlog.get_logger("llm_council.bias_audit")

#: how many times :func:`build_report` calls ``on_step`` (the CLI's progress bar total)
REPORT_STEPS = 7
#: the parts of the report still computed from every record: while any is, every run loads
#: the whole store; when none is, a re-run reads only the store's tail (ADR 0081). Each
#: section made incremental left this list (it must take its numbers from merged summaries
#: only); position left it last (ADR 0088). A tail load falls back to a full load where a
#: saved section cannot merge or the section list changed (ADR 0081's amendment).
COMPUTED_FROM_EVERY_RECORD: tuple[str, ...] = ()


@dataclass(frozen=True)
class TailChoice:
    """How one attempt at the report reads the store (ADR 0081): ``read`` the tail when the
    summary file allows it; ``gate_open``: a full load keeps what it read (the next resume
    point); ``cold_reason``: the saved file is not used (a tail load was abandoned)."""

    read: bool
    gate_open: bool
    cold_reason: str | None = None


def _each_step_once(on_step: Callable[[str], None] | None) -> Callable[[str], None]:
    """``on_step`` called once per step name: an abandoned tail load runs the steps again."""
    seen: set[str] = set()

    def step(name: str) -> None:
        if on_step is not None and name not in seen:
            seen.add(name)
            on_step(name)

    return step


@dataclass(frozen=True)
class _Sections:
    """Every analysis of the report, as the section runner returned them."""

    profiles: ProfiledReviewers
    length: LengthBias | None
    position: PositionBias | None
    joint: JointFit | None
    self_preference: list[SelfPreference]
    families: BiasFamilies
    board: Leaderboard | None
    causal: CausalChecks | None
    counts: StoreCounts  # the header's reviewers and models, the dense tables' size
    decisions: DecisionsAffected | None
    reliability: CouncilReliability
    fingerprints: FingerprintHistory | None


def _read_store(
    store_path: str | Path,
    *,
    since: str | None,
    until: str | None,
    threads: int | None,
    engine: str,
    memory_limit: str,
    reproducible: bool,
    tail_options: dict[str, object] | None = None,
    keep_extent: bool = False,
) -> LoadedStore:
    """The records in the window; a store without any usable one is a :class:`RecordError`.

    ``tail_options`` (the report's options; None: no tail load): read only the store's
    tail when its summary file allows it, else every record (ADR 0081). ``keep_extent``:
    a full load keeps what it read (the gate is open: the next resume point is placed)."""
    cutoff = parse_since(since) if since else None
    end = parse_since(until, option="--until") if until else None
    tail = None
    if tail_options is not None:
        tail = load_tail(
            store_path,
            tail_options,
            threads=threads,
            memory_limit=memory_limit,
            reproducible=reproducible,
            defer_prefix_check=True,  # confirmed by the plan, before anything leaves (ADR 0094)
        )
    store = tail or load_store(
        store_path,
        since=cutoff,
        since_label=since,
        threads=threads,
        engine=engine,
        until=end,
        memory_limit=memory_limit,
        reproducible=reproducible,
        keep_extent=keep_extent or tail_options is not None,
    )
    if store.n_records == 0:
        detail = (f" since {since}" if since else "") + (f" until {until}" if until else "")
        raise RecordError(f"no usable bias-audit records{detail} in {store.path!r}")
    return store


def _incremental_sections(
    connection: duckdb.DuckDBPyConnection,
    significance_level: float,
    seed: int,
    n_resamples: int,
    base_counts: StoreCounts | None = None,
) -> list[IncrementalSection[Any, Any]]:
    """The sections computed from per-session summaries (ADRs 0073, 0074), in submission
    order, costliest first (amplification only where its dense tables are allowed:
    :func:`dense_tables_fit`, counting the sessions a tail load skipped, ``base_counts``)."""
    sections: list[IncrementalSection[Any, Any]] = [
        REVIEWER_PROFILES,  # first: the joint model and anchoring wait for it (ADR 0079)
        DECISIONS,  # ADR 0046
        LeaderboardSection(n_resamples=n_resamples, seed=seed),
        PositionSection(significance_level),  # ADR 0088
        JOINT_MODEL,  # ADR 0077: finished below with the profiles' reference
        SELF_PREFERENCE,  # ADR 0077: finished below with the joint model's effects
        StyleMimicrySection(significance_level),  # ADR 0077
    ]
    if dense_tables_fit(connection, base_counts):
        sections.append(AmplificationSection(significance_level, seed))
        sections.append(FavouritismSection(significance_level))  # ADR 0078
    sections.append(ReasoningSection(significance_level))  # ADR 0078
    sections.append(AnchoringSection(significance_level))  # ADR 0078: finished with level_fixed
    sections.append(CausalChecksSection(seed))  # ADRs 0024, 0085
    sections.append(ReliabilitySection(n_resamples=n_resamples, seed=seed))  # ADR 0086
    sections.append(FINGERPRINTS)  # ADR 0086
    return [
        *sections,
        DriftSection(significance_level, seed),
        PARSE_OUTCOMES,
        LENGTH,
        REPORT_COUNTS,
    ]


def incremental_sections_and_settings(
    connection: duckdb.DuckDBPyConnection,
    *,
    significance_level: float = 0.05,
    seed: int = 0,
    n_resamples: int = 200,
    base_counts: StoreCounts | None = None,
) -> tuple[list[IncrementalSection[Any, Any]], dict[str, Any]]:
    """The incremental sections of a report with these options (defaults: the report's),
    and the settings a saved summary file must match to be merged with them
    (``base_counts``: :func:`_incremental_sections`)."""
    sections = _incremental_sections(connection, significance_level, seed, n_resamples, base_counts)
    settings = section_settings(
        sections, significance_level=significance_level, seed=seed, n_resamples=n_resamples
    )
    return sections, settings


def _run_sections(
    runner: SectionRunner,
    connection: duckdb.DuckDBPyConnection,
    step: Callable[[str], None],
    *,
    significance_level: float,
    n_resamples: int,
    seed: int,
    incremental: Mapping[str, Future[Any]],
) -> _Sections:
    """Submit every analysis to ``runner``, costliest first, and collect them in step order.

    With two workers (:mod:`.section_runner`) the queue drains evenly; on a large store
    they run one at a time, each when its result is asked for below, so the progress steps
    name what is running. ``incremental``: the incremental sections, already submitted.
    """
    board_future = incremental["leaderboard"]
    step("profiling reviewers")
    profiled: ProfiledReviewers = incremental["reviewer_profiles"].result()  # ADR 0079
    rank_reviewers, forced_choice = set(profiled.rank_reviewers), profiled.forced_choice
    # the joint model's leniencies are centred on the profiles' robust reference
    reference = profiled.reference
    position_future = incremental["position"]  # ADR 0088
    level_fixed = profiled.level_fixed
    counts: StoreCounts = incremental["report_counts"].result()  # ADR 0085
    collect_families = submit_bias_families(
        runner,
        significance_level,
        seed=seed,
        level_fixed=level_fixed,
        computed=incremental,
        dense_cells=counts.dense_cells,
    )
    length_future = incremental["length"]
    causal_future = incremental["causal_checks"]  # ADRs 0024, 0085: the live checks, if any
    decisions_future = incremental["decisions_affected"]  # ADR 0046
    reliability_pending = incremental["reliability"]  # ADR 0062, 0086: descriptive
    fingerprints_future = incremental["fingerprints"]  # ADR 0062, 0086
    step("length and position")
    length = length_future.result()
    position = position_future.result()
    step("fitting the joint model")
    joint = incremental["joint_model"].result()(reference=reference, forced_choice=forced_choice)
    self_preference = incremental["self_preference"].result()(
        joint_effects=joint.model.effects if joint else [],
        n_joint_sessions=joint.model.n_sessions if joint else 0,
    )
    step("anchoring, favouritism, drift")
    families = collect_families()
    step("leaderboard (bootstrap over sessions)")
    return _Sections(
        profiles=profiled,
        length=length,
        position=position,
        joint=joint,
        self_preference=self_preference,
        families=families,
        board=board_future.result(),
        causal=causal_future.result(),
        counts=counts,
        decisions=decisions_future.result(),
        reliability=reliability_pending.result()(rank_reviewers=rank_reviewers),
        fingerprints=fingerprints_future.result(),
    )


def _assemble_report(
    store_path: str | Path,
    store: LoadedStore,
    sections: _Sections,
    *,
    since: str | None,
    until: str | None,
    significance_level: float,
    monitor: MonitorSection,
) -> BiasReport:
    """The report from the sections and the store's counts (findings not yet decided)."""
    joint, board = sections.joint, sections.board
    leaderboard = (
        with_adjusted_means(board, joint.adjusted_mean_by_model if joint else {})
        if board is not None
        else None
    )
    return BiasReport(
        store=store.path,
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        since=since,
        n_records=store.n_records,
        n_sessions=store.n_sessions,
        n_reviewers=len(sections.counts.reviewers),  # merged summaries (ADR 0085)
        n_models=len(sections.counts.models),
        warnings=list(store.warnings),
        profiles=sections.profiles.profiles,
        length=sections.length,
        position=sections.position,
        self_preference=sections.self_preference,
        joint=joint.model if joint else None,
        leaderboard=leaderboard,
        significance_level=significance_level,
        n_incomplete_sessions=store.n_incomplete_sessions,
        n_incomplete_records=store.n_incomplete_records,
        causal_checks=sections.causal,
        until=until,
        families=sections.families,
        decisions=sections.decisions,
        material_leniency=sections.profiles.material_leniency,
        reliability=sections.reliability,
        fingerprints=sections.fingerprints,
        monitor=monitor,
    )


def _report_once(
    store_path: str | Path,
    *,
    since: str | None,
    until: str | None,
    significance_level: float,
    n_resamples: int,
    seed: int,
    threads: int | None,
    engine: str,
    step: Callable[[str], None],
    memory_limit: str,
    reproducible: bool,
    error_rate: str,
    uses_file: bool,
    tail: TailChoice,
) -> BiasReport:
    """The report of :func:`build_report`, reading the store's tail or every record as
    ``tail`` says; :class:`TailRefused` when a tail load's summaries cannot be merged
    (before any file is written: the caller reads every record instead)."""
    step("reading records")
    store = _read_store(
        store_path,
        since=since,
        until=until,
        threads=threads,
        engine=engine,
        memory_limit=memory_limit,
        reproducible=reproducible,
        tail_options=tail_options(significance_level, seed, n_resamples) if tail.read else None,
        keep_extent=tail.gate_open,
    )
    connection = store.connection
    try:
        step("pairing reviewers on the same answers")
        create_analysis_tables(connection)
        parallel = store.n_records <= PARALLEL_MAX_RECORDS
        base = store.extent.base_summaries if store.extent is not None else None
        summarized, settings = incremental_sections_and_settings(
            connection,
            significance_level=significance_level,
            seed=seed,
            n_resamples=n_resamples,
            base_counts=saved_counts(base),  # a tail load's skipped sessions (ADR 0085)
        )
        plan = plan_incremental(
            connection,
            store_path,
            settings,
            enabled=uses_file,
            extent=store.extent,
            sections=summarized,  # after a tail load every one must merge (ADR 0081)
            cold_reason=tail.cold_reason,
        )
        if store.extent is not None and store.extent.prefix_hasher is not None:
            # a tail load's prefix, hashed while the tail was read: refused here, before any
            # section runs, when it changed (the plan checked it if it placed a resume point)
            store.extent.prefix_hasher.confirm()
        if store.extent is not None and store.extent.base is not None:
            tail_records = store.extent.counts.n_records
            log.info("report_tail_loaded", store=str(store_path), tail_records=tail_records)
        plan = with_blocks(connection, plan)  # a large store: a block of sessions at a time
        with SectionRunner(connection, parallel=parallel, one_blas_thread=reproducible) as runner:
            incremental, save_summaries = submit_incremental(runner, plan, summarized)
            sections = _run_sections(
                runner,
                connection,
                step,
                significance_level=significance_level,
                n_resamples=n_resamples,
                seed=seed,
                incremental=incremental,
            )
        # ADR 0053: the monitor writes nothing of its own; its state rides in the summary
        # file, saved only when the report saves that file (ADR 0087)
        monitor, monitor_state = report_monitor(
            store_path, saved_monitor_state(plan.saved.sections if plan.saved else None)
        )
        save_summaries(store_path, monitor_entry(monitor_state))
        report = _assemble_report(
            store_path,
            store,
            sections,
            since=since,
            until=until,
            significance_level=significance_level,
            monitor=monitor,
        )
    finally:
        connection.close()
    return decide_findings(report, error_rate)


def build_report(
    store_path: str | Path,
    *,
    since: str | None = None,
    until: str | None = None,
    significance_level: float = 0.05,
    n_resamples: int = 200,
    seed: int = 0,
    threads: int | None = None,
    engine: str = "duckdb",
    on_step: Callable[[str], None] | None = None,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
    reproducible: bool = False,
    error_rate: str = "fwer",
    session_summaries: bool = True,
) -> BiasReport:
    """Analyse every readable record in ``store_path`` (optionally only those since ``since``).

    ``store_path`` is a JSONL file, a Parquet directory or a ``postgresql://`` URL; with
    ``engine="spark"`` a Parquet directory is scanned by Apache Spark (:mod:`.loading`).
    ``on_step`` is called with the name of each step as it starts (for a progress bar).
    ``memory_limit`` caps DuckDB's memory; past it, its tables spill to a temporary directory.
    ``reproducible`` gives the same figures to the last bit on every run (sorted records,
    DuckDB and BLAS on one thread: :func:`~.loading.load_store`): 5-10% slower at 1M
    records, about a third at 10M (ADR 0037).
    ``error_rate`` is the one promise every finding is made under (ADR 0054): ``fwer``
    (family-wise over the whole report) or ``fdr`` (Benjamini-Yekutieli false discovery rate).
    ``session_summaries``: the incremental sections read and update the summary file beside
    a JSONL or Parquet store (``<store>.report-sessions``, ADR 0073); ``False`` computes
    them from every record and leaves the file alone. A report with ``--since``/``--until``
    or on Spark or PostgreSQL never uses the file.
    """
    if error_rate not in ERROR_RATES:
        raise ConfigError(f"unknown error rate {error_rate!r} (expected fwer or fdr)")
    ensure_default_logging()  # the summary file's log lines: stderr, never a JSON stdout
    uses_file = session_summaries and engine == "duckdb" and since is None and until is None
    gate_open = tail_load_allowed(COMPUTED_FROM_EVERY_RECORD, enabled=uses_file)
    step = _each_step_once(on_step)
    options: dict[str, Any] = {
        "since": since,
        "until": until,
        "significance_level": significance_level,
        "n_resamples": n_resamples,
        "seed": seed,
        "threads": threads,
        "engine": engine,
        "step": step,
        "memory_limit": memory_limit,
        "reproducible": reproducible,
        "error_rate": error_rate,
        "uses_file": uses_file,
    }
    if not gate_open:
        return _report_once(store_path, tail=TailChoice(read=False, gate_open=False), **options)
    try:
        return _report_once(store_path, tail=TailChoice(read=True, gate_open=True), **options)
    except TailRefused as refusal:
        # a saved section cannot merge the tail (missing, another version, malformed, or
        # its merge refused): a section over the tail alone would be wrong, so every record
        # is read and every section summarized again, the file rewritten (ADR 0081); the
        # plan logs the reason once (``report_sessions_rebuilt``)
        reason = f"the tail load was abandoned: {refusal}"
        full = TailChoice(read=False, gate_open=True, cold_reason=reason)
        return _report_once(store_path, tail=full, **options)
