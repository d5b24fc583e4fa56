"""Benchmark: several processes appending to one bias record store at the same time.

Each of ``--processes`` writer processes appends ``--sessions`` audited sessions (one
``append_records`` call per session, ``--members`` x ``--members`` records each, as a
real session writes them) to one JSONL store. Then every line is parsed and counted:
each record must be present exactly once, and no line may be torn or interleaved.
Exits non-zero on any mismatch.

    .venv/bin/python benchmarks/concurrent_writers.py [--processes 8] [--sessions 5000]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from llm_council.bias_audit.records.jsonl_store import append_records
from llm_council.bias_audit.records.schema import ReviewRecord


def session_records(writer: int, session: int, members: int) -> list[ReviewRecord]:
    """The records of one synthetic audited session (ids say who wrote them)."""
    return [
        ReviewRecord(
            session_id=f"w{writer}-s{session}",
            timestamp="2026-11-22T03:00:00.000+00:00",
            reviewer_id=f"r{reviewer}",
            model_id=f"m{candidate}",
            position=(candidate + reviewer) % members,
            n_candidates=members,
            response_length_chars=100 + candidate,
            response_length_words=20 + candidate,
            score_value=float(1 + (writer + session + reviewer + candidate) % 10),
            rank=1 + candidate,
            is_self_review=reviewer == candidate,
            council_config_hash="sha256:0123456789abcdef",
            session_n_records=members * members,
        )
        for reviewer in range(members)
        for candidate in range(members)
    ]


def write_sessions(path: str, writer: int, sessions: int, members: int) -> None:
    for session in range(sessions):
        append_records(Path(path), session_records(writer, session, members))


def verify(path: Path, processes: int, sessions: int, members: int) -> dict[str, int]:
    """Count lines, unparseable lines and duplicate or missing (session, reviewer, model) keys."""
    keys: Counter[tuple[str, str, str]] = Counter()
    lines = bad = 0
    with path.open("rb") as handle:
        for raw in handle:
            lines += 1
            try:
                record = ReviewRecord.model_validate(json.loads(raw))
            except ValueError:
                bad += 1
                continue
            keys[(record.session_id, record.reviewer_id, record.model_id)] += 1
    expected = {
        (f"w{w}-s{s}", f"r{r}", f"m{c}")
        for w in range(processes)
        for s in range(sessions)
        for r in range(members)
        for c in range(members)
    }
    return {
        "expected": len(expected),
        "lines": lines,
        "unparseable_lines": bad,
        "duplicates": sum(n - 1 for n in keys.values() if n > 1),
        "missing": len(expected - set(keys)),
        "unexpected": len(set(keys) - expected),
    }


def run(path: Path, processes: int, sessions: int, members: int) -> float:
    """Start the writers together and wait for all; returns the wall time."""
    context = multiprocessing.get_context("fork")
    writers = [
        context.Process(target=write_sessions, args=(str(path), w, sessions, members))
        for w in range(processes)
    ]
    started = time.perf_counter()
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join()
    if any(writer.exitcode != 0 for writer in writers):
        raise SystemExit(f"a writer failed: exit codes {[w.exitcode for w in writers]}")
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=8)
    parser.add_argument("--sessions", type=int, default=5000, help="sessions per process")
    parser.add_argument("--members", type=int, default=5, help="records per session = members^2")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "records.jsonl"
        wall = run(path, args.processes, args.sessions, args.members)
        counts = verify(path, args.processes, args.sessions, args.members)
    appends = args.processes * args.sessions
    print(
        f"processes={args.processes} sessions/process={args.sessions} "
        f"records/session={args.members**2}"
    )
    print(
        f"wall time: {wall:.1f} s ({appends / wall:.0f} session appends/s, "
        f"{counts['lines'] / wall:.0f} lines/s)"
    )
    print(", ".join(f"{name}={value}" for name, value in counts.items()))
    ok = (
        counts["lines"] == counts["expected"]
        and counts["unparseable_lines"]
        == counts["duplicates"]
        == counts["missing"]
        == counts["unexpected"]
        == 0
    )
    print("OK: every record exactly once, no torn or interleaved line" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
