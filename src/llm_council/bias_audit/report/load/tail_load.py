"""The tail load: read only what is new in a store since its summary file was saved (ADR 0081).

The summary file's :class:`~.resume_point.ResumePoint` says where the folded prefix of
the store ends. :func:`load_tail` trusts that prefix without parsing it: for a JSONL
store it hashes every byte before the resume offset (SHA-256, on a thread of its own
while the tail is parsed: ADR 0094) and compares the digest saved under the file's seal;
for a Parquet directory it hashes every saved file. It then reads only the tail (the
bytes from the offset; the Parquet files not saved) into ``raw_lines``, refuses a tail
whose usable lines name a session the prefix already holds (the session rules would then
see a session cut in two: a cold run computes it), and builds ``records`` with the same
:func:`~.raw_records.build_records` as a full load. The counts and warnings of the
returned :class:`~.loading.LoadedStore` are the prefix's plus the tail's, as a full load
gives them; ``records`` holds only the tail's sessions.

Any check that fails returns ``None`` with the reason logged: the caller loads every
record (a cold run, equal to the full recompute by construction).
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import structlog

from llm_council.bias_audit.records.jsonl_snapshot import read_jsonl_range
from llm_council.bias_audit.report.load.analysis_database import compress_large_tables
from llm_council.bias_audit.report.load.loading import (
    DEFAULT_MEMORY_LIMIT,
    LoadedStore,
    load_warnings,
    new_report_connection,
)
from llm_council.bias_audit.report.load.prefix_hasher import PrefixHasher
from llm_council.bias_audit.report.load.raw_records import (
    KNOWN_VERSION,
    REPORT_COLUMNS,
    VALID_LINE,
    build_records,
)
from llm_council.bias_audit.report.load.resume_point import (
    LOAD_RULES,
    ZERO_COUNTS,
    PartFile,
    ReadExtent,
    ResumePoint,
    TailRefused,
    add_counts,
)
from llm_council.bias_audit.report.load.session_summaries import (
    SessionSummaries,
    read_summaries,
)
from llm_council.bias_audit.report.load.source_identity import (
    parquet_part_files,
    parquet_stats,
)
from llm_council.bias_audit.report.load.store_coverage import extends
from llm_council.bias_audit.report.load.tail_parquet import read_parquet_files
from llm_council.errors import RecordError

log = structlog.get_logger("llm_council.bias_audit")

#: the report options a tail load's file must have been made with (the sections'
#: versions are checked by the plan, once the section list is known)
REPORT_OPTIONS = ("significance_level", "seed", "n_resamples", "duckdb")


def tail_options(significance_level: float, seed: int, n_resamples: int) -> dict[str, object]:
    """The report options of :data:`REPORT_OPTIONS` as the summary file's settings hold them."""
    return {
        "significance_level": significance_level,
        "seed": seed,
        "n_resamples": n_resamples,
        "duckdb": duckdb.__version__,
    }


def load_tail(
    store: str | Path,
    options: dict[str, object],
    *,
    threads: int | None = None,
    memory_limit: str = DEFAULT_MEMORY_LIMIT,
    reproducible: bool = False,
    defer_prefix_check: bool = False,
) -> LoadedStore | None:
    """The store's tail as a :class:`LoadedStore` whose counts are the whole store's;
    ``None`` (the reason logged) when the saved prefix cannot be trusted or used.

    ``options``: the report's settings of :data:`REPORT_OPTIONS`, which the file must hold.
    ``defer_prefix_check``: a JSONL prefix's SHA-256 may still be running when this
    returns; the caller must not let anything leave the report before the plan places the
    next resume point or ``extent.prefix_hasher.confirm()`` returns (both raise
    :class:`TailRefused` for a changed prefix: ADR 0094). Otherwise it is checked here.
    """
    path = Path(os.path.realpath(store))
    saved = read_summaries(store)
    try:
        resume = _usable_resume(saved, store, path, options)
        assert saved is not None and resume is not None
        connection = new_report_connection(threads, memory_limit)
    except TailRefused as refusal:
        log.info("report_tail_load_refused", store=str(store), reason=str(refusal))
        return None
    try:
        if resume.kind == "jsonl":
            extent = _read_jsonl_tail(connection, path, resume, str(store))
        else:
            extent = _read_parquet_tail(connection, path, resume)
        extent = replace(extent, base=resume, base_summaries=saved)
        _refuse_sessions_of_the_prefix(connection, saved, resume)
        counts = build_records(connection, since=None, ordered=reproducible, keep_sessions=True)
        compress_large_tables(connection)
        if reproducible:
            connection.execute("SET threads TO 1")
        if extent.prefix_hasher is not None and not defer_prefix_check:
            extent.prefix_hasher.confirm()
    except TailRefused as refusal:
        connection.close()
        log.info("report_tail_load_refused", store=str(store), reason=str(refusal))
        return None
    except BaseException:
        connection.close()
        raise
    if not defer_prefix_check:  # else the caller logs it once the prefix is confirmed
        log.info("report_tail_loaded", store=str(store), tail_records=counts.n_records)
    return _merged_store(connection, str(store), resume, replace(extent, counts=counts))


