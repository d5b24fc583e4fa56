"""The monitor's update after an audited session: from memory against re-reading the store.

One process, one store per row. Each measured session is appended with the store's own
writer (``append_records``), then the monitor is brought up to date under the writer lock
and its state written, timed from the records in hand to the written state:

- **tail read** (the update before ADR 0053's second amendment, still the path whenever
  the tail is not exactly this session's lines): ``update_monitor(store)``, which reads
  and parses the appended lines and re-derives the session's estimates from them;
- **from memory**: ``update_monitor(store, appended=appended_session(records))``, the
  estimates computed from the records the audit holds (included in the time), the tail
  only checked (line count, the session id's count), not parsed.

The two alternate session by session (ABAB...) on the same store, so both see the same
machine load and store size; every "from memory" update is checked to have taken that
path. Wall-clock medians, 90th percentiles and means, and the median CPU time of the
updating thread (``time.thread_time``: what the update costs, less the waits for a core
on a loaded machine), per row; 3, 5 and 9 members on stores of
``--store-sessions`` sessions, and 5 members on a store of ``--large`` sessions (the
state file grows by 8 bytes of digest a session). Sessions come from the independent
generator (``tests/generators/independent_council.py``), honest noise SDs 0.5-1.5.

``--base TREE`` adds the update of another tree (a checkout or ``git archive`` with
``src/``, such as the commit before this path existed) on the same stores and sessions,
in its own process right after each row (``current_monitor``, as that tree's middleware
calls it), with half as many sessions timed.

PostgreSQL (``--postgres``, when a server can be started here: ``tests/fakes``): a
PostgreSQL store keeps no monitor state, so each look folds every record again
(``postgres_monitor``); its cost per look is timed on a store of ``--store-sessions``
5-member sessions, for comparison.

    PYTHONPATH=src nice .venv/bin/python benchmarks/monitor_update_cost.py \\
        [--members 3 5 9] [--sessions 300] [--store-sessions 100] [--large 2000] \\
        [--postgres] [--seed 1] [--base /tmp/monitor-before]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402
from llm_council.bias_audit.records.jsonl_store import (  # noqa: E402
    append_records,
    with_session_counts,
)
from llm_council.bias_audit.records.monitor_state import current_monitor  # noqa: E402
from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record  # noqa: E402

PATHS = ("tail read", "from memory")


def _sessions(members: int, n: int, seed: int) -> list[list[ReviewRecord]]:
    spec = CouncilSpec(n_members=members, noise_sds=list(np.linspace(0.5, 1.5, members)))
    return [
        [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        for session in generate_sessions(spec, n, seed)
    ]


def _prefill(store: Path, sessions: list[list[ReviewRecord]]) -> None:
    """The store's earlier sessions, written as the writer writes them (one line per
    record, counts set) but in one go: only the monitor's update is under test."""
    with store.open("wb") as handle:
        for records in sessions:
            handle.write(
                b"".join(
                    (record.model_dump_json() + "\n").encode("utf-8")
                    for record in with_session_counts(records)
                )
            )


def _summary(samples: list[float]) -> str:
    ms = np.asarray(samples) * 1e3
    return f"{np.median(ms):.2f} / {np.quantile(ms, 0.9):.2f} / {ms.mean():.2f}"


def jsonl_row(members: int, store_sessions: int, measured: int, seed: int) -> list[str]:
    """One store: ``store_sessions`` earlier sessions, then ``measured`` appends, the two
    paths alternating; the row's cells (medians / p90 / means, ms)."""
    sessions = _sessions(members, store_sessions + measured, seed)
    times: dict[str, list[float]] = {path: [] for path in PATHS}
    cpu: dict[str, list[float]] = {path: [] for path in PATHS}
    with tempfile.TemporaryDirectory() as directory:
        os.environ.setdefault("LLM_COUNCIL_SUMMARY_KEY_FILE", str(Path(directory) / "key"))
        store = Path(directory) / "records.jsonl"
        _prefill(store, sessions[:store_sessions])
        current_monitor(store)  # the saved state the updates start from
        # imported here: a --base tree (before this path existed) runs base_child_row only
        from llm_council.bias_audit.records.monitor_append import appended_session
        from llm_council.bias_audit.records.monitor_state import update_monitor

        for index, records in enumerate(sessions[store_sessions:]):
            append_records(store, records)
            path = PATHS[index % 2]
            started, started_cpu = time.perf_counter(), time.thread_time()
            if path == "from memory":
                update = update_monitor(store, appended=appended_session(records))
            else:
                update = update_monitor(store)
            cpu[path].append(time.thread_time() - started_cpu)
            times[path].append(time.perf_counter() - started)
            expected = "memory" if path == "from memory" else "read"
            if update.path != expected:
                raise SystemExit(f"{path}: the update took the {update.path!r} path")
        state_kib = Path(str(store) + ".monitor.json").stat().st_size / 1024
    return [
        f"{members}",
        f"{store_sessions:,} (state {state_kib:.0f} KiB)",
        *(_summary(times[path]) for path in PATHS),
        *(f"{np.median(cpu[path]) * 1e3:.2f}" for path in PATHS),
        f"{len(times[PATHS[0]])} + {len(times[PATHS[1]])}",
    ]


