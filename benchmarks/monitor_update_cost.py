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

``--versus TREE`` (ADR 0053, fourth amendment) instead compares the two trees
*interleaved*: one child process per tree (``--serve``, its ``src`` first on the path),
each on its own copy of the same store (``--store-sessions`` earlier sessions; a
``--large`` row at 9 members), the same sessions appended and folded from memory (the
middleware's path) one at a time in ABBA order, so both see the same load; wall and CPU
medians and 90th percentiles per tree, the ratios this / base, and the load average
before and after.

PostgreSQL (``--postgres``, when a server can be started here: ``tests/fakes``), a second
table: per store of ``--postgres-stores`` sessions (loaded by COPY, the state rebuilt once)
and ``--postgres-members`` members, ``--pg-sessions`` sessions written through the store's
writer (the monitor's fold in the session's transaction timed inside it), each followed by
a look at the saved state (*after*: ``postgres_monitor``, connection included, as a
session's answer and ``bias-watch`` read it) and, on every session at 100 and every 20th
at 2,000, a look that folds every record again (*before*: the only look there was before
the state table; same connection, query and fold), checked equal to the saved state.

    PYTHONPATH=src nice .venv/bin/python benchmarks/monitor_update_cost.py \\
        [--members 3 5 9] [--sessions 300] [--store-sessions 100] [--large 2000] \\
        [--postgres [--postgres-stores 100 2000] [--postgres-members 3 5] [--pg-sessions 40]] \\
        [--jsonl 0] [--seed 1] [--base /tmp/monitor-before]
    git -C /work/main archive HEAD src | tar -x -C /tmp/mon-base   # (an empty directory)
    PYTHONPATH=src nice .venv/bin/python benchmarks/monitor_update_cost.py \\
        --versus /tmp/mon-base [--members 3 5 9] [--sessions 300] [--large 2000]
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


class _Stepper:
    """One tree's side of ``--versus``: a store of ``store_sessions`` earlier sessions,
    then each measured session appended and folded from memory on request (the
    middleware's path), answering ``wall cpu path`` (seconds)."""

    def __init__(self, members: int, store_sessions: int, measured: int, seed: int) -> None:
        self.directory = tempfile.TemporaryDirectory()
        os.environ.setdefault(
            "LLM_COUNCIL_SUMMARY_KEY_FILE", str(Path(self.directory.name) / "key")
        )
        sessions = _sessions(members, store_sessions + measured, seed)
        self.sessions = sessions[store_sessions:]
        self.store = Path(self.directory.name) / "records.jsonl"
        _prefill(self.store, sessions[:store_sessions])
        current_monitor(self.store)

    def step(self, index: int) -> str:
        from llm_council.bias_audit.records.monitor_append import appended_session
        from llm_council.bias_audit.records.monitor_state import update_monitor

        records = self.sessions[index]
        append_records(self.store, records)
        started, started_cpu = time.perf_counter(), time.thread_time()
        update = update_monitor(self.store, appended=appended_session(records))
        cpu = time.thread_time() - started_cpu
        return f"{time.perf_counter() - started!r} {cpu!r} {update.path}"


def serve() -> None:
    """``--serve``: read ``init M S N SEED`` and ``step I`` lines, answer one line each."""
    stepper: _Stepper | None = None
    for line in sys.stdin:
        command, *numbers = line.split()
        if command == "init":
            stepper = _Stepper(*(int(value) for value in numbers))
            print("ready", flush=True)
        elif command == "step" and stepper is not None:
            print(stepper.step(int(numbers[0])), flush=True)


class _Side:
    """A ``--serve`` child running one tree's ``src``."""

    def __init__(self, tree: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--serve"],
            env={**os.environ, "PYTHONPATH": str(tree / "src")},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def ask(self, line: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().strip()
        if not answer:
            raise SystemExit(f"a --serve child stopped on {line!r}")
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)


def versus_row(
    base: Path, members: int, store_sessions: int, measured: int, seed: int
) -> list[str]:
    """The base tree and this one, one process each on its own copy of the same store and
    sessions, stepped in ABBA order (each session appended and folded from memory by one,
    then the other); medians and 90th percentiles of wall and CPU, and the ratios."""
    sides = {"base": _Side(base), "this": _Side(ROOT)}
    wall: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    try:
        for side in sides.values():
            side.ask(f"init {members} {store_sessions} {measured} {seed}")
        for index in range(measured):
            order = ("base", "this") if index % 2 == 0 else ("this", "base")
            for name in order:
                seconds, cpu_seconds, path = sides[name].ask(f"step {index}").split()
                if path != "memory":
                    raise SystemExit(f"{name}: the update took the {path!r} path")
                wall[name].append(float(seconds))
                cpu[name].append(float(cpu_seconds))
    finally:
        for side in sides.values():
            side.close()

    def cell(samples: list[float]) -> str:
        ms = np.asarray(samples) * 1e3
        return f"{np.median(ms):.3f} / {np.quantile(ms, 0.9):.3f}"

    def ratio(values: dict[str, list[float]]) -> str:
        return f"{np.median(values['this']) / np.median(values['base']):.2f}"

    return [
        f"{members}",
        f"{store_sessions:,}",
        cell(wall["base"]),
        cell(wall["this"]),
        ratio(wall),
        cell(cpu["base"]),
        cell(cpu["this"]),
        ratio(cpu),
        f"{measured}",
    ]


def print_versus_table(rows: list[list[str]], base: Path, load_before: float) -> None:
    print(
        f"monitor update from memory, base tree {base} against this tree, ms "
        f"(load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after)"
    )
    print()
    print(
        "| members | store sessions | base wall median / p90 | this wall median / p90 | "
        "wall ratio | base CPU median / p90 | this CPU median / p90 | CPU ratio | "
        "sessions each |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def _copy_into(url: str, sessions: list[list[ReviewRecord]]) -> None:
    """The store's earlier sessions in one transaction by COPY, as an importer writes them
    (no fold: the state is rebuilt once after), ``written_at`` in their order."""
    import psycopg

    from llm_council.bias_audit.records import postgres_store

    columns = ", ".join(f'"{name}"' for name in postgres_store._WRITTEN_COLUMNS)
    with psycopg.connect(url) as connection:
        for index, records in enumerate(sessions):
            connection.execute(
                "INSERT INTO bias_sessions (session_id, n_records, written_at) VALUES "
                "(%s, %s, '2026-01-01T00:00:00Z'::timestamptz + %s * interval '1 second')",
                (records[0].session_id, len(records), index),
            )
        with connection.cursor().copy(f"COPY bias_records ({columns}) FROM STDIN") as copy:
            for records in sessions:
                for index, record in enumerate(with_session_counts(records)):
                    copy.write_row(postgres_store._row(index, record, len(records)))


def _recomputed_look(url: str, settings: object) -> object:
    """The look before the state table: connect, check the schema, fold every record (the
    rebuild's query and fold, nothing saved, the saved state left alone)."""
    from psycopg import Connection

    from llm_council.bias_audit.records import postgres_monitor as monitor
    from llm_council.bias_audit.records.postgres_connect import connect_options
    from llm_council.bias_audit.records.postgres_schema import stored_version

    with Connection.connect(url, **connect_options(url)) as connection:
        version = stored_version(connection, url)
        connection.commit()
        monitor._check_size(connection, url, monitor.MAX_RECORDS)
        connection.commit()
        return monitor._rebuilt(connection, url, settings, version or 0, save=False)[0]


def postgres_rows(
    server: object, members: int, store_sessions: int, measured: int, seed: int
) -> list[str]:
    """One PostgreSQL store of ``store_sessions`` sessions, then ``measured`` sessions
    written through the store's writer (its monitor fold timed inside the transaction),
    each followed by a look at the saved state (after) and, on every ``stride``-th session,
    a look that folds every record again (before: the only look there was)."""
    import asyncio

    from llm_council.bias_audit.records import postgres_monitor_state
    from llm_council.bias_audit.records.monitor_fold import MonitorState
    from llm_council.bias_audit.records.monitor_state import state_body
    from llm_council.bias_audit.records.postgres_monitor import postgres_monitor
    from llm_council.bias_audit.records.postgres_schema import migrate_store
    from llm_council.bias_audit.records.stores import open_store
    from llm_council.stats.monitor.anytime_monitor import MonitorSettings

    url = server.create_database(f"cost_{members}_{store_sessions}")  # type: ignore[attr-defined]
    migrate_store(url)
    sessions = _sessions(members, store_sessions + measured, seed)
    _copy_into(url, sessions[:store_sessions])
    postgres_monitor(url, save=True)  # the state the writers fold into
    folds: list[float] = []
    original = postgres_monitor_state.fold_monitor_session

    async def timed_fold(*args: object, **kwargs: object) -> str:
        started = time.perf_counter()
        outcome = await original(*args, **kwargs)  # type: ignore[arg-type]
        folds.append(time.perf_counter() - started)
        if outcome != "folded":
            raise SystemExit(f"the writer did not fold: {outcome}")
        return outcome

    postgres_monitor_state.fold_monitor_session = timed_fold  # type: ignore[assignment]
    writes: list[float] = []
    after: list[float] = []
    before: list[float] = []
    stride = max(1, store_sessions // 100)  # a look of the old kind costs the whole store
    settings = MonitorSettings()

    async def run() -> None:
        writer = open_store(url)
        for index, records in enumerate(sessions[store_sessions:]):
            started = time.perf_counter()
            await writer.write_session(records)
            writes.append(time.perf_counter() - started)
            started = time.perf_counter()
            saved = await asyncio.to_thread(postgres_monitor, url, settings)
            after.append(time.perf_counter() - started)
            if index % stride == 0:
                started = time.perf_counter()
                recomputed = await asyncio.to_thread(_recomputed_look, url, settings)
                before.append(time.perf_counter() - started)
                assert isinstance(recomputed, MonitorState) and isinstance(saved, MonitorState)
                if state_body(recomputed)["cells"] != state_body(saved)["cells"]:
                    raise SystemExit("the saved state differs from the records' fold")
        await writer.aclose()  # type: ignore[attr-defined]

    try:
        asyncio.run(run())
    finally:
        postgres_monitor_state.fold_monitor_session = original  # type: ignore[assignment]
    return [
        f"{members}",
        f"{store_sessions:,}",
        _summary(before),
        _summary(after),
        _summary(writes),
        _summary(folds),
        f"{len(before)} / {len(after)}",
    ]


def postgres_table(store_sizes: list[int], members: list[int], measured: int, seed: int) -> None:
    """The PostgreSQL rows, printed as a table (a server started here, stopped after)."""
    from fakes.postgres_server import PostgresServer, unavailable_reason

    reason = unavailable_reason()
    if reason is not None:
        print(f"PostgreSQL not measured: {reason}", file=sys.stderr)
        return
    server = PostgresServer.start()
    try:
        rows = [
            postgres_rows(server, m, size, measured, seed) for size in store_sizes for m in members
        ]
    finally:
        server.stop()
    print()
    print(f"PostgreSQL, ms (load average {os.getloadavg()[0]:.1f} at the end)")
    print()
    print(
        "| members | store sessions | look before: every record folded (median / p90 / "
        "mean) | look after: the saved state | write_session, fold included | the fold in "
        "the transaction | looks before / after |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


def print_jsonl_table(rows: list[list[str]], base: bool) -> None:
    load = os.getloadavg()[0]
    print(f"monitor update per session, ms (load average {load:.1f} at the end)")
    print()
    column = "| base tree: median / p90 / mean (CPU median) " if base else ""
    print(
        "| members | store sessions "
        + column
        + "| wall, tail read: median / p90 / mean | wall, from memory "
        "| CPU median, tail read | CPU median, from memory | sessions timed |"
    )
    print("|---|---|---|---|---|---|---|" + ("---|" if base else ""))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[3, 5, 9])
    parser.add_argument("--sessions", type=int, default=300, help="measured, both paths")
    parser.add_argument("--store-sessions", type=int, default=100)
    parser.add_argument("--large", type=int, default=2000, help="5 members; 0: no such row")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--postgres-stores", type=int, nargs="+", default=[100, 2000])
    parser.add_argument("--postgres-members", type=int, nargs="+", default=[3, 5])
    parser.add_argument("--pg-sessions", type=int, default=40, help="written per PostgreSQL row")
    parser.add_argument("--jsonl", type=int, default=1, help="0: the PostgreSQL table only")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--base", type=Path, help="a tree (checkout or git archive) with src/: its update too"
    )
    parser.add_argument(
        "--versus",
        type=Path,
        help="a tree with src/: its update and this tree's, interleaved session by session",
    )
    parser.add_argument("--base-child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve()
        return
    if args.base_child:
        print(base_child_row(args.members[0], args.store_sessions, args.sessions, args.seed))
        return
    if args.versus is not None:
        if not (args.versus / "src").is_dir():
            raise SystemExit(f"--versus {args.versus}: expected a tree with src/")
        load_before = os.getloadavg()[0]
        sizes = [(m, args.store_sessions) for m in args.members]
        if args.large:
            sizes.append((9, args.large))
        rows = [versus_row(args.versus, m, n, args.sessions, args.seed) for m, n in sizes]
        print_versus_table(rows, args.versus, load_before)
        return
    if args.base is not None and not (args.base / "src").is_dir():
        raise SystemExit(f"--base {args.base}: expected a tree with src/")
    sizes = [(m, args.store_sessions) for m in args.members]
    if args.large:
        sizes.append((5, args.large))
    rows = []
    for members, store_sessions in sizes if args.jsonl else []:
        row = jsonl_row(members, store_sessions, args.sessions, args.seed)
        if args.base is not None:
            row.insert(2, base_cell(args.base, members, store_sessions, args.sessions, args.seed))
        rows.append(row)
    if rows:
        print_jsonl_table(rows, base=args.base is not None)
    if args.postgres:
        postgres_table(args.postgres_stores, args.postgres_members, args.pg_sessions, args.seed)


if __name__ == "__main__":
    main()
