"""The tail load (ADR 0081) against today's full load: +1% and +10% records, JSONL and Parquet.

    .venv/bin/python benchmarks/report_tail_load.py                    # 100,000 records
    .venv/bin/python benchmarks/report_tail_load.py --records 1000000  # the issue's size

A store of ``--records`` records (the simulated default council) is loaded once with the
gate's steps (full load, next resume point) and its summary file written with the resume
point (no section summaries: the load reads none). Then 1% or 10% more sessions are
appended (JSONL) or compacted into the same Parquet directory, and, each in a child
process (CPU of all threads from ``os.wait4``, and per step from ``time.process_time``; the
peak RSS printed is not the child's own: Linux keeps the forked parent's high-water mark,
here the benchmark's copy of the store's lines, across ``exec``):

- **tail**: ``load_tail`` (prefix hash, tail parse, session rules on the tail), then the
  analysis tables and the per-session digests on the tail's sessions, and the next
  resume point (the window parsed again, the hash extended);
- **full**: today's ``load_store`` of the grown store, the analysis tables and the digests
  of every session (what a re-run pays before its sections run);
- **floor**: the DuckDB floor's scan of the new records alone (``report_scale.py``);
- the prefix's SHA-256 alone.

The tail load's header must equal the full load's (checked; the run stops otherwise).
The issue's target for a +1% re-run: <= 2x the floor's scan of the new records + 0.5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from report_incremental import RECORDS_PER_SESSION, print_growth_rows  # noqa: E402
from report_scale import PYTHON, _measure  # noqa: E402

OPTIONS = {"significance_level": 0.05, "seed": 0, "n_resamples": 200}


def _timed(timings: dict[str, float], name: str, run: Any) -> Any:
    cpu = time.process_time()
    result = run()
    timings[name] = time.process_time() - cpu
    return result


def prepare_child(store: str) -> None:
    """Load every record keeping the extent and save the resume point (no sections)."""
    import numpy as np

    from llm_council.bias_audit.report.analyses.tail_plan import checked_resume
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.next_resume import next_resume_point
    from llm_council.bias_audit.report.load.session_summaries import (
        SessionSummaries,
        write_summaries,
    )
    from llm_council.bias_audit.report.load.store_coverage import store_coverage
    from llm_council.bias_audit.report.load.tail_load import tail_options

    timings: dict[str, float] = {}
    loaded = _timed(timings, "full load", lambda: load_store(store, keep_extent=True))
    connection = loaded.connection
    following = _timed(
        timings, "next resume point", lambda: next_resume_point(connection, store, loaded.extent)
    )
    if following is None:
        raise SystemExit("no resume point could be placed")
    rows = connection.execute(
        "SELECT session_id, count(*) FROM records GROUP BY session_id ORDER BY session_id"
    ).fetchall()
    ids = np.asarray([str(row[0]) for row in rows], dtype=str)
    counts = np.asarray([int(row[1]) for row in rows], dtype=np.uint64)
    folded = ~np.isin(ids, following.held_session_ids)
    records = np.column_stack([counts[folded], np.zeros(int(folded.sum()), np.uint64)])
    point = checked_resume(following, ids[folded], records)
    if point is None:
        raise SystemExit("the resume point's counts differ from the folded sessions'")
    settings = tail_options(**OPTIONS)  # type: ignore[arg-type]
    summaries = SessionSummaries(
        store_coverage(store) or {}, settings, ids[folded], records, {}, point
    )
    if not write_summaries(store, summaries):
        raise SystemExit("the summary file was not written (no sealing key?)")
    print(json.dumps({"timings": timings, "offset": point.offset, "held": int((~folded).sum())}))


def _after_load(connection: Any, timings: dict[str, float], prefix: str) -> None:
    from llm_council.bias_audit.report.analyses.incremental_plan import current_sessions
    from llm_council.bias_audit.report.load.tables import create_analysis_tables

    _timed(timings, f"{prefix}: analysis tables", lambda: create_analysis_tables(connection))
    _timed(timings, f"{prefix}: per-session digests", lambda: current_sessions(connection))


def tail_child(store: str) -> None:
    """The tail load, then what a re-run does before its sections, on the tail."""
    from llm_council.bias_audit.report.load.tail_load import load_tail, tail_options

    timings: dict[str, float] = {}
    loaded = _timed(timings, "tail: load", lambda: load_tail(store, tail_options(**OPTIONS)))  # type: ignore[arg-type]
    if loaded is None:
        raise SystemExit("the tail load refused")
    _after_load(loaded.connection, timings, "tail")
    from llm_council.bias_audit.report.load.next_resume import next_resume_point

    following = _timed(
        timings,
        "tail: next resume point",
        lambda: next_resume_point(loaded.connection, store, loaded.extent),
    )
    if following is None:
        raise SystemExit("no next resume point after the tail load")
    header = {
        name: getattr(loaded, name)
        for name in ("n_lines", "n_records", "n_sessions", "n_unreadable", "warnings")
    }
    tail_records = loaded.connection.execute("SELECT count(*) FROM records").fetchone()
    print(json.dumps({"timings": timings, "header": header, "tail_records": tail_records[0]}))


def full_child(store: str) -> None:
    """Today's load of every record, then the tables and digests of every session."""
    from llm_council.bias_audit.report.load.loading import load_store

    timings: dict[str, float] = {}
    loaded = _timed(timings, "full: load", lambda: load_store(store))
    _after_load(loaded.connection, timings, "full")
    header = {
        name: getattr(loaded, name)
        for name in ("n_lines", "n_records", "n_sessions", "n_unreadable", "warnings")
    }
    print(json.dumps({"timings": timings, "header": header}))


