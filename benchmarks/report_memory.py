"""The whole report's peak memory, and which section sets it (ADR 0092).

    .venv/bin/python benchmarks/report_memory.py --store /tmp/pq10m
    .venv/bin/python benchmarks/report_memory.py --store /tmp/pq10m --trees /tmp/before/src src
    .venv/bin/python benchmarks/report_memory.py --store /tmp/pq10m --no-summaries

For each source tree (default: this one), in a child process: ``build_report`` on the
store (a hard-linked copy in a temporary directory, so no summary file beside the real
store is read or written and every run is cold), as the CLI runs it (summary file on;
``--no-summaries``: ``session_summaries=False``). Printed per tree: the child's maximum
resident set (``ru_maxrss`` from ``os.wait4``: the same figure as ``/usr/bin/time -v``),
wall and CPU seconds, and a timeline: each incremental section's start, end and the
largest resident set sampled while it ran (every 5 ms by a thread in the child), so the
section that sets the peak is named. Runs alternate trees, ``--repeats`` times each.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
_SAMPLE_S = 0.005


def _resident_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) / 1024
    return float("nan")


def child(store: str, summaries: bool) -> None:
    """One report with a resident-set sampler and each section's start and end."""
    from llm_council.bias_audit.report import build_report
    from llm_council.bias_audit.report.analyses import incremental_runner

    samples: list[tuple[float, float]] = []
    marks: list[tuple[str, float, float]] = []
    running = True

    def sample() -> None:
        while running:
            samples.append((time.perf_counter(), _resident_mb()))
            time.sleep(_SAMPLE_S)

    run_and_keep = incremental_runner._run_and_keep

    def timed(connection: Any, section: Any, plan: Any, keeper: Any) -> Any:
        started = time.perf_counter()
        try:
            return run_and_keep(connection, section, plan, keeper)
        finally:
            marks.append((section.name, started, time.perf_counter()))

    incremental_runner._run_and_keep = timed  # instrumentation only: the same function runs
    threading.Thread(target=sample, daemon=True).start()
    began = time.perf_counter()
    build_report(store, session_summaries=summaries)
    running = False
    rows = []
    for name, first, last in marks:
        during = [value for at, value in samples if first <= at <= last]
        rows.append([name, first - began, last - began, max(during, default=float("nan"))])
    peak_at, peak = max(samples, key=lambda pair: pair[1]) if samples else (began, float("nan"))
    print(json.dumps({"sections": rows, "sampled_peak": [peak_at - began, peak]}))


def _scratch_copy(store: Path, directory: Path) -> Path:
    """``store`` hard-linked (copied where links fail) into ``directory``."""
    target = directory / store.name

    def link(source: str, destination: str) -> None:
        try:
            os.link(source, destination)
        except OSError:
            shutil.copy2(source, destination)

    if store.is_dir():
        shutil.copytree(store, target, copy_function=link)
    else:
        link(str(store), str(target))
    return target


def _run(tree: Path, store: Path, summaries: bool) -> dict[str, Any]:
    """One child run of ``tree``'s report: peak, wall, CPU and its timeline."""
    with tempfile.TemporaryDirectory(prefix="report-memory-") as scratch:
        copy = _scratch_copy(store, Path(scratch))
        command = [PYTHON, __file__, "--child", str(copy), "--summaries", str(summaries)]
        environment = {**os.environ, "PYTHONPATH": str(tree)}
        with tempfile.TemporaryFile() as out:
            started = time.perf_counter()
            process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.PIPE, env=environment, cwd=ROOT
            )
            _, status, usage = os.wait4(process.pid, 0)
            wall = time.perf_counter() - started
            errors = process.stderr.read().decode() if process.stderr else ""
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"the report of {tree} failed: {errors.strip()[-2000:]}")
            out.seek(0)
            timeline = json.loads(out.read().decode())
    return {
        "peak_kb": usage.ru_maxrss,
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        **timeline,
    }


def _print(tree: Path, run: dict[str, Any]) -> None:
    print(
        f"\n{tree}: maximum resident set {run['peak_kb']:,} KB "
        f"({run['peak_kb'] / 2**20:.2f} GiB), {run['wall']:.1f} s wall, {run['cpu']:.1f} CPU s"
    )
    at, sampled = run["sampled_peak"]
    print(f"sampled peak {sampled:,.0f} MiB at {at:.1f} s")
    print(f"{'section':22} {'from s':>8} {'to s':>8} {'max RSS MiB':>12}")
    for name, first, last, high in run["sections"]:
        print(f"{name:22} {first:8.1f} {last:8.1f} {high:12,.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", type=Path)
    parser.add_argument("--trees", type=Path, nargs="+", default=[ROOT / "src"])
    parser.add_argument("--no-summaries", action="store_true")
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--summaries", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(arguments.child, arguments.summaries == "True")
        return
    if arguments.store is None or not arguments.store.exists():
        parser.error("--store: a JSONL file or Parquet directory that exists is required")
    print(f"load average before: {os.getloadavg()}")
    for _ in range(arguments.repeats):
        for tree in arguments.trees:
            _print(tree, _run(tree.resolve(), arguments.store, not arguments.no_summaries))
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
