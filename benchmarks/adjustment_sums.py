"""Benchmark: the debiased aggregate's per-session lookup, full read vs summed history.

For each store size (simulated JSONL stores from ``llm_council.simulation``: ``--members``
members, every reviewer scoring every answer, self-scores included in the file and left
out by the fit) it measures, in one run:

1. the old path (:func:`full_read_adjustments`: read every record, fit by backfitting),
   ``--old-repeats`` times (once past 200k records);
2. the one-off rebuild of ``<store>.adjustments.json`` from the records (what a store
   written behind the sidecar's back pays once; past 32 MiB it runs in the background);
   a reader keeps it in memory and the writer's next append writes it (ADR 0052), so one
   session is appended before the lookups are timed;
3. the new path (:func:`reviewer_adjustments` reading the sums): warm (the sidecar already
   parsed by this process, as after its own append) and cold (parsed anew, as in another
   process);
4. the largest absolute difference between the two paths' leniencies, slot effects and
   slopes;
5. ``--appends`` appends of one session each, with the sidecar merge and without it
   (alternating, so both see the same disk), and the sidecar's size.

    PYTHONPATH=src .venv/bin/python benchmarks/adjustment_sums.py
        [--sizes 10000 100000 1000000] [--members 5] [--appends 40]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from llm_council.bias_audit.records import adjustment_sidecar, jsonl_store, summary_files
from llm_council.bias_audit.records.adjustment_history import rebuild_sums
from llm_council.bias_audit.records.adjustment_sidecar import sidecar_path
from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.bias_audit.session.history_adjustments import (
    full_read_adjustments,
    reviewer_adjustments,
)
from llm_council.debiased_aggregate import ReviewerAdjustment
from llm_council.simulation.simulated_records import (
    DEFAULT_MEMBERS,
    load_simulated_profiles,
    write_record_store,
)


def _timed(run: Callable[[], object], repeats: int) -> list[float]:
    samples = []
    for _ in range(repeats):
        begin = time.perf_counter()
        run()
        samples.append(time.perf_counter() - begin)
    return samples


def _ms(samples: Sequence[float]) -> str:
    return f"{statistics.median(samples) * 1e3:9.3f} ms"


def _largest_difference(
    old: dict[str, ReviewerAdjustment], new: dict[str, ReviewerAdjustment]
) -> float:
    if old.keys() != new.keys():
        return float("inf")
    worst = 0.0
    for name, a in old.items():
        b = new[name]
        pairs = [(a.leniency, b.leniency), (a.length_slope, b.length_slope)]
        pairs += list(zip(a.slot_effects, b.slot_effects, strict=True))
        worst = max(worst, *(abs(x - y) for x, y in pairs))
        if a.n_scores != b.n_scores:
            return float("inf")
    return worst


def _session(names: Sequence[str], index: int, config_hash: str) -> list[ReviewRecord]:
    return [
        ReviewRecord(
            session_id=f"bench-{index}",
            timestamp="2026-11-27T00:00:00Z",
            reviewer_id=reviewer,
            model_id=candidate,
            position=(slot + r) % len(names),
            n_candidates=len(names),
            response_length_chars=800 + 150 * slot,
            response_length_words=150 + 25 * slot,
            score_value=float(1 + (3 * r + 2 * slot + index) % 10),
            is_self_review=reviewer == candidate,
            council_config_hash=config_hash,
        )
        for r, reviewer in enumerate(names)
        for slot, candidate in enumerate(names)
    ]


def _no_merge(path: Path, before: object, records: object) -> None:
    return None


def run_size(folder: Path, n_records: int, n_members: int, args: argparse.Namespace) -> None:
    profiles = load_simulated_profiles()
    members = [
        (f"m{i}-{DEFAULT_MEMBERS[i % len(profiles)]}", profiles[i % len(profiles)][1])
        for i in range(n_members)
    ]
    names = [name for name, _ in members]
    store = folder / f"records-{n_records}.jsonl"
    begin = time.perf_counter()
    written = write_record_store(store, members, max(1, n_records // n_members**2), seed=1)
    with store.open("rb") as handle:
        config_hash = json.loads(handle.readline())["council_config_hash"]
    print(
        f"\n== {written:,} records ({n_members} members), {store.stat().st_size / 2**20:.0f} MiB,"
        f" written in {time.perf_counter() - begin:.1f} s"
    )
    old_repeats = args.old_repeats if written <= 200_000 else 1
    old_result: dict[str, ReviewerAdjustment] = {}

    def old() -> None:
        nonlocal old_result
        old_result = full_read_adjustments(store, names, council_config_hash=config_hash)

    begin = time.perf_counter()
    rebuild_sums(store)
    rebuild_s = time.perf_counter() - begin
    # a reader keeps its rebuild in memory; the writer's next append writes it
    append_records(store, _session(names, -1, config_hash))
    summary_files.forget_rebuilt()
    old_times = _timed(old, old_repeats)
    new_result: dict[str, ReviewerAdjustment] = {}

    def new() -> None:
        nonlocal new_result
        new_result = reviewer_adjustments(store, names, council_config_hash=config_hash)

    warm = _timed(new, args.repeats)

    def cold() -> None:
        adjustment_sidecar._READS.clear()
        summary_files.forget_rebuilt()
        new()

    cold_times = _timed(cold, max(10, args.repeats // 5))
    print(f"old path (full read + fit), per session: {_ms(old_times)}  (x{old_repeats})")
    print(f"new path (summed history), warm:         {_ms(warm)}")
    print(f"new path (summed history), cold parse:   {_ms(cold_times)}")
    print(
        f"speed-up (old / new warm): {statistics.median(old_times) / statistics.median(warm):,.0f}x"
    )
    print(f"one-off rebuild of the sidecar: {rebuild_s:.2f} s")
    print(
        f"largest |old - new| over leniency, slots, slope: "
        f"{_largest_difference(old_result, new_result):.2e} ({len(new_result)} reviewers)"
    )
    # all merging appends first (the sidecar stays fresh), then the ones without the merge
    # (each leaves it stale, which would make a later merge skip)
    with_merge, without_merge = [], []
    real_merge = jsonl_store._update_adjustment_sums
    for merging, samples in ((True, with_merge), (False, without_merge)):
        jsonl_store._update_adjustment_sums = real_merge if merging else _no_merge  # type: ignore[assignment]
        for index in range(args.appends):
            records = _session(names, index + merging * args.appends, config_hash)
            begin = time.perf_counter()
            append_records(store, records)
            samples.append(time.perf_counter() - begin)
        if merging:
            sidecar_kib = sidecar_path(store).stat().st_size / 1024
            fresh = _largest_difference(
                full_read_adjustments(store, names, council_config_hash=config_hash)
                if written <= 200_000
                else new_result,
                reviewer_adjustments(store, names, council_config_hash=config_hash),
            )
    jsonl_store._update_adjustment_sums = real_merge  # type: ignore[assignment]
    extra = statistics.median(with_merge) - statistics.median(without_merge)
    print(
        f"append of one {len(records)}-record session: {_ms(with_merge)} with the sidecar merge,"
        f" {_ms(without_merge)} without (+{extra * 1e3:.2f} ms); sidecar {sidecar_kib:.0f} KiB"
    )
    if written <= 200_000:
        print(f"after the merging appends, largest |full read - sums|: {fresh:.2e}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--members", type=int, nargs="+", default=[5])
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--old-repeats", type=int, default=3)
    parser.add_argument("--appends", type=int, default=40)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        for n_members in args.members:
            for n_records in args.sizes:
                run_size(Path(folder), n_records, n_members, args)
                for path in Path(folder).iterdir():
                    path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
