"""Benchmark: the reviewer-profile lookup a session pays with 1M records in the store.

Writes a simulated JSONL store of about 1M records (5 members, 25 records a session,
40,000 sessions), then measures:

1. the one-off rebuild of the profiles from every record (a store written by another
   program, imported or compacted pays this once; the rebuild is kept in memory and the
   first append below writes it as ``<store>.profiles.json``, ADR 0052);
2. the lookup a session pays when the sidecar is fresh (:func:`load_profiles`: a stat of
   the store, a read of the sidecar): target at most 2 ms;
3. an append with its profile journal line under the store's lock, after which the
   lookups of (2) run against a journal of ``--appends`` sessions (it is folded into the
   base at 32 KiB, some 30 five-member sessions: the worst case a lookup reads is shown).

    PYTHONPATH=src .venv/bin/python benchmarks/profile_lookup.py [--sessions 40000]
        [--repeats 500] [--store PATH]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.reviewer_profiles import (
    journal_path,
    load_profiles,
    profile_path,
    records_profiles,
)
from llm_council.bias_audit.records.schema import ReviewRecord
from llm_council.simulation.simulated_records import load_simulated_profiles, write_record_store


def _milliseconds(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95)]
    return f"median {statistics.median(ordered) * 1e3:.3f} ms, 95th percentile {p95 * 1e3:.3f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=40_000)
    parser.add_argument("--repeats", type=int, default=500)
    parser.add_argument("--store", type=Path, default=None)
    parser.add_argument(
        "--appends", type=int, default=100, help="sessions appended, with lookups after each"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        store = args.store or Path(folder) / "records.jsonl"
        members = load_simulated_profiles()[:5]
        start = time.perf_counter()
        n_records = write_record_store(store, members, args.sessions, seed=1)
        print(
            f"store: {n_records:,} records, {store.stat().st_size / 1e6:.0f} MB, "
            f"written in {time.perf_counter() - start:.1f} s"
        )
        profile_path(store).unlink(missing_ok=True)
        start = time.perf_counter()
        profiles = load_profiles(store)
        print(
            f"rebuild (missing sidecar): {time.perf_counter() - start:.1f} s for "
            f"{len(profiles)} reviewers, "
            f"{sum(p.sessions for p in profiles.values()) // max(1, len(profiles)):,} "
            "sessions each"
        )
        names = [name for name, _ in members]

        def session(index: int) -> list[ReviewRecord]:
            return [
                ReviewRecord(
                    session_id=f"bench-{index}",
                    timestamp="2026-11-26T00:00:00Z",
                    reviewer_id=reviewer,
                    model_id=candidate,
                    position=slot,
                    n_candidates=5,
                    response_length_chars=1000,
                    response_length_words=200,
                    score_value=float(1 + (3 * r + 2 * slot + index) % 10),
                    is_self_review=reviewer == candidate,
                    council_config_hash="bench",
                )
                for r, reviewer in enumerate(names)
                for slot, candidate in enumerate(names)
            ]

        # appends: the whole locked append, the profile sums inside it alone, and after
        # each append the lookups a session would pay, at every journal length in turn
        appends, merges, lookups = [], [], []
        journal = journal_path(store)
        longest = 0
        per_append = max(1, args.repeats // args.appends)
        for index in range(args.appends):
            records = session(index)
            begin = time.perf_counter()
            append_records(store, records)
            appends.append(time.perf_counter() - begin)
            dumped = [record.model_dump() for record in records]
            begin = time.perf_counter()
            records_profiles(dumped)
            merges.append(time.perf_counter() - begin)
            if journal.exists():
                longest = max(longest, journal.read_bytes().count(b"\n"))
            for _ in range(per_append):
                begin = time.perf_counter()
                load_profiles(store)
                lookups.append(time.perf_counter() - begin)
        print(f"append of 25 records with the profile journal line: {_milliseconds(appends)}")
        print(f"  of which the session's profile sums: {_milliseconds(merges)}")
        print(
            f"lookup (base + journal of 0-{longest} sessions): {_milliseconds(lookups)} "
            "(target <= 2 ms)"
        )
        fresh = load_profiles(store)
        counts = sorted({p.sessions for p in fresh.values()})
        print(f"sessions per reviewer after the appends: {counts}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