def hash_child(store: str, offset: str) -> None:
    """The SHA-256 of the store's first ``offset`` bytes, alone."""
    from llm_council.bias_audit.report.load.source_identity import file_sha256

    cpu = time.process_time()
    file_sha256(Path(store), int(offset))
    print(json.dumps({"cpu": time.process_time() - cpu}))


def _child(*arguments: str) -> tuple[float, float, float, dict[str, Any]]:
    wall, cpu, peak, out = _measure([PYTHON, str(Path(__file__).resolve()), *arguments])
    return wall, cpu, peak, json.loads(out.strip().splitlines()[-1])


def _floor(kind: str, new_source: Path) -> tuple[float, float]:
    this_scale = str(Path(__file__).resolve().parent / "report_scale.py")
    wall, cpu, _peak, _ = _measure([PYTHON, this_scale, "--floor-child", kind, str(new_source)])
    return wall, cpu


def _scenario(
    kind: str, scratch: Path, lines: list[bytes], base: int, grown: int, label: str
) -> list[str]:
    from llm_council.bias_audit.report.load.parquet_compaction import compact_store

    directory = scratch / f"{kind}-{label}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir()
    jsonl, new_lines = directory / "store.jsonl", directory / "new.jsonl"
    jsonl.write_bytes(b"".join(lines[:base]))
    added = b"".join(lines[base:grown])
    if kind == "parquet":
        # The simulator puts nearly every session on one day, so the new sessions would
        # make bias-compact rewrite that day's file, which the tail load refuses (a cold
        # run; printed first). Measured: the new sessions on a later day, a new file.
        added = re.sub(rb'"timestamp":"\d{4}-\d{2}-\d{2}', b'"timestamp":"2026-03-01', added)
    new_lines.write_bytes(added)
    source, floor_source = jsonl, new_lines
    if kind == "parquet":
        source = directory / "parquet"
        compact_store(jsonl, source)
    prepared = _child("--prepare-child", str(source))
    with jsonl.open("ab") as stream:
        stream.write(new_lines.read_bytes())
    if kind == "parquet":
        compact_store(jsonl, source)
        floor_source = directory / "new-parquet"
        compact_store(new_lines, floor_source)
    tail = _child("--tail-child", str(source))
    full = _child("--full-child", str(source))
    if tail[3]["header"] != full[3]["header"]:
        raise SystemExit(f"the tail load's header differs: {tail[3]['header']} {full[3]['header']}")
    floor = _floor(kind, floor_source)
    hashed = (
        _child("--hash-child", str(jsonl), str(prepared[3]["offset"])) if kind == "jsonl" else None
    )
    target = 2 * floor[0] + 0.5
    steps = {**tail[3]["timings"], **full[3]["timings"]}
    return [
        f"| {kind} | {label} | {grown - base:,} | {tail[3]['tail_records']:,} | "
        f"{tail[0]:.2f} / {tail[1]:.2f} ({tail[2]:.0f} MB) | "
        f"{full[0]:.2f} / {full[1]:.2f} ({full[2]:.0f} MB) | {floor[0]:.2f} / {floor[1]:.2f} | "
        f"{target:.2f} | " + (f"{hashed[3]['cpu']:.2f}" if hashed else "n/a") + " |",
        "|   steps, CPU s: "
        + "; ".join(f"{name} {value:.2f}" for name, value in steps.items())
        + "; headers equal; prepare (cold, gate open): "
        + "; ".join(f"{n} {v:.2f}" for n, v in prepared[3]["timings"].items())
        + " |",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--formats", default="jsonl,parquet")
    parser.add_argument("--growths", default="1,10", help="percent growths to measure")
    for child in ("prepare", "tail", "full"):
        parser.add_argument(f"--{child}-child", help=argparse.SUPPRESS)
    parser.add_argument("--hash-child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    children = {
        "prepare_child": prepare_child,
        "tail_child": tail_child,
        "full_child": full_child,
    }
    for name, run in children.items():
        if getattr(args, name):
            run(getattr(args, name))
            return
    if args.hash_child:
        hash_child(*args.hash_child)
        return
    # a key file in a private directory (never a predictable name in the shared temp dir)
    key_dir = tempfile.mkdtemp(prefix="tail-load-key-")
    os.environ.setdefault("LLM_COUNCIL_SUMMARY_KEY_FILE", os.path.join(key_dir, "summary.key"))
    n_sessions = args.records // RECORDS_PER_SESSION
    print(
        f"# {args.records:,} records, load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores"
    )
    print("| format | growth | new records | records loaded by the tail | tail child: wall / CPU s "
          "(peak) | full child: wall / CPU s (peak) | floor on new "
          "records wall / CPU s | target s | prefix SHA-256 CPU s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    print_growth_rows(n_sessions, args.formats, args.growths, _scenario)
    print(f"# load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