def base_child_row(members: int, store_sessions: int, measured: int, seed: int) -> str:
    """In a ``--base`` tree's process: every measured session updated as that tree does
    (``current_monitor``, the tail read); ``median / p90 / mean`` wall and CPU median."""
    sessions = _sessions(members, store_sessions + measured, seed)
    wall: list[float] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory() as directory:
        os.environ.setdefault("LLM_COUNCIL_SUMMARY_KEY_FILE", str(Path(directory) / "key"))
        store = Path(directory) / "records.jsonl"
        _prefill(store, sessions[:store_sessions])
        current_monitor(store)
        for records in sessions[store_sessions:]:
            append_records(store, records)
            started, started_cpu = time.perf_counter(), time.thread_time()
            current_monitor(store)
            cpu.append(time.thread_time() - started_cpu)
            wall.append(time.perf_counter() - started)
    return f"{_summary(wall)} (CPU {np.median(cpu) * 1e3:.2f})"


def base_cell(base: Path, members: int, store_sessions: int, measured: int, seed: int) -> str:
    """The same store and sessions updated by the ``base`` tree's code, in its own process
    (its ``src`` first on the path), right after this tree's row."""
    completed = subprocess.run(
        [
            sys.executable,
            str(Path(__file__).resolve()),
            "--base-child",
            *("--members", str(members), "--store-sessions", str(store_sessions)),
            *("--sessions", str(measured // 2), "--seed", str(seed)),
        ],
        env={**os.environ, "PYTHONPATH": str(base / "src")},
        capture_output=True,
        text=True,
        check=True,
    )
    return completed.stdout.strip().splitlines()[-1]


def postgres_row(store_sessions: int, looks: int, seed: int, base: bool) -> list[str] | None:
    """The cost of one look at a PostgreSQL store's monitor (every record folded again)."""
    from fakes.postgres_server import PostgresServer, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        print(f"PostgreSQL not measured: {reason}", file=sys.stderr)
        return None
    import asyncio

    from llm_council.bias_audit.records.postgres_monitor import postgres_monitor
    from llm_council.bias_audit.records.postgres_schema import migrate_store
    from llm_council.bias_audit.records.stores import open_store

    server = PostgresServer.start()
    try:
        url = server.create_database("monitor_cost")
        migrate_store(url)
        sessions = _sessions(5, store_sessions, seed)

        async def write() -> None:
            writer = open_store(url)
            for records in sessions:
                await writer.write_session(records)
            await writer.aclose()  # type: ignore[attr-defined]

        asyncio.run(write())
        samples = []
        for _ in range(looks):
            started = time.perf_counter()
            postgres_monitor(url)
            samples.append(time.perf_counter() - started)
    finally:
        server.stop()
    return [
        "5",
        f"{store_sessions:,} (PostgreSQL)",
        *(["-"] if base else []),
        _summary(samples),
        "-",
        "-",
        "-",
        f"{looks} looks",
    ]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[3, 5, 9])
    parser.add_argument("--sessions", type=int, default=300, help="measured, both paths")
    parser.add_argument("--store-sessions", type=int, default=100)
    parser.add_argument("--large", type=int, default=2000, help="5 members; 0: no such row")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--base", type=Path, help="a tree (checkout or git archive) with src/: its update too"
    )
    parser.add_argument("--base-child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.base_child:
        print(base_child_row(args.members[0], args.store_sessions, args.sessions, args.seed))
        return
    if args.base is not None and not (args.base / "src").is_dir():
        raise SystemExit(f"--base {args.base}: expected a tree with src/")
    sizes = [(m, args.store_sessions) for m in args.members]
    if args.large:
        sizes.append((5, args.large))
    rows = []
    for members, store_sessions in sizes:
        row = jsonl_row(members, store_sessions, args.sessions, args.seed)
        if args.base is not None:
            row.insert(2, base_cell(args.base, members, store_sessions, args.sessions, args.seed))
        rows.append(row)
    if args.postgres:
        row = postgres_row(args.store_sessions, 20, args.seed, args.base is not None)
        if row is not None:
            rows.append(row)
    load = os.getloadavg()[0]
    print(f"monitor update per session, ms (load average {load:.1f} at the end)")
    print()
    base = "| base tree: median / p90 / mean (CPU median) " if args.base is not None else ""
    print(
        "| members | store sessions "
        + base
        + "| wall, tail read: median / p90 / mean | wall, from memory "
        "| CPU median, tail read | CPU median, from memory | sessions timed |"
    )
    print("|---|---|---|---|---|---|---|" + ("---|" if base else ""))
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