def _usable_resume(
    saved: SessionSummaries | None, store: str | Path, path: Path, options: dict[str, object]
) -> ResumePoint:
    """The file's resume point when it may be used with this store; :class:`TailRefused`."""
    if saved is None:
        raise TailRefused("no verified summary file")
    resume = saved.resume
    if resume is None:
        raise TailRefused("the summary file has no resume point")
    if resume.load_rules != LOAD_RULES:
        raise TailRefused(f"made with load rules {resume.load_rules}, these are {LOAD_RULES}")
    if any(saved.settings.get(name) != options.get(name) for name in REPORT_OPTIONS):
        raise TailRefused("made with other report options")
    if (resume.kind == "parquet") != path.is_dir() or not (path.is_dir() or path.is_file()):
        raise TailRefused("the store is not of the kind the file describes")
    if resume.kind == "jsonl" and not extends(saved.coverage, store):
        raise TailRefused("the store no longer extends what was summarized")
    return resume


def _read_jsonl_tail(
    connection: duckdb.DuckDBPyConnection, path: Path, resume: ResumePoint, label: str
) -> ReadExtent:
    """Check the prefix's SHA-256 and parse the bytes after it into ``raw_lines``."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError as error:
        raise TailRefused(f"cannot open the store: {error.strerror}") from None
    try:
        status = os.fstat(descriptor)
        if status.st_size < resume.offset:
            raise TailRefused("the store is shorter than the resume offset")
        # the prefix is hashed on another thread while the tail is parsed (ADR 0094)
        hasher = PrefixHasher(
            os.dup(descriptor),
            start=resume.offset,
            end=status.st_size,
            expected=resume.prefix_sha256,
        )
        try:
            snapshot = read_jsonl_range(
                connection, descriptor, resume.offset, REPORT_COLUMNS, label
            )
        except RecordError as error:
            raise TailRefused(str(error)) from None
    finally:
        os.close(descriptor)
    return ReadExtent(
        "jsonl",
        ZERO_COUNTS,
        torn=snapshot.ends_mid_line,
        start=resume.offset,
        end=snapshot.snapshot_bytes,
        device=int(status.st_dev),
        inode=int(status.st_ino),
        prefix_hasher=hasher,
        appending=snapshot.read_while_appending,
    )


def _read_parquet_tail(
    connection: duckdb.DuckDBPyConnection, root: Path, resume: ResumePoint
) -> ReadExtent:
    """Check every saved file's identity and digest, and read the other files."""
    try:
        stats = parquet_stats(root)
        parts = parquet_part_files(root, stats)
    except (OSError, RecordError) as error:
        raise TailRefused(f"cannot read the partition files: {error}") from None
    current = {part.path: part for part in parts}
    for part in resume.files:
        if current.get(part.path) != part:
            raise TailRefused(f"partition file {part.path!r} was removed or rewritten")
    known = {part.path for part in resume.files}
    new = [part for part in parts if part.path not in known]
    try:
        read_parquet_files(connection, root, [part.path for part in new])
    except RecordError as error:
        raise TailRefused(str(error)) from None
    if parquet_stats(root) != stats:
        raise TailRefused("a partition file changed while it was read")
    return ReadExtent("parquet", ZERO_COUNTS, files=parts)


def prefix_session_ids(saved: SessionSummaries, resume: ResumePoint) -> np.ndarray:
    """Every session id with a usable line in the prefix, sorted."""
    return np.union1d(saved.session_ids.astype(str), resume.other_session_ids.astype(str))


def _refuse_sessions_of_the_prefix(
    connection: duckdb.DuckDBPyConnection, saved: SessionSummaries, resume: ResumePoint
) -> None:
    """:class:`TailRefused` when a usable tail line names a session the prefix holds."""
    rows = connection.execute(
        f"SELECT DISTINCT session_id FROM raw_lines WHERE {KNOWN_VERSION} AND {VALID_LINE}"
    ).fetchnumpy()
    tail_ids = np.asarray(rows["session_id"], dtype=str)
    shared = np.intersect1d(tail_ids, prefix_session_ids(saved, resume))
    if shared.size:
        raise TailRefused(
            f"{shared.size} session(s) of the tail already have lines in the prefix "
            "(a session appended again, or completed after it was counted incomplete)"
        )


def _merged_store(
    connection: duckdb.DuckDBPyConnection, label: str, resume: ResumePoint, extent: ReadExtent
) -> LoadedStore:
    """The tail's :class:`LoadedStore` with the prefix's counts and warnings added."""
    counts = add_counts(resume.counts, extent.counts)
    n_unreadable, warnings = load_warnings(label, counts, extent.torn)
    return LoadedStore(
        connection=connection,
        path=label,
        n_lines=counts.n_rows,
        n_records=counts.n_records,
        n_sessions=counts.n_sessions,
        n_unreadable=n_unreadable,
        n_unknown_version=counts.n_unknown_version,
        since=None,
        warnings=tuple(warnings),
        n_incomplete_sessions=counts.n_incomplete_sessions,
        n_incomplete_records=counts.n_incomplete_records,
        read_while_appending=extent.appending,
        extent=extent,
    )


__all__ = ["PartFile", "TailRefused", "load_tail", "prefix_session_ids", "tail_options"]
