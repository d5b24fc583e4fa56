"""The whole report's +1% re-run with the tail load on and off, side by side (ADR 0081).

    nice .venv/bin/python benchmarks/report_tail_rerun.py \\
        --jsonl /tmp/r6m/s1m.jsonl --more /tmp/r6m/more.jsonl --parquet /tmp/r6m/pq1m \\
        --scratch /tmp/tail8/bench

The inputs are only read: the JSONL store and the Parquet directory are copied into
``--scratch``. Per format: a first ``build_report`` with the tail gate open (a cold run:
every record, the summary file written with its resume point); then ``--new-records``
lines of ``--more`` (whole sessions of new ids, on days the store does not have) are
appended (JSONL) or compacted into new day files (Parquet); then, each in a child process
from the same summary file (its bytes restored between runs, since every run rewrites it):

- **tail on**: ``build_report`` with ``COMPUTED_FROM_EVERY_RECORD`` emptied, as the lead
  will open the gate (position is not incremental yet, so with the gate open it is
  computed over the tail alone: its cost here is the tail's, not a merge's);
- **tail off**: today's ``build_report`` (every record loaded; the sections merged);
- **profile**: the tail-on run again under cProfile with the sections on one thread (at
  1M records they run on two workers, which the profiler does not see), its top 15 by
  cumulative time.

Each child's wall and CPU seconds (user + system of all its threads, ``os.wait4``), the
load average before and after, whether the tail load ran, and which top-level report
fields differ between tail on and off beyond the joint model's rounding (1e-8 relative:
its sums in another order, ADR 0077); position and what is decided from it are expected
to; nothing else may.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from report_scale import PYTHON, _measure  # noqa: E402

from golden_compare import golden_differences  # noqa: E402

#: how far two reports' numbers may differ: the joint model's sums in another order (ADR 0077)
ROUNDING = 1e-8

#: report fields that position feeds on this branch (its section, and the findings
#: decided over every hypothesis together)
FROM_POSITION = ("position", "hypotheses", "findings", "error_rate_method")


def report_child(store: str, gate: str, out: str, profile: str) -> None:
    """One ``build_report`` of ``store`` (gate ``on``: the tuple emptied); its report JSON
    to ``out``; with ``profile`` a path, under cProfile (top 15 cumulative to that path)."""
    import structlog

    from llm_council.bias_audit.report import build

    if gate == "on":
        build.COMPUTED_FROM_EVERY_RECORD = ()
    if profile:  # one thread runs every section, so the profile sees them all
        build.PARALLEL_MAX_RECORDS = 0
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as logs:
        if profile:
            profiler = cProfile.Profile()
            report = profiler.runcall(build.build_report, store)
            text = io.StringIO()
            pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats(15)
            Path(profile).write_text(text.getvalue(), encoding="utf-8")
        else:
            report = build.build_report(store)
    data = report.to_dict()
    data.pop("generated_at")
    Path(out).write_text(json.dumps(data, sort_keys=True, allow_nan=True), encoding="utf-8")
    events = [entry["event"] for entry in logs]
    print(
        json.dumps(
            {
                "tail": "report_tail_loaded" in events,
                "rebuilt": [str(e.get("reason")) for e in logs if e["event"].endswith("rebuilt")],
                "n_records": report.n_records,
            }
        )
    )


def _child(*arguments: str) -> tuple[float, float, dict[str, Any]]:
    wall, cpu, _peak, out = _measure([PYTHON, str(Path(__file__).resolve()), *arguments])
    return wall, cpu, json.loads(out.strip().splitlines()[-1])


def _differing_fields(first: Path, second: Path) -> list[str]:
    """The top-level fields whose numbers differ beyond :data:`ROUNDING`."""
    one = json.loads(first.read_text(encoding="utf-8"))
    two = json.loads(second.read_text(encoding="utf-8"))
    return sorted(
        key
        for key in one.keys() | two.keys()
        if golden_differences(one.get(key), two.get(key), key, ROUNDING)
    )


def _scenario(kind: str, source: Path, more: Path, n_new: int, scratch: Path) -> list[str]:
    from llm_council.bias_audit.report.load.parquet_compaction import compact_store
    from llm_council.bias_audit.report.load.session_summaries import summaries_path

    directory = scratch / kind
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    store = directory / ("store.jsonl" if kind == "jsonl" else "parquet")
    if kind == "jsonl":
        shutil.copyfile(source, store)
    else:
        shutil.copytree(source, store)
    new = directory / "new.jsonl"
    with more.open("rb") as lines, new.open("wb") as out:
        for _ in range(n_new):
            out.write(lines.readline())
    cold = _child("--report-child", str(store), "on", str(directory / "cold.json"), "")
    if kind == "jsonl":
        with store.open("ab") as stream:
            stream.write(new.read_bytes())
    else:
        compact_store(new, store)
    saved = summaries_path(store).read_bytes()
    (directory / "summaries-before-the-rerun").write_bytes(saved)  # to rerun a step by hand
    rows = []
    for gate in ("on", "off"):
        summaries_path(store).write_bytes(saved)
        run = _child("--report-child", str(store), gate, str(directory / f"{gate}.json"), "")
        rows.append((gate, run))
    summaries_path(store).write_bytes(saved)
    profile = directory / "profile.txt"
    _child("--report-child", str(store), "on", str(directory / "profiled.json"), str(profile))
    differing = _differing_fields(directory / "on.json", directory / "off.json")
    lines = [
        f"| {kind} | cold, gate open (first run) | {cold[0]:.2f} | {cold[1]:.2f} | "
        f"{cold[2]['tail']} | {cold[2]['n_records']:,} |"
    ]
    for gate, (wall, cpu, out) in rows:
        lines.append(
            f"| {kind} | +{n_new:,} records, tail {gate} | {wall:.2f} | {cpu:.2f} | "
            f"{out['tail']} | {out['n_records']:,} |"
        )
    unexpected = [field for field in differing if field not in FROM_POSITION]
    lines.append(f"# {kind}: fields differing tail on/off: {differing}; unexpected: {unexpected}")
    lines.append(f"# {kind}: profile of the tail-on run, top 15 cumulative:")
    lines.extend("#   " + line for line in profile.read_text(encoding="utf-8").splitlines())
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jsonl", type=Path)
    parser.add_argument("--parquet", type=Path)
    parser.add_argument("--more", type=Path)
    parser.add_argument("--new-records", type=int, default=10_000)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/report-tail-rerun"))
    parser.add_argument("--report-child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.report_child:
        report_child(*args.report_child)
        return
    if args.more is None:
        raise SystemExit("--more (a JSONL file of further sessions) is required")
    key_dir = tempfile.mkdtemp(prefix="tail-rerun-key-")
    os.environ.setdefault("LLM_COUNCIL_SUMMARY_KEY_FILE", os.path.join(key_dir, "summary.key"))
    print(f"# load average before: {os.getloadavg()}, {os.cpu_count()} cores")
    print("| format | run | wall s | CPU s | tail load ran | records |")
    print("|---|---|---|---|---|---|")
    for kind, source in (("jsonl", args.jsonl), ("parquet", args.parquet)):
        if source is not None:
            for line in _scenario(kind, source, args.more, args.new_records, args.scratch):
                print(line, flush=True)
    print(f"# load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
