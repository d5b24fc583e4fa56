"""Decisions affected, the leaderboard (ADR 0074) and the reviewer profiles (ADR 0079) from
merged per-session summaries.

    .venv/bin/python benchmarks/report_incremental_sections.py --store /tmp/store.jsonl
    .venv/bin/python benchmarks/report_incremental_sections.py --store /tmp/store.jsonl \
        --old-src /tmp/old/src          # + the sections before ADR 0074, from that tree

The store's last ``--new-share`` of sessions (in file order: the ones appended last) is
the "new" part, the rest the "saved" part. Each is loaded into its own DuckDB connection
(``load_store`` + ``create_analysis_tables``, not timed). Per section, CPU seconds of this
process (DuckDB's threads included) for:

- **cold**: ``summarize`` over the whole store, then ``finish``;
- **+new**: ``summarize`` of the new sessions, ``merge`` with the saved part's summary
  (summarized beforehand, untimed; read back through ``to_payload``/``from_payload``,
  timed) and ``finish``; the result must equal the cold one (checked, bit for bit);
- **old**: with ``--old-src``, the section function of that source tree on the whole
  store, in a child process (the profiles: ``rank_point_reviewers``,
  ``leniency_fixed_by_the_scale``, ``reviewer_profiles`` and ``material_leniency``, the
  calls the report made before ADR 0079).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

_SECTIONS = ("decisions", "leaderboard", "reviewer_profiles")


def _split(store: Path, share: float, directory: Path) -> tuple[Path, Path]:
    """The store's lines as (saved, new) files: the last ``share`` of sessions is new."""
    order: dict[str, int] = {}
    with store.open("rb") as lines:
        for line in lines:
            session = json.loads(line)["session_id"]
            order.setdefault(session, len(order))
    n_new = max(1, round(len(order) * share))
    first_new = len(order) - n_new
    saved, new = directory / "saved.jsonl", directory / "new.jsonl"
    with store.open("rb") as lines, saved.open("wb") as old_part, new.open("wb") as new_part:
        for line in lines:
            session = json.loads(line)["session_id"]
            (new_part if order[session] >= first_new else old_part).write(line)
    return saved, new


def _connection(path: Path) -> Any:
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.tables import create_analysis_tables

    connection = load_store(str(path)).connection
    create_analysis_tables(connection)
    return connection


def _cpu(run: Any) -> tuple[float, Any]:
    started = time.process_time()
    result = run()
    return time.process_time() - started, result


def _same(a: Any, b: Any) -> bool:
    """Equal as dataclasses, NaN equal to NaN, floats bit for bit."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _sections(n_resamples: int) -> dict[str, Any]:
    from llm_council.bias_audit.report.analyses.decisions import DECISIONS
    from llm_council.bias_audit.report.analyses.leaderboard import LeaderboardSection
    from llm_council.bias_audit.report.analyses.reviewers import REVIEWER_PROFILES

    return {
        "decisions": DECISIONS,
        "leaderboard": LeaderboardSection(n_resamples=n_resamples, seed=0),
        "reviewer_profiles": REVIEWER_PROFILES,
    }


def _measure_section(section: Any, whole: Any, saved_part: Any, new_part: Any) -> dict[str, Any]:
    summarize_s, cold_summary = _cpu(lambda: section.summarize(whole))
    finish_s, cold = _cpu(lambda: section.finish(cold_summary))
    meta, arrays = section.to_payload(section.summarize(saved_part))
    read_s, saved = _cpu(lambda: section.from_payload(meta, arrays))
    new_s, new = _cpu(lambda: section.summarize(new_part))
    merge_s, merged = _cpu(lambda: section.merge(saved, new))
    merged_finish_s, incremental = _cpu(lambda: section.finish(merged))
    return {
        "cold_summarize": summarize_s,
        "cold_finish": finish_s,
        "read_saved": read_s,
        "summarize_new": new_s,
        "merge": merge_s,
        "finish": merged_finish_s,
        "equal": _same(asdict(cold), asdict(incremental)),
        "saved_arrays_mb": sum(a.nbytes for a in arrays.values()) / 1e6,
    }


def measure(
    store: Path, share: float, n_resamples: int, names: tuple[str, ...] = _SECTIONS
) -> list[dict[str, Any]]:
    """The cold and +new timings of the sections ``names`` (module docstring)."""
    with tempfile.TemporaryDirectory() as scratch:
        saved_path, new_path = _split(store, share, Path(scratch))
        whole, saved_part, new_part = (_connection(p) for p in (store, saved_path, new_path))
        return [
            {"section": name, **_measure_section(section, whole, saved_part, new_part)}
            for name, section in _sections(n_resamples).items()
            if name in names
        ]


def old_child(store: str, n_resamples: int) -> None:
    """The sections of the source tree on ``sys.path`` (before ADR 0074), CPU seconds."""
    from llm_council.bias_audit.report.analyses import reviewers
    from llm_council.bias_audit.report.analyses.decisions import decisions_affected
    from llm_council.bias_audit.report.analyses.leaderboard import build_leaderboard
    from llm_council.bias_audit.report.load.tables import rank_point_reviewers

    def profiles() -> object:
        ranks = rank_point_reviewers(connection)
        forced = reviewers.leniency_fixed_by_the_scale(connection, ranks)
        reviewers.material_leniency(connection)
        return reviewers.reviewer_profiles(connection, forced_choice=forced, rank_reviewers=ranks)

    connection = _connection(Path(store))
    timings = {
        "decisions": _cpu(lambda: decisions_affected(connection))[0],
        "leaderboard": _cpu(lambda: build_leaderboard(connection, n_resamples=n_resamples))[0],
        "reviewer_profiles": _cpu(profiles)[0],
    }
    print(json.dumps(timings))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a JSONL store")
    parser.add_argument("--new-share", type=float, default=0.01)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--old-src", help="a source tree of the sections before ADR 0074")
    parser.add_argument("--old-child", help=argparse.SUPPRESS)
    parser.add_argument("--sections", default=",".join(_SECTIONS), help="comma-separated")
    args = parser.parse_args()
    if args.old_child:
        old_child(args.old_child, args.resamples)
        return
    if not args.store:
        parser.error("--store is required")
    load = " ".join(f"{value:.1f}" for value in os.getloadavg())
    old: dict[str, float] = {}
    if args.old_src:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                "--old-child",
                args.store,
                "--resamples",
                str(args.resamples),
            ],
            env={**os.environ, "PYTHONPATH": args.old_src},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        old = json.loads(out.strip().splitlines()[-1])
    rows = measure(
        Path(args.store), args.new_share, args.resamples, tuple(args.sections.split(","))
    )
    print(f"store {args.store}, new share {args.new_share}, load average {load}")
    print(
        "| section | old full (CPU s) | cold: summarize + finish | +new: read saved + "
        "summarize new + merge + finish | equal to cold | saved arrays (MB) |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        incremental = row["read_saved"] + row["summarize_new"] + row["merge"] + row["finish"]
        print(
            f"| {row['section']} | {old.get(row['section'], float('nan')):.2f} | "
            f"{row['cold_summarize']:.2f} + {row['cold_finish']:.2f} | "
            f"{row['read_saved']:.3f} + {row['summarize_new']:.3f} + {row['merge']:.3f} + "
            f"{row['finish']:.3f} = {incremental:.2f} | {row['equal']} | "
            f"{row['saved_arrays_mb']:.1f} |"
        )
    if not all(row["equal"] for row in rows):
        raise SystemExit("an incremental result differs from the cold one")


if __name__ == "__main__":
    main()
