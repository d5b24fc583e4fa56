"""The contract of a report section that can be computed from merged per-session summaries.

An incremental report (issue 35 item 2, ADR 0064) keeps, beside a store, one summary per
section covering the sessions already read. When the store grows, each section summarizes
only the new sessions, merges that with the saved summary and finishes the section's
result from the merged summary. A cold run is the same three steps with nothing saved, so
a re-run equals a full recompute by construction, provided ``merge`` is exact (sums,
concatenations, per-session rows; never an estimate refitted on a subset).

A summary travels as a JSON-safe ``meta`` mapping plus named numpy arrays (``payload``),
so the file that holds it can be sealed and verified on its bytes without pickling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, TypeVar

import duckdb
import numpy as np

Summary = TypeVar("Summary")


class SummaryNotMergeable(ValueError):
    """Two summaries that cannot be merged exactly (a setting chosen for the whole store
    differs between them): the section is summarized again over every session."""


Result = TypeVar("Result", covariant=True)


class IncrementalSection(Protocol[Summary, Result]):
    """One report section, split into summarize, merge and finish.

    ``summarize`` reads the analysis tables of ``connection`` (the same tables a full run
    reads, holding only the sessions to summarize) and reduces them to a summary;
    ``merge`` combines the summaries of two disjoint sets of sessions exactly (associative;
    the order of sessions must not change the finished numbers); ``finish`` turns a
    summary of all sessions into the section's result, the same type a full run returns.
    """

    #: the section's name in the summary file (stable across releases; bump ``version``)
    name: str
    #: the summary's format version; a saved summary of another version is rebuilt
    version: int

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> Summary:
        """The summary of every session in ``connection``'s tables."""
        ...

    def merge(self, saved: Summary, new: Summary) -> Summary:
        """The summary of the union of two disjoint sets of sessions; raises
        :class:`SummaryNotMergeable` when no exact merge exists."""
        ...

    def finish(self, summary: Summary) -> Result:
        """The section's result from the summary of all sessions."""
        ...

    def to_payload(self, summary: Summary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        """The summary as JSON-safe metadata and named arrays (no pickling)."""
        ...

    def from_payload(self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> Summary:
        """The summary back from :meth:`to_payload`'s output; raises ``ValueError`` naming
        the field when it is malformed (a summary that cannot be read is rebuilt)."""
        ...


class DependentSection(IncrementalSection[Summary, Result], Protocol):
    """An incremental section whose ``finish`` needs results of other sections (the joint
    model needs the profiles' leniency reference, anchoring the reviewers whose level the
    scale fixes). Its summary must not depend on them: ``summarize`` and ``merge`` run on
    the section workers as for any section, and the report calls ``finish(summary,
    **inputs)`` once the inputs are known (:class:`PendingFinish`).

    A section declares itself dependent with ``needs_inputs = True``.
    """

    needs_inputs: bool

    def finish(self, summary: Summary, **inputs: Any) -> Result:  # type: ignore[override]
        """The section's result from the summary of all sessions and the named inputs."""
        ...


class PendingFinish:
    """A dependent section's merged summary, waiting for its inputs: call it once with them
    (``pending(reference=...)``) to get the section's result.

    The call releases the summary: the report keeps every section's future (and so this
    object) until it ends, and a summary that grows with the store (anchoring's, about
    400 MB at 10M records) would otherwise stay in memory through every later section
    (ADR 0092). A second call raises ``RuntimeError``."""

    def __init__(self, section: DependentSection[Any, Any], summary: Any) -> None:
        self.section = section
        self.summary = summary
        self._finished = False

    def __call__(self, **inputs: Any) -> Any:
        if self._finished:
            raise RuntimeError(f"section {self.section.name!r} was already finished")
        summary, self.summary, self._finished = self.summary, None, True
        return self.section.finish(summary, **inputs)

    def __repr__(self) -> str:
        return f"PendingFinish({self.section.name!r})"


def needs_inputs(section: IncrementalSection[Any, Any]) -> bool:
    """Whether ``section`` is a :class:`DependentSection` (finished by the report later)."""
    return bool(getattr(section, "needs_inputs", False))
