"""Sections from merged per-session summaries: decisions affected and the leaderboard
(ADR 0074); the reviewer profiles (ADR 0079); joint model, self-preference, style
mimicry (ADR 0077; equal to cold up to rounding, the largest relative difference is
printed); favouritism, reasoning-chain bias and anchoring (ADR 0078); the causal checks
and the header's counts with the dense-table gate (ADR 0085); the fingerprint history and
the council's reliability (ADR 0086; its Poisson bootstrap from merged sums, ADR 0089); the
position section (ADR 0088).

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
  store, in a child process (each section that tree has).
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
    from llm_council.bias_audit.report.analyses.anchoring import AnchoringSection
    from llm_council.bias_audit.report.analyses.causal_checks_summary import CausalChecksSection
    from llm_council.bias_audit.report.analyses.decisions import DECISIONS
    from llm_council.bias_audit.report.analyses.favouritism import FavouritismSection
    from llm_council.bias_audit.report.analyses.fingerprints_summary import FINGERPRINTS
    from llm_council.bias_audit.report.analyses.joint_summary import JOINT_MODEL
    from llm_council.bias_audit.report.analyses.leaderboard import LeaderboardSection
    from llm_council.bias_audit.report.analyses.position_summary import PositionSection
    from llm_council.bias_audit.report.analyses.reasoning import ReasoningSection
    from llm_council.bias_audit.report.analyses.reliability_summary import ReliabilitySection
    from llm_council.bias_audit.report.analyses.report_counts import REPORT_COUNTS
    from llm_council.bias_audit.report.analyses.reviewers import REVIEWER_PROFILES
    from llm_council.bias_audit.report.analyses.self_preference import SELF_PREFERENCE
    from llm_council.bias_audit.report.analyses.style_mimicry_summary import StyleMimicrySection

    return {
        "decisions": DECISIONS,
        "leaderboard": LeaderboardSection(n_resamples=n_resamples, seed=0),
        "favouritism": FavouritismSection(0.05),
        "reasoning": ReasoningSection(0.05),
        "anchoring": AnchoringSection(0.05),  # finished with no level-fixed reviewer
        "joint model": JOINT_MODEL,  # ADR 0077
        "self-preference": SELF_PREFERENCE,  # ADR 0077
        "style mimicry": StyleMimicrySection(0.05),  # ADR 0077
        "reviewer_profiles": REVIEWER_PROFILES,  # ADR 0079
        "causal checks": CausalChecksSection(seed=0),  # ADR 0085
        "report counts": REPORT_COUNTS,  # ADR 0085: the header's counts, the dense gate
        "fingerprints": FINGERPRINTS,  # ADR 0086 (None on a store without fingerprints)
        "reliability": ReliabilitySection(n_resamples=n_resamples, seed=0),  # ADR 0086
        "position": PositionSection(0.05),  # ADR 0088
    }


def _dependent_inputs(whole: Any) -> dict[str, dict[str, Any]]:
    """The inputs build.py gives the dependent sections, from the whole store (untimed)."""
    from llm_council.bias_audit.report.analyses.joint import fit_joint_model
    from llm_council.bias_audit.report.analyses.reviewers import (
        leniency_fixed_by_the_scale,
        reviewer_profiles,
    )
    from llm_council.bias_audit.report.load.tables import rank_point_reviewers

    rank = rank_point_reviewers(whole)
    forced = leniency_fixed_by_the_scale(whole, rank)
    profiles = reviewer_profiles(whole, forced_choice=forced, rank_reviewers=rank)
    reference = [p.reviewer for p in profiles if p.in_leniency_reference]
    joint = fit_joint_model(whole, reference, forced_choice=forced)
    return {
        "joint model": {"reference": reference, "forced_choice": forced},
        "self-preference": {
            "joint_effects": joint.model.effects if joint else [],
            "n_joint_sessions": joint.model.n_sessions if joint else 0,
        },
    }


def _rank_reviewers(connection: Any) -> Any:
    """The reviewers whose every review is rank points (the reliability's input)."""
    from llm_council.bias_audit.report.load.tables import rank_point_reviewers

    return rank_point_reviewers(connection)


def _needs_inputs(chosen: list[str] | None) -> bool:
    """Whether a chosen section is finished with the whole store's inputs (a joint fit)."""
    return chosen is None or bool({"joint model", "self-preference"} & set(chosen))


def _largest_relative_difference(a: Any, b: Any) -> float:
    """The largest |a - b| / max(|b|, 1e-300) over paired floats; inf where other than
    floats differ (the joint model's sums are equal up to rounding only, ADR 0077)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return math.inf
        return max((_largest_relative_difference(a[k], b[k]) for k in a), default=0.0)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            return math.inf
        pairs = zip(a, b, strict=True)
        return max((_largest_relative_difference(x, y) for x, y in pairs), default=0.0)
    if isinstance(a, float) and isinstance(b, float):
        if (math.isnan(a) and math.isnan(b)) or a == b:
            return 0.0
        return abs(a - b) / max(abs(b), 1e-300)
    return 0.0 if a == b else math.inf


def _measure_section(
    section: Any, whole: Any, saved_part: Any, new_part: Any, inputs: dict[str, Any]
) -> dict[str, Any]:
    summarize_s, cold_summary = _cpu(lambda: section.summarize(whole))
    finish_s, cold = _cpu(lambda: section.finish(cold_summary, **inputs))
    meta, arrays = section.to_payload(section.summarize(saved_part))
    read_s, saved = _cpu(lambda: section.from_payload(meta, arrays))
    new_s, new = _cpu(lambda: section.summarize(new_part))
    merge_s, merged = _cpu(lambda: section.merge(saved, new))
    merged_finish_s, incremental = _cpu(lambda: section.finish(merged, **inputs))
    cold_fields = asdict(cold) if hasattr(cold, "__dataclass_fields__") else cold
    incremental_fields = (
        asdict(incremental) if hasattr(incremental, "__dataclass_fields__") else incremental
    )
    if isinstance(cold_fields, list):
        cold_fields = [asdict(item) for item in cold_fields]
        incremental_fields = [asdict(item) for item in incremental_fields]
    return {
        "cold_summarize": summarize_s,
        "cold_finish": finish_s,
        "read_saved": read_s,
        "summarize_new": new_s,
        "merge": merge_s,
        "finish": merged_finish_s,
        "equal": _same(cold_fields, incremental_fields),
        "relative_difference": _largest_relative_difference(incremental_fields, cold_fields),
        "saved_arrays_mb": sum(a.nbytes for a in arrays.values()) / 1e6,
        "saved_file_mb": _file_bytes(arrays) / 1e6,
    }


def _file_bytes(arrays: dict[str, Any]) -> int:
    """The arrays' bytes in the summary file (strings dictionary-coded, integers 8 bytes)."""
    from llm_council.bias_audit.report.load.summary_payload import encode_arrays

    return len(encode_arrays(arrays)[1])


def measure(
    store: Path, share: float, n_resamples: int, chosen: list[str] | None = None
) -> list[dict[str, Any]]:
    """The cold and +new timings of the sections (module docstring)."""
    with tempfile.TemporaryDirectory() as scratch:
        saved_path, new_path = _split(store, share, Path(scratch))
        whole, saved_part, new_part = (_connection(p) for p in (store, saved_path, new_path))
        inputs = _dependent_inputs(whole) if _needs_inputs(chosen) else {}
        inputs["reliability"] = {"rank_reviewers": _rank_reviewers(whole)}
        return [
            {
                "section": name,
                **_measure_section(section, whole, saved_part, new_part, inputs.get(name, {})),
            }
            for name, section in _sections(n_resamples).items()
            if chosen is None or name in chosen
        ]


def old_child(store: str, n_resamples: int, chosen: list[str] | None = None) -> None:
    """The sections of the source tree on ``sys.path`` (from every record), CPU seconds."""
    from llm_council.bias_audit.report.analyses import reviewers
    from llm_council.bias_audit.report.analyses.anchoring import anchoring_by_reviewer
    from llm_council.bias_audit.report.analyses.decisions import decisions_affected
    from llm_council.bias_audit.report.analyses.favouritism import favouritism
    from llm_council.bias_audit.report.analyses.fingerprints import fingerprint_history
    from llm_council.bias_audit.report.analyses.leaderboard import build_leaderboard
    from llm_council.bias_audit.report.analyses.position import position_bias
    from llm_council.bias_audit.report.analyses.reasoning import reasoning_by_reviewer
    from llm_council.bias_audit.report.load.tables import rank_point_reviewers

    try:  # before ADR 0089
        from llm_council.bias_audit.report.analyses.reliability import council_reliability
    except ImportError:  # since: the cold section in one step
        from llm_council.bias_audit.report.analyses.reliability_summary import (
            council_reliability,
        )

    def profiles() -> object:  # the calls the report made before ADR 0079
        ranks = rank_point_reviewers(connection)
        forced = reviewers.leniency_fixed_by_the_scale(connection, ranks)
        reviewers.material_leniency(connection)
        return reviewers.reviewer_profiles(connection, forced_choice=forced, rank_reviewers=ranks)

    connection = _connection(Path(store))
    runs = {
        "reviewer_profiles": profiles,
        "decisions": lambda: decisions_affected(connection),
        "leaderboard": lambda: build_leaderboard(connection, n_resamples=n_resamples),
        "favouritism": lambda: favouritism(connection),
        "reasoning": lambda: reasoning_by_reviewer(connection),
        "anchoring": lambda: anchoring_by_reviewer(connection),
        "fingerprints": lambda: fingerprint_history(connection),
        "reliability": lambda: council_reliability(
            connection, _rank_reviewers(connection), n_resamples=n_resamples, seed=0
        ),
        "position": lambda: position_bias(connection, 0.05),  # ADR 0088
    }
    timings = {name: _cpu(run)[0] for name, run in runs.items() if chosen is None or name in chosen}
    inputs = _dependent_inputs(connection) if _needs_inputs(chosen) else {}
    from llm_council.bias_audit.report.analyses import joint

    if chosen is None or "joint model" in chosen:
        timings["joint model"] = _cpu(
            lambda: joint.fit_joint_model(connection, **_old_joint(inputs))
        )[0]
    from llm_council.bias_audit.report.analyses.style_mimicry import style_mimicry

    if chosen is None or "style mimicry" in chosen:
        timings["style mimicry"] = _cpu(lambda: style_mimicry(connection, 0.05))[0]
    self_preferences = getattr(reviewers, "self_preferences", None)  # moved by ADR 0077
    if self_preferences is not None and (chosen is None or "self-preference" in chosen):
        timings["self-preference"] = _cpu(
            lambda: self_preferences(
                connection,
                inputs["self-preference"]["joint_effects"],
                inputs["self-preference"]["n_joint_sessions"],
            )
        )[0]
    timings.update(_old_checks_and_counts(connection, chosen))
    print(json.dumps(timings))


def _old_checks_and_counts(connection: Any, chosen: list[str] | None) -> dict[str, float]:
    """The causal checks and the header's counts as the report computed them before ADR
    0085 (every record; the pair-level section function, where that tree has it)."""
    from llm_council.bias_audit.report.analyses import causal_checks

    timings = {}
    pair_level = getattr(causal_checks, "causal_checks", None)
    if pair_level is not None and (chosen is None or "causal checks" in chosen):
        timings["causal checks"] = _cpu(lambda: pair_level(connection))[0]
    if chosen is None or "report counts" in chosen:
        from llm_council.bias_audit.report.analyses.families import dense_table_cells

        def counts() -> object:
            header = connection.execute(
                "SELECT (SELECT count(*) FROM reviewers), (SELECT count(*) FROM models)"
            ).fetchone()
            return header, dense_table_cells(connection)

        timings["report counts"] = _cpu(counts)[0]
    return timings


def _old_joint(inputs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    joint = inputs["joint model"]
    return {"leniency_reference": joint["reference"], "forced_choice": joint["forced_choice"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a JSONL store")
    parser.add_argument("--new-share", type=float, default=0.01)
    parser.add_argument("--resamples", type=int, default=200)
    parser.add_argument("--old-src", help="a source tree of the sections before ADRs 0074/0078")
    parser.add_argument(
        "--sections", help="comma-separated sections to measure (default: all of them)"
    )
    parser.add_argument("--old-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    chosen = args.sections.split(",") if args.sections else None
    if args.old_child:
        old_child(args.old_child, args.resamples, chosen)
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
                *(["--sections", args.sections] if args.sections else []),
            ],
            env={**os.environ, "PYTHONPATH": args.old_src},
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        old = json.loads(out.strip().splitlines()[-1])
    rows = measure(Path(args.store), args.new_share, args.resamples, chosen)
    print(f"store {args.store}, new share {args.new_share}, load average {load}")
    print(
        "| section | old full (CPU s) | cold: summarize + finish | +new: read saved + "
        "summarize new + merge + finish | equal to cold | largest relative difference | "
        "saved arrays (MB, in memory / in the file) |"
    )
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        incremental = row["read_saved"] + row["summarize_new"] + row["merge"] + row["finish"]
        print(
            f"| {row['section']} | {old.get(row['section'], float('nan')):.2f} | "
            f"{row['cold_summarize']:.2f} + {row['cold_finish']:.2f} | "
            f"{row['read_saved']:.3f} + {row['summarize_new']:.3f} + {row['merge']:.3f} + "
            f"{row['finish']:.3f} = {incremental:.2f} | {row['equal']} | "
            f"{row['relative_difference']:.1e} | {row['saved_arrays_mb']:.1f} / "
            f"{row['saved_file_mb']:.1f} |"
        )
    # the joint model and self-preference: equal up to rounding (ADR 0077), the rest exactly
    rounded = ("joint model", "self-preference", "style mimicry")
    if not all(
        row["equal"] or (row["section"] in rounded and row["relative_difference"] <= 1e-8)
        for row in rows
    ):
        raise SystemExit("an incremental result differs from the cold one")


if __name__ == "__main__":
    main()
