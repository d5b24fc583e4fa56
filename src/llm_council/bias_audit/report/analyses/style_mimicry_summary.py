"""Style mimicry (:mod:`.style_mimicry`) from merged per-session summaries (ADR 0077).

A summary keeps, per session (sorted by id), the upper triangle of the session's
projected ``[y~, Z~]'[y~, Z~]`` over every reviewer's slope and length columns
(:mod:`llm_council.stats.bias_effects.style_mimicry_sums`), and per reviewer the sums
the fit and the result need. ``merge`` widens both summaries to the union of reviewer
names, then concatenates the sessions and adds the sums. The CV3 jackknife needs each
session's block, so the summary grows by one row a session.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
from numpy.typing import ArrayLike

from llm_council.bias_audit.report.analyses.session_rows import session_ids_of, sorted_by_session
from llm_council.bias_audit.report.analyses.style_mimicry import (
    StyleMimicry,
    mimicry_result,
    mimicry_rows,
)
from llm_council.stats.bias_effects.style_mimicry_sums import (
    mimicry_session_products,
    mimicry_slopes_from_products,
    n_product_columns,
)
from llm_council.stats.numerics.moments import merged_moments

#: per reviewer: |similarity| sum, |ln words| sum, sessions, scores, own-similarity n, mean, M2
_PER_REVIEWER = 7


@dataclass(frozen=True)
class StyleMimicrySummary:
    """Per session: its id and product row; per reviewer (``reviewers`` order) the
    columns of :data:`_PER_REVIEWER`; the counts of rows fitted, scores and sessions."""

    reviewers: tuple[str, ...]
    session_id: np.ndarray  # (S,) str
    products: np.ndarray  # (S, u)
    per_reviewer: np.ndarray  # (R, 7)
    counts: np.ndarray  # (3,): rows fitted, scores with a similarity, their sessions


def _empty(reviewers: Sequence[str]) -> StyleMimicrySummary:
    width = n_product_columns(len(reviewers))
    per_reviewer = np.zeros((len(reviewers), _PER_REVIEWER))
    per_reviewer[:, 5] = np.nan
    return StyleMimicrySummary(
        tuple(reviewers),
        np.zeros(0, dtype=str),
        np.zeros((0, width * (width + 1) // 2)),
        per_reviewer,
        np.zeros(3),
    )


def _widened(summary: StyleMimicrySummary, reviewers: Sequence[str]) -> StyleMimicrySummary:
    """``summary`` over ``reviewers`` (a superset, sorted): zero columns for the others."""
    if summary.reviewers == tuple(reviewers):
        return summary
    at = np.array([reviewers.index(name) for name in summary.reviewers], dtype=np.int64)
    wide = _empty(reviewers)
    old, new = len(summary.reviewers), len(reviewers)
    column = np.r_[0, 1 + at, 1 + new + at]  # score, slopes, lengths
    width = n_product_columns(new)
    pair = np.zeros((width, width), dtype=np.int64)
    rows, columns = np.triu_indices(width)
    pair[rows, columns] = pair[columns, rows] = np.arange(rows.size)
    old_rows, old_columns = np.triu_indices(n_product_columns(old))
    products = np.zeros((summary.products.shape[0], rows.size))
    products[:, pair[column[old_rows], column[old_columns]]] = summary.products
    per_reviewer = wide.per_reviewer.copy()
    per_reviewer[at] = summary.per_reviewer
    return StyleMimicrySummary(
        tuple(reviewers), summary.session_id, products, per_reviewer, summary.counts
    )


def _moments_merged(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """Per-reviewer rows added: sums and counts add, the own-similarity moments pool."""
    merged = first + second
    merged[:, 4:7] = merged_moments(first[:, 4:7], second[:, 4:7])
    return merged


class StyleMimicrySection:
    """:func:`.style_mimicry.style_mimicry` as an incremental section (ADRs 0073, 0077)."""

    name = "style_mimicry"
    version = 1

    def __init__(self, significance_level: float = 0.05) -> None:
        self.significance_level = significance_level

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> StyleMimicrySummary:
        names, columns = mimicry_rows(connection)
        reviewers = [str(names[index]) for index in sorted(names)]
        if columns is None:
            return _empty(reviewers)
        n_reviewers = len(reviewers)
        reviewer, session = columns["reviewer"], columns["session"]
        scores = np.bincount(reviewer, minlength=n_reviewers).astype(float)
        counts = np.array([0.0, session.size, np.count_nonzero(np.diff(session)) + 1])
        inputs: dict[str, ArrayLike] = dict(columns)
        del columns  # emptied by the reduction: its columns are held nowhere else
        products = mimicry_session_products(inputs, n_reviewers)
        counts[0] = products.n_rows
        per_reviewer = np.column_stack(
            [
                products.abs_sums[:n_reviewers],
                products.abs_sums[n_reviewers:],
                products.reviewer_sessions,
                scores,
                products.own_moments,
            ]
        )
        ids, rows = sorted_by_session(
            session_ids_of(connection, products.session), products.products
        )
        return StyleMimicrySummary(tuple(reviewers), ids, rows, per_reviewer, counts)

    def merge(self, saved: StyleMimicrySummary, new: StyleMimicrySummary) -> StyleMimicrySummary:
        reviewers = sorted(set(saved.reviewers) | set(new.reviewers))
        first, second = _widened(saved, reviewers), _widened(new, reviewers)
        ids, products = sorted_by_session(
            np.concatenate([first.session_id, second.session_id]),
            np.concatenate([first.products, second.products]),
        )
        return StyleMimicrySummary(
            tuple(reviewers),
            ids,
            products,
            _moments_merged(first.per_reviewer, second.per_reviewer),
            first.counts + second.counts,
        )

    def finish(self, summary: StyleMimicrySummary) -> StyleMimicry | None:
        if summary.counts[1] == 0:
            return None
        per_reviewer = summary.per_reviewer
        fit = mimicry_slopes_from_products(
            summary.products,
            np.r_[per_reviewer[:, 0], per_reviewer[:, 1]],
            per_reviewer[:, 2],
            per_reviewer[:, 4:7],
            int(summary.counts[0]),
        )
        return mimicry_result(
            fit,
            list(summary.reviewers),
            per_reviewer[:, 3],
            int(summary.counts[1]),
            int(summary.counts[2]),
            self.significance_level,
        )

    def to_payload(
        self, summary: StyleMimicrySummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {
            "session_id": summary.session_id,
            "products": summary.products,
            "per_reviewer": summary.per_reviewer,
            "counts": summary.counts,
        }
        return {"reviewers": list(summary.reviewers)}, arrays

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> StyleMimicrySummary:
        reviewers = meta.get("reviewers")
        if (
            not isinstance(reviewers, list)
            or not all(isinstance(name, str) for name in reviewers)
            or reviewers != sorted(set(reviewers))
        ):
            raise ValueError("style mimicry summary: 'reviewers' is not sorted distinct names")
        width = n_product_columns(len(reviewers))
        for field in ("session_id", "products", "per_reviewer", "counts"):
            if field not in arrays:
                raise ValueError(f"style mimicry summary: no array {field!r}")
        session_id = arrays["session_id"]
        n_sessions = session_id.shape[0] if session_id.ndim == 1 else -1
        if n_sessions < 0 or session_id.dtype.kind != "U":
            raise ValueError("style mimicry summary: 'session_id' is not a list of ids")
        shapes = {
            "products": (n_sessions, width * (width + 1) // 2),
            "per_reviewer": (len(reviewers), _PER_REVIEWER),
            "counts": (3,),
        }
        for field, shape in shapes.items():
            array = arrays[field]
            if array.shape != shape or array.dtype != np.float64:
                raise ValueError(f"style mimicry summary: {field!r} is not float64 {shape}")
            finite = array if field != "per_reviewer" else array[:, [0, 1, 2, 3, 4, 6]]
            if not np.isfinite(finite).all():
                raise ValueError(f"style mimicry summary: {field!r} holds a non-finite number")
        return StyleMimicrySummary(
            tuple(reviewers),
            session_id,
            arrays["products"],
            arrays["per_reviewer"],
            arrays["counts"],
        )
