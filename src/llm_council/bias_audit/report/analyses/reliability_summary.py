"""The council's reliability (ADR 0062) as an incremental section (ADRs 0073, 0086, 0089).

The summary keeps, per score scale, alpha's Poisson-bootstrap pair-count sums
(:mod:`.reliability_sums`: replicates x (1 + reviewers) x divisors x V (V + 1) / 2
integers, none per session), each reviewer's rank-point flags, and the per-(reviewer,
scale, score) counts of the resolution. ``merge`` adds them exactly; ``finish`` picks the
most common scale and computes alpha, its interval and alpha without each reviewer from
the sums alone: equal to a cold run bit for bit.

The rank-only reviewers are left out when a part is summarized, judged on that part's
records (:func:`~llm_council.bias_audit.report.load.tables.rank_point_flags`); the flags
combine across parts, and a merge where a reviewer's status on the union differs from
its status on a part (it gave rankings so far and scores now) raises
:class:`SummaryNotMergeable`: the section is summarized again over every session.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
import numpy as np
import structlog

from llm_council.bias_audit.report.analyses.incremental_section import SummaryNotMergeable
from llm_council.bias_audit.report.analyses.payload_fields import PayloadReader
from llm_council.bias_audit.report.analyses.reliability import (
    CouncilReliability,
    alphas_of_scale,
    resolution_from_counts,
)
from llm_council.bias_audit.report.analyses.reliability_sums import (
    COUNTS,
    ScaleSums,
    merge_scale_sums,
    scale_sums,
)
from llm_council.bias_audit.report.load.tables import rank_point_flags

log = structlog.get_logger("llm_council.bias_audit")


@dataclass(frozen=True)
class ReliabilitySummary:
    """The sums per scale, each scoring reviewer's rank-point flags (every scored review
    rank points; the most scores in one review), and the resolution's counts: one row per
    (reviewer, scale, score) of every scored record, coded into ``reviewers``/``scales``."""

    n_resamples: int
    seed: int
    blocks: tuple[ScaleSums, ...]  # sorted by scale
    flags: dict[str, tuple[bool, int]]
    reviewers: tuple[str, ...]  # sorted: every reviewer with a record
    scales: np.ndarray  # (k, 2) float, sorted: every scale with a score
    count_reviewer: np.ndarray
    count_scale: np.ndarray
    count_score: np.ndarray  # float
    count_n: np.ndarray


def rank_only(flags: Mapping[str, tuple[bool, int]]) -> set[str]:
    """The rank-only reviewers: every scored review rank points, one of two or more scores
    (:func:`~llm_council.bias_audit.report.load.tables.rank_point_reviewers`)."""
    return {name for name, (every, most) in flags.items() if every and most >= 2}


def _summarize(
    connection: duckdb.DuckDBPyConnection, n_resamples: int, seed: int
) -> ReliabilitySummary:
    flags = {name: (every, most) for name, every, most in rank_point_flags(connection)}
    blocks = scale_sums(connection, sorted(rank_only(flags)), n_resamples=n_resamples, seed=seed)
    reviewers = [
        str(row[0])
        for row in connection.execute("SELECT DISTINCT reviewer FROM records ORDER BY 1").fetchall()
    ]
    counts = connection.execute(
        """SELECT reviewer, scale_low, scale_high, score, count(*) FROM records
           WHERE score IS NOT NULL GROUP BY ALL ORDER BY ALL"""
    ).fetchall()
    scales = sorted({(float(row[1]), float(row[2])) for row in counts})
    return ReliabilitySummary(
        n_resamples=n_resamples,
        seed=seed,
        blocks=blocks,
        flags=flags,
        reviewers=tuple(reviewers),
        scales=np.asarray(scales, dtype=float).reshape(-1, 2),
        count_reviewer=_codes([str(r[0]) for r in counts], reviewers),
        count_scale=_codes([(float(r[1]), float(r[2])) for r in counts], scales),
        count_score=np.asarray([float(r[3]) for r in counts], dtype=float),
        count_n=np.asarray([int(r[4]) for r in counts], dtype=np.int64),
    )


def _codes(values: list[Any], table: list[Any]) -> np.ndarray:
    index = {value: i for i, value in enumerate(table)}
    return np.asarray([index[value] for value in values], dtype=np.int64)


def _scale_list(summary: ReliabilitySummary) -> list[tuple[float, float]]:
    return [(float(low), float(high)) for low, high in summary.scales]


def _merged_flags(
    saved: ReliabilitySummary, new: ReliabilitySummary
) -> dict[str, tuple[bool, int]]:
    """The flags of the union; :class:`SummaryNotMergeable` when a reviewer's rank-only
    status on the union differs from its status on a part (the part's sums would have
    kept or left out the wrong ratings)."""
    flags = dict(saved.flags)
    for name, (every, most) in new.flags.items():
        before = flags.get(name, (True, 0))
        flags[name] = (before[0] and every, max(before[1], most))
    union = rank_only(flags)
    for part in (saved, new):
        changed = sorted((rank_only(part.flags) ^ union) & set(part.flags))
        if changed:
            raise SummaryNotMergeable(
                f"reliability summary: reviewer {changed[0]!r} is rank-only in one set of "
                "sessions and not in their union"
            )
    return flags


def _merge(saved: ReliabilitySummary, new: ReliabilitySummary) -> ReliabilitySummary:
    if (saved.n_resamples, saved.seed) != (new.n_resamples, new.seed):
        raise SummaryNotMergeable("reliability summary: other resamples or seed")
    flags = _merged_flags(saved, new)
    blocks = {block.scale: block for block in saved.blocks}
    for block in new.blocks:
        blocks[block.scale] = (
            merge_scale_sums(blocks[block.scale], block) if block.scale in blocks else block
        )
    reviewers = sorted(set(saved.reviewers) | set(new.reviewers))
    scales = sorted(set(_scale_list(saved)) | set(_scale_list(new)))
    totals: dict[tuple[int, int, float], int] = {}  # (reviewer, scale, score): exact sums
    for part in (saved, new):
        reviewer_at = _codes(list(part.reviewers), reviewers)
        scale_at = _codes(_scale_list(part), scales)
        for r, s, v, n in zip(
            part.count_reviewer, part.count_scale, part.count_score, part.count_n, strict=True
        ):
            key = (int(reviewer_at[r]), int(scale_at[s]), float(v))
            totals[key] = totals.get(key, 0) + int(n)
    keys = sorted(totals)
    return ReliabilitySummary(
        n_resamples=saved.n_resamples,
        seed=saved.seed,
        blocks=tuple(blocks[scale] for scale in sorted(blocks)),
        flags=flags,
        reviewers=tuple(reviewers),
        scales=np.asarray(scales, dtype=float).reshape(-1, 2),
        count_reviewer=np.asarray([k[0] for k in keys], dtype=np.int64),
        count_scale=np.asarray([k[1] for k in keys], dtype=np.int64),
        count_score=np.asarray([k[2] for k in keys], dtype=float),
        count_n=np.asarray([totals[k] for k in keys], dtype=np.int64),
    )


def _finish(summary: ReliabilitySummary, rank: set[str]) -> CouncilReliability:
    left_out = rank_only(summary.flags)
    if left_out != rank & set(summary.flags):  # the same rule on the same records
        log.warning(
            "reliability_rank_reviewers_differ", summary=sorted(left_out), given=sorted(rank)
        )
    counts = sorted(
        (
            summary.reviewers[r],
            float(summary.scales[s][0]),
            float(summary.scales[s][1]),
            float(v),
            int(n),
        )
        for r, s, v, n in zip(
            summary.count_reviewer,
            summary.count_scale,
            summary.count_score,
            summary.count_n,
            strict=True,
        )
    )
    result = CouncilReliability(
        reviewers=[],
        alphas=[],
        n_units=0,
        n_sessions=0,
        n_ratings=0,
        resamples=0,
        scale=None,
        resolution=resolution_from_counts(counts, rank),
        rank_only_reviewers=sorted(set(summary.reviewers) & rank),
        other_scale_records=0,
    )
    if not summary.blocks:
        return result
    # the most ratings, then the higher (low, high): the cold query's order
    chosen = max(summary.blocks, key=lambda block: (int(block.counts[0]), block.scale))
    alphas, resamples = alphas_of_scale(chosen)
    n_ratings, n_units, n_sessions = (int(n) for n in chosen.counts)
    return CouncilReliability(
        reviewers=list(chosen.reviewers),
        alphas=alphas,
        n_units=n_units,
        n_sessions=n_sessions,
        n_ratings=n_ratings,
        resamples=resamples,
        scale=chosen.scale,
        resolution=result.resolution,
        rank_only_reviewers=result.rank_only_reviewers,
        other_scale_records=sum(
            int(block.counts[0]) for block in summary.blocks if block is not chosen
        ),
    )


def _payload(summary: ReliabilitySummary) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    meta: dict[str, Any] = {
        "n_resamples": summary.n_resamples,
        "seed": summary.seed,
        "reviewers": list(summary.reviewers),
        "flag_reviewers": sorted(summary.flags),
        "blocks": [
            {"scale": list(block.scale), "reviewers": list(block.reviewers)}
            for block in summary.blocks
        ],
    }
    names = sorted(summary.flags)
    arrays = {
        "scales": summary.scales,
        "flag_every_rank": np.asarray([summary.flags[n][0] for n in names], dtype=bool),
        "flag_most_scores": np.asarray([summary.flags[n][1] for n in names], dtype=np.int64),
        "count_reviewer": summary.count_reviewer,
        "count_scale": summary.count_scale,
        "count_score": summary.count_score,
        "count_n": summary.count_n,
    }
    for index, block in enumerate(summary.blocks):
        arrays[f"block{index}_values"] = block.values
        arrays[f"block{index}_divisors"] = block.divisors
        # integer-valued doubles: exact below 2^53
        arrays[f"block{index}_sums"] = np.asarray(block.sums, dtype=float)
        arrays[f"block{index}_counts"] = block.counts
    return meta, arrays


def _sorted_names(read: PayloadReader, field: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise read.fail(field, "is not a list of strings")
    if value != sorted(set(value)):
        raise read.fail(field, "is not sorted and distinct")
    return tuple(value)


def _block_from_payload(read: PayloadReader, index: int, entry: Any, n_resamples: int) -> ScaleSums:
    field = f"block{index}"
    if not isinstance(entry, dict) or set(entry) != {"scale", "reviewers"}:
        raise read.fail("blocks", f"entry {index} is not a scale and its reviewers")
    scale = entry["scale"]
    if (
        not isinstance(scale, list)
        or len(scale) != 2
        or not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in scale)
        or not all(np.isfinite(scale))
    ):
        raise read.fail("blocks", f"entry {index} has no finite (low, high) scale")
    reviewers = _sorted_names(read, "blocks", entry["reviewers"])
    values = read.finite(f"{field}_values", (None,))
    divisors = read.array(f"{field}_divisors", "i", (None,))
    if values.size == 0 or np.any(np.diff(values) <= 0):
        raise read.fail(f"{field}_values", "is not sorted and distinct")
    if divisors.size and (divisors.min() < 1 or np.any(np.diff(divisors) <= 0)):
        raise read.fail(f"{field}_divisors", "is not sorted, distinct and positive")
    cells = values.size * (values.size + 1) // 2
    shape = (1 + len(reviewers), n_resamples + 1, divisors.size, cells)
    sums = read.finite(f"{field}_sums", shape)
    if np.any(sums != np.round(sums)) or np.any(np.abs(sums) >= 2.0**53):
        raise read.fail(f"{field}_sums", "holds a sum that is not a whole number below 2^53")
    counts = read.counts(f"{field}_counts", (len(COUNTS),))
    return ScaleSums(
        scale=(float(scale[0]), float(scale[1])),
        values=values,
        divisors=divisors,
        reviewers=reviewers,
        sums=sums,
        counts=counts,
    )


def _from_payload(
    meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray], n_resamples: int, seed: int
) -> ReliabilitySummary:
    read = PayloadReader("reliability", meta, arrays)
    if (read.integer("n_resamples"), read.integer("seed", low=-(2**63))) != (n_resamples, seed):
        raise read.fail("n_resamples", "or the seed differs from this report's")
    reviewers = _sorted_names(read, "reviewers", meta.get("reviewers"))
    flag_names = _sorted_names(read, "flag_reviewers", meta.get("flag_reviewers"))
    every = read.array("flag_every_rank", "b", (len(flag_names),))
    most = read.counts("flag_most_scores", (len(flag_names),))
    scales = read.finite("scales", (None, 2))
    entries = meta.get("blocks")
    if not isinstance(entries, list):
        raise read.fail("blocks", "is not a list")
    blocks = tuple(
        _block_from_payload(read, index, entry, n_resamples) for index, entry in enumerate(entries)
    )
    if [block.scale for block in blocks] != sorted({block.scale for block in blocks}):
        raise read.fail("blocks", "are not sorted by distinct scales")
    n = read.array("count_n", "i", (None,)).size
    count_n = read.counts("count_n", (n,))
    if n and count_n.min() < 1:
        raise read.fail("count_n", "holds a count below 1")
    return ReliabilitySummary(
        n_resamples=n_resamples,
        seed=seed,
        blocks=blocks,
        flags={name: (bool(e), int(m)) for name, e, m in zip(flag_names, every, most, strict=True)},
        reviewers=reviewers,
        scales=scales,
        count_reviewer=read.codes("count_reviewer", n, len(reviewers)),
        count_scale=read.codes("count_scale", n, len(scales)),
        count_score=read.finite("count_score", (n,)),
        count_n=count_n,
    )


class ReliabilitySection:
    """:func:`council_reliability` as an incremental section (ADRs 0086, 0089), finished
    with the profiles' rank-only reviewers."""

    name = "reliability"
    version = 2  # 2: Poisson-bootstrap pair-count sums (ADR 0089); 1 kept every rating
    needs_inputs = True

    def __init__(self, *, n_resamples: int, seed: int) -> None:
        self.n_resamples = n_resamples
        self.seed = seed

    def summarize(self, connection: duckdb.DuckDBPyConnection) -> ReliabilitySummary:
        return _summarize(connection, self.n_resamples, self.seed)

    def merge(self, saved: ReliabilitySummary, new: ReliabilitySummary) -> ReliabilitySummary:
        return _merge(saved, new)

    def finish(
        self, summary: ReliabilitySummary, rank_reviewers: frozenset[str] | set[str] = frozenset()
    ) -> CouncilReliability:
        return _finish(summary, set(rank_reviewers))

    def to_payload(
        self, summary: ReliabilitySummary
    ) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        return _payload(summary)

    def from_payload(
        self, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]
    ) -> ReliabilitySummary:
        return _from_payload(meta, arrays, self.n_resamples, self.seed)


def council_reliability(
    connection: duckdb.DuckDBPyConnection,
    rank_reviewers: frozenset[str] | set[str] = frozenset(),
    *,
    n_resamples: int = 200,
    seed: int = 0,
) -> CouncilReliability:
    """The whole section from the ``records`` table in one step (a cold run's)."""
    section = ReliabilitySection(n_resamples=n_resamples, seed=seed)
    return section.finish(section.summarize(connection), rank_reviewers=rank_reviewers)
