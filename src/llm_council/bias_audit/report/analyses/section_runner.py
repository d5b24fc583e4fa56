"""Run the report's sections in two threads, or one after another on a large store.

Each section reads the DuckDB tables and computes on numpy arrays; both release the GIL
for most of their work, so two worker threads keep the machine's cores busy while the
main thread only schedules. Each running section holds its own per-record arrays, so
in parallel their peaks add up: past :data:`PARALLEL_MAX_RECORDS` records the sections
run one at a time on the calling thread, and the peak memory is the largest single
section's. Either way every section computes the same numbers (none shares state with
another; each seeds its own random generator).

While the two workers run, BLAS (numpy's matrix products) is held to one thread: the
workers already keep both cores busy, and OpenBLAS splitting even a 65,000 x 17 product
over two threads spent 2-3x the CPU for it (ADR 0036). Run sequentially, BLAS keeps its
threads, unless ``one_blas_thread`` (a reproducible report: one summation order). The
process's previous BLAS thread count is restored when the runner closes.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar

import duckdb

from llm_council.bias_audit.report.load.analysis_database import analysis_cursor

#: above this many records the sections run sequentially (bounded peak memory)
PARALLEL_MAX_RECORDS = 2_000_000
_WORKERS = 2

Result = TypeVar("Result")


def _return_free_heap() -> None:
    """Hand the heap a finished section freed back to the system (glibc's ``malloc_trim``).

    A section's medium-sized temporaries (below glibc's mmap threshold) come from the heap,
    and glibc keeps freed heap pages: without this, each section starts from the previous
    one's high-water mark instead of from the tables alone. Elsewhere it does nothing.
    """
    try:
        libc = ctypes.CDLL(None)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return
    trim(0)


class _RunOnResult(Future[Result]):
    """A section run on the calling thread when its result is first asked for.

    One at a time, in the order the report waits for them, so its progress steps name the
    section that is running; the freed heap goes back to the system after each.
    """

    def __init__(self, run: Callable[[], Result]) -> None:
        super().__init__()
        self._run: Callable[[], Result] | None = run

    def result(self, timeout: float | None = None) -> Result:
        if self._run is not None:
            run, self._run = self._run, None
            try:
                self.set_result(run())
            except BaseException as error:  # re-raised below, as from a worker
                self.set_exception(error)
            finally:
                _return_free_heap()
        return super().result(timeout)


class SectionRunner:
    """``submit(section, *args)`` runs ``section(connection, *args)`` in a worker, or on the
    calling thread when its result is asked for (sequential mode)."""

    def __init__(
        self,
        connection: duckdb.DuckDBPyConnection,
        *,
        parallel: bool,
        one_blas_thread: bool = False,
    ) -> None:
        self._connection = connection
        self._pool = ThreadPoolExecutor(max_workers=_WORKERS) if parallel else None
        self._one_blas_thread = parallel or one_blas_thread
        self._blas_limit: Any = None

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The caller's connection (for quick queries on the calling thread)."""
        return self._connection

    def submit(
        self,
        section: Callable[..., Result],
        *args: Any,
        **kwargs: Any,
    ) -> Future[Result]:
        if self._pool is not None:
            # each worker task queries through its own cursor of the shared database
            return self._pool.submit(section, analysis_cursor(self._connection), *args, **kwargs)
        connection = self._connection
        return _RunOnResult(lambda: section(connection, *args, **kwargs))

    def __enter__(self) -> SectionRunner:
        if self._one_blas_thread:
            from threadpoolctl import threadpool_limits

            self._blas_limit = threadpool_limits(limits=1, user_api="blas")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=error is not None)
        if self._blas_limit is not None:
            self._blas_limit.restore_original_limits()
            self._blas_limit = None
