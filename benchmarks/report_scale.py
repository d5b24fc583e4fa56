"""Scale benchmark of ``llm-council bias-report``: JSONL and Parquet against the DuckDB floor.

    .venv/bin/python benchmarks/report_scale.py                  # 1,000,000 records
    .venv/bin/python benchmarks/report_scale.py --records 200000 --keep /tmp/store.jsonl
    .venv/bin/python benchmarks/report_scale.py --check          # + pure-Python cross-check
    .venv/bin/python benchmarks/report_scale.py --records 10000000 --repeats 1 \
        --keep /tmp/store10m.jsonl --formats parquet                # 10M: the memory target
    .venv/bin/python benchmarks/report_scale.py --recuse --missing-score-rate 0.03
    .venv/bin/python benchmarks/report_scale.py --sections --keep /tmp/store.jsonl
        # where the time goes: each step of the report timed alone (ADR 0064)
        # reviewers skip their own answer and 3% of scores are missing: tables with holes

Every step runs in its own subprocess (wall time, CPU time of all its threads, and peak
resident memory from ``os.wait4``'s rusage, i.e. ``ru_maxrss`` of that child alone):

1. the generator writes the JSONL store (default council, 25 records per session; 20 with
   ``--recuse``, some unscored with ``--missing-score-rate``), and
   ``llm-council bias-compact`` copies it into Parquet day partitions;
2. for each format, the *DuckDB floor*: a bare ``python`` + ``duckdb`` process that scans
   the store and aggregates it per (session, reviewer), nothing else;
3. ``llm-council bias-report --format json`` on the same store (the real CLI: start-up,
   imports, loading, every analysis, 200 bootstrap resamples, rendering): the first run
   and the median of ``--repeats`` warm runs; the ratio to the floor is printed;
4. ``llm-council --help`` against ``python -c pass``.

Targets (issue 12): 1M records end to end <= 2.0 s as JSONL and <= 1.0 s as Parquet,
``--help`` <= 0.4 s, peak memory not growing with records beyond per-session aggregates
(10M records within 2 GB). The last lines compare each measurement with its target.
With ``--keep``, the Parquet copy is kept next to the JSONL file (``<keep>.parquet``) and
both are reused by later runs.
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
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
CLI = str(Path(PYTHON).with_name("llm-council"))
TARGET_HELP_SECONDS = 0.4
TARGET_SECONDS = {"jsonl": 2.0, "parquet": 1.0}  # end to end at 1M records
TARGET_PEAK_MB = 2048.0  # at 10M records


def _measure(command: list[str]) -> tuple[float, float, float, str]:
    """Run ``command``; return (wall s, CPU s, peak RSS in MB of that child, stdout).

    CPU time (user + system, all threads) is printed too because this machine's 2 cores are
    shared: under load the wall time grows while the CPU time stays put.
    """
    with tempfile.TemporaryFile() as out:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        stderr = process.stderr.read().decode() if process.stderr else ""
        if process.returncode != 0:
            raise SystemExit(f"{command[0]} failed ({process.returncode}): {stderr}")
        out.seek(0)
        cpu = usage.ru_utime + usage.ru_stime
        return wall, cpu, usage.ru_maxrss / 1024.0, out.read().decode()


def baseline_pass(store: str) -> dict[str, object]:
    """The same core aggregates, line by line in pure Python (no numpy, no DuckDB)."""
    started = time.perf_counter()
    reviewer_sum: dict[str, float] = defaultdict(float)
    reviewer_n: dict[str, int] = defaultdict(int)
    answer_sum: dict[tuple[str, str], float] = defaultdict(float)
    answer_n: dict[tuple[str, str], int] = defaultdict(int)
    scored: list[tuple[str, str, str, int, int, float, bool]] = []
    with open(store, encoding="utf-8") as handle:
        for line in handle:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("schema_version") not in (1, 2) or record.get("score_value") is None:
                continue
            session, reviewer, model = (
                record["session_id"],
                record["reviewer_id"],
                record["model_id"],
            )
            score, is_self = float(record["score_value"]), bool(record["is_self_review"])
            reviewer_sum[reviewer] += score
            reviewer_n[reviewer] += 1
            if not is_self:
                answer_sum[session, model] += score
                answer_n[session, model] += 1
            scored.append(
                (
                    session,
                    reviewer,
                    model,
                    record["position"],
                    record["response_length_words"],
                    score,
                    is_self,
                )
            )
    # paired deviations -> per (reviewer, session) means -> mean over sessions
    deviation_sum: dict[tuple[str, str], float] = defaultdict(float)
    deviation_n: dict[tuple[str, str], int] = defaultdict(int)
    slot_session: dict[tuple[str, int], list[float]] = defaultdict(list)
    centred_input: dict[tuple[str, str], list[tuple[float, float, str]]] = defaultdict(list)
    for session, reviewer, model, position, words, score, is_self in scored:
        # the report's slot means take every score in the slot, self-reviews included (one
        # council size here, so its modal-size filter keeps every session)
        slot_session[session, position].append(score)
        if is_self:
            continue
        n = answer_n[session, model]
        if n >= 2:
            deviation_sum[reviewer, session] += score - (answer_sum[session, model] - score) / (
                n - 1
            )
            deviation_n[reviewer, session] += 1
        centred_input[session, reviewer].append((math.log(max(words, 1)), score, model))
    leniency_values: dict[str, list[float]] = defaultdict(list)
    for (reviewer, _), total in deviation_sum.items():
        leniency_values[reviewer].append(total / deviation_n[reviewer, _])
    slot_means: dict[int, list[float]] = defaultdict(list)
    for (_, position), scores in slot_session.items():
        slot_means[position].append(sum(scores) / len(scores))
    # per-session correlation of ln(words) with the reviewer-centred score
    session_points: dict[str, list[tuple[float, float]]] = defaultdict(list)
    session_models: dict[str, set[str]] = defaultdict(set)
    for (session, _), points in centred_input.items():
        mean = sum(score for _, score, _ in points) / len(points)
        for log_words, score, model in points:
            session_points[session].append((log_words, score - mean))
            session_models[session].add(model)
    z_weighted, weights = 0.0, 0.0
    for session, points in session_points.items():
        if len(session_models[session]) < 3:
            continue
        n = len(points)
        mean_x = sum(x for x, _ in points) / n
        mean_y = sum(y for _, y in points) / n
        sxy = sum((x - mean_x) * (y - mean_y) for x, y in points)
        sxx = sum((x - mean_x) ** 2 for x, _ in points)
        syy = sum((y - mean_y) ** 2 for _, y in points)
        if sxx == 0 or syy == 0:
            continue
        r = max(min(sxy / math.sqrt(sxx * syy), 1 - 1e-12), -1 + 1e-12)
        weight = len(session_models[session])
        z_weighted += weight * math.atanh(r)
        weights += weight
    return {
        "seconds": time.perf_counter() - started,
        "mean_score": {r: reviewer_sum[r] / reviewer_n[r] for r in reviewer_sum},
        "leniency": {r: sum(v) / len(v) for r, v in leniency_values.items()},
        "slot_mean": {str(p): sum(v) / len(v) for p, v in slot_means.items()},
        "pooled_r": math.tanh(z_weighted / weights),
    }


def duckdb_core_pass(store: str) -> dict[str, object]:
    """The same core aggregates through the report's own DuckDB loading and queries."""
    from llm_council.bias_audit.report.analyses.length import pooled_length_bias
    from llm_council.bias_audit.report.analyses.position import position_bias
    from llm_council.bias_audit.report.analyses.reviewers import reviewer_profiles
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.tables import create_analysis_tables

    started = time.perf_counter()
    connection = load_store(store).connection
    create_analysis_tables(connection)
    profiles = reviewer_profiles(connection)
    position = position_bias(connection)
    length = pooled_length_bias(connection)
    assert position is not None and length is not None
    return {
        "seconds": time.perf_counter() - started,
        "mean_score": {p.reviewer: p.mean_score for p in profiles},
        "leniency": {p.reviewer: p.leniency.estimate for p in profiles},
        "slot_mean": {
            str(slot): mean.estimate
            for slot, mean in zip(position.positions, position.mean_score, strict=True)
        },
        "pooled_r": length.pooled.estimate,
    }


def _check_same(report: dict[str, object], baseline: dict[str, object]) -> None:
    """Fail loudly if the two passes disagree on any core aggregate."""
    profiles = {p["reviewer"]: p for p in report["profiles"]}  # type: ignore[index]
    for reviewer, mean in baseline["mean_score"].items():  # type: ignore[union-attr]
        assert math.isclose(profiles[reviewer]["mean_score"], mean, rel_tol=1e-9), reviewer
    # Leniency is not compared: the report's is the step-down robust estimate against a
    # reference set of reviewers (stats/reviewers/robust_leniency.py, tested there), not this pass's
    # plain mean paired deviation.
    position = report["position"]  # type: ignore[index]
    for slot, interval in zip(position["positions"], position["mean_score"], strict=True):
        assert math.isclose(interval["estimate"], baseline["slot_mean"][str(slot)], rel_tol=1e-9)  # type: ignore[index]
    pooled = report["length"]["pooled"]["estimate"]  # type: ignore[index]
    assert math.isclose(pooled, baseline["pooled_r"], rel_tol=1e-7), (pooled, baseline["pooled_r"])  # type: ignore[arg-type]


FLOOR_SQL = {
    # what DuckDB alone needs to scan the store and aggregate it per session and reviewer
    "jsonl": "read_json(?, format = 'newline_delimited', ignore_errors = true)",
    "parquet": "read_parquet(?)",
}


def floor_child(kind: str, store: str) -> None:
    """DuckDB alone: scan the store and aggregate per (session, reviewer); no report."""
    import duckdb

    source = store if kind == "jsonl" else f"{store}/*/*.parquet"
    rows = duckdb.execute(
        f"""SELECT count(*) FROM (
                SELECT session_id, reviewer_id, avg(score_value), count(*),
                       corr(score_value, ln(greatest(response_length_words, 1)))
                FROM {FLOOR_SQL[kind]} GROUP BY session_id, reviewer_id)""",
        [source],
    ).fetchone()
    print(json.dumps({"groups": rows[0] if rows else 0}))


def load_child(store: str) -> None:
    """The report's loading alone (imports excluded): the share of the report that is I/O."""
    from llm_council.bias_audit.report.load.loading import load_store

    started, cpu_started = time.perf_counter(), time.process_time()
    loaded = load_store(store)
    print(
        json.dumps(
            {
                "seconds": time.perf_counter() - started,
                "cpu": time.process_time() - cpu_started,
                "records": loaded.n_records,
            }
        )
    )


def sections_child(store: str) -> None:
    """Each step of the report timed alone, in build_report's order, on one connection.

    Sequential (no worker threads), so each section's wall and CPU seconds are its own;
    the sum is close to a large store's report, which runs its sections this way too.
    """
    from llm_council.bias_audit.report.analyses import families
    from llm_council.bias_audit.report.analyses.causal_checks import causal_checks
    from llm_council.bias_audit.report.analyses.decisions import decisions_affected
    from llm_council.bias_audit.report.analyses.joint import fit_joint_model
    from llm_council.bias_audit.report.analyses.leaderboard import build_leaderboard
    from llm_council.bias_audit.report.analyses.length import pooled_length_bias
    from llm_council.bias_audit.report.analyses.position import position_bias
    from llm_council.bias_audit.report.analyses.reviewers import (
        leniency_fixed_by_the_scale,
        material_leniency,
        reviewer_profiles,
    )
    from llm_council.bias_audit.report.analyses.self_preference import self_preferences
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.tables import (
        create_analysis_tables,
        rank_point_reviewers,
    )

    timings: dict[str, tuple[float, float]] = {}

    def timed(name: str, run: Any) -> Any:
        started, cpu_started = time.perf_counter(), time.process_time()
        result = run()
        timings[name] = (time.perf_counter() - started, time.process_time() - cpu_started)
        return result

    connection = timed("load: read and check records", lambda: load_store(store)).connection
    timed("load: pair reviewers (scored table)", lambda: create_analysis_tables(connection))

    def profiles() -> Any:
        rank = rank_point_reviewers(connection)
        forced = leniency_fixed_by_the_scale(connection, rank)
        return forced, reviewer_profiles(connection, forced_choice=forced, rank_reviewers=rank)

    forced, reviewer_rows = timed("reviewer profiles", profiles)
    reference = [row.reviewer for row in reviewer_rows if row.in_leniency_reference]
    joint = timed(
        "joint model", lambda: fit_joint_model(connection, reference, forced_choice=forced)
    )
    timed("position", lambda: position_bias(connection))
    timed("length", lambda: pooled_length_bias(connection))
    timed(
        "self-preference",
        lambda: self_preferences(
            connection, joint.model.effects if joint else [], joint.model.n_sessions if joint else 0
        ),
    )
    level_fixed = frozenset(row.reviewer for row in reviewer_rows) if forced else frozenset()
    family_sections = {
        "style mimicry": lambda: families.style_mimicry(connection),
        "amplification": lambda: families.amplification(connection),
        "anchoring": lambda: families.anchoring_by_reviewer(connection, 0.05, level_fixed),
        "parse outcomes": lambda: families.parse_outcomes_by_reviewer(connection),
        "favouritism": lambda: families.favouritism(connection),
        "drift": lambda: families.drift_by_reviewer(connection),
        "reasoning": lambda: families.reasoning_by_reviewer(connection),
    }
    for name, run in family_sections.items():
        timed(f"family: {name}", run)
    timed("leaderboard (200 resamples)", lambda: build_leaderboard(connection, n_resamples=200))
    timed("causal checks", lambda: causal_checks(connection))
    timed("decisions affected", lambda: decisions_affected(connection))
    timed("material leniency", lambda: material_leniency(connection))
    connection.close()
    print(json.dumps({name: list(value) for name, value in timings.items()}))


def print_sections(store: str, kind: str) -> None:
    """The per-section table of :func:`sections_child` for one store."""
    this = str(Path(__file__).resolve())
    wall, cpu, peak, out = _measure([PYTHON, this, "--sections-child", store])
    timings = json.loads(out)
    total_wall = sum(value[0] for value in timings.values())
    total_cpu = sum(value[1] for value in timings.values())
    print(f"\n{kind}: {store} (process {wall:.2f} s wall, {cpu:.2f} s CPU, peak {peak:.0f} MB)")
    # sorted by CPU seconds: on a shared machine the wall time says more about the load
    print(f"{'step':40} {'wall s':>8} {'CPU s':>8} {'CPU share':>10}")
    for name, (seconds, cpu_seconds) in sorted(timings.items(), key=lambda item: -item[1][1]):
        print(f"{name:40} {seconds:8.2f} {cpu_seconds:8.2f} {cpu_seconds / total_cpu:10.1%}")
    print(f"{'sum of steps':40} {total_wall:8.2f} {total_cpu:8.2f}")


def _median_run(command: list[str], repeats: int) -> tuple[float, float, float]:
    """Median wall, median CPU and the largest peak RSS over ``repeats`` runs."""
    runs = [_measure(command)[:3] for _ in range(repeats)]
    walls = sorted(run[0] for run in runs)
    cpus = sorted(run[1] for run in runs)
    return walls[len(walls) // 2], cpus[len(cpus) // 2], max(run[2] for run in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", help="write the store here and keep it (default: a temp dir)")
    parser.add_argument("--repeats", type=int, default=3, help="warm runs per measurement")
    parser.add_argument(
        "--check", action="store_true", help="also run the pure-Python pass and compare numbers"
    )
    parser.add_argument(
        "--formats",
        default="jsonl,parquet",
        help="comma-separated store formats to measure (jsonl, parquet)",
    )
    parser.add_argument(
        "--recuse",
        action="store_true",
        help="reviewers skip their own answer (20 records per session), as many councils run",
    )
    parser.add_argument(
        "--missing-score-rate",
        type=float,
        default=0.0,
        help="share of reviews without a usable score (e.g. 0.03; tables then have holes)",
    )
    parser.add_argument("--baseline-child", help=argparse.SUPPRESS)
    parser.add_argument("--core-child", help=argparse.SUPPRESS)
    parser.add_argument("--floor-child", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--load-child", help=argparse.SUPPRESS)
    parser.add_argument(
        "--sections",
        action="store_true",
        help="instead: time each step of the report alone, per format (where the time goes)",
    )
    parser.add_argument("--sections-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_child:
        print(json.dumps(baseline_pass(args.baseline_child)))
        return
    if args.core_child:
        print(json.dumps(duckdb_core_pass(args.core_child)))
        return
    if args.floor_child:
        floor_child(*args.floor_child)
        return
    if args.load_child:
        load_child(args.load_child)
        return
    if args.sections_child:
        sections_child(args.sections_child)
        return

    formats = [name.strip() for name in args.formats.split(",") if name.strip()]
    if not formats or set(formats) - set(FLOOR_SQL):
        raise SystemExit(f"--formats {args.formats!r}: choose from jsonl, parquet")
    load_before = " ".join(f"{value:.2f}" for value in os.getloadavg())
    this = str(Path(__file__).resolve())
    with tempfile.TemporaryDirectory() as scratch:
        store = args.keep or str(Path(scratch) / "store.jsonl")
        parquet = f"{store}.parquet" if args.keep else str(Path(scratch) / "parquet")
        generate = [
            PYTHON, "-m", "llm_council.simulation.simulated_records",
            "--out", store, "--records", str(args.records), "--seed", "2026",
            "--missing-score-rate", str(args.missing_score_rate),
        ] + (["--recuse"] if args.recuse else [])  # fmt: skip
        if not (args.keep and Path(store).exists()):
            gen_out = _measure(generate)[3]
        else:
            gen_out = f"reusing {store}"
        size_mb = os.path.getsize(store) / 1e6
        if not (args.keep and Path(parquet).is_dir()):
            compact = _measure([CLI, "bias-compact", "--store", store, "--out", parquet])
        else:
            compact = (float("nan"), float("nan"), float("nan"), f"reusing {parquet}")
        parquet_mb = sum(f.stat().st_size for f in Path(parquet).rglob("*.parquet")) / 1e6
        if args.sections:
            for kind in formats:
                print_sections({"jsonl": store, "parquet": parquet}[kind], kind)
            return
        rows: list[tuple[str, float, float, float]] = []
        ratios: list[str] = []
        reports: dict[str, dict[str, object]] = {}
        targets: list[str] = []
        sources = {"jsonl": store, "parquet": parquet}
        for kind in formats:
            source = sources[kind]
            floor = _median_run([PYTHON, this, "--floor-child", kind, source], args.repeats)
            report_path = str(Path(scratch) / f"report-{kind}.json")
            command = [
                CLI,
                "bias-report",
                "--store",
                source,
                "--format",
                "json",
                "--out",
                report_path,
            ]
            load_wall, _, load_rss, load_out = _measure([PYTHON, this, "--load-child", source])
            loading = json.loads(load_out)
            first = _measure(command)[:3]
            warm = _median_run(command, args.repeats)
            reports[kind] = json.loads(Path(report_path).read_text())
            rows += [
                (f"DuckDB floor: scan + per-session aggregate ({kind})", *floor),
                (
                    f"  report's loading alone, in-process ({kind})",
                    loading["seconds"],
                    loading["cpu"],
                    load_rss,
                ),
                (f"bias-report {kind}, first run", *first),
                (f"bias-report {kind}, warm (median of {args.repeats})", *warm),
            ]
            ratios.append(
                f"{kind}: loading alone / DuckDB floor = {loading['seconds'] / floor[0]:.2f}x "
                f"(wall, loading excludes start-up), {loading['cpu'] / floor[1]:.2f}x (CPU)"
            )
            ratios.append(
                f"{kind}: report / DuckDB floor = {first[0] / floor[0]:.2f}x first run, "
                f"{warm[0] / floor[0]:.2f}x warm (wall); {warm[1] / floor[1]:.2f}x (CPU)"
            )
            seconds_target = TARGET_SECONDS[kind] * args.records / 1_000_000
            peak = max(first[2], warm[2])
            targets.append(
                f"{kind}: warm {warm[0]:.2f} s wall, {warm[1]:.2f} CPU s against "
                f"<= {seconds_target:.3g} s ({TARGET_SECONDS[kind]:.1f} s per 1M records); "
                f"peak RSS {peak:.0f} MB against <= {TARGET_PEAK_MB:.0f} MB (10M records)"
            )
        help_run = _median_run([CLI, "--help"], 5)
        bare = _median_run([PYTHON, "-c", "pass"], 5)
        rows += [("llm-council --help (median of 5)", *help_run), ("python -c pass", *bare)]
        same = len({report["n_records"] for report in reports.values()}) == 1
        if args.check:
            baseline = json.loads(_measure([PYTHON, this, "--baseline-child", store])[3])
            for report in reports.values():
                _check_same(report, baseline)

    print(gen_out.strip() + f" ({size_mb:.0f} MB JSONL, {parquet_mb:.0f} MB Parquet)")
    print(f"compaction: {compact[0]:.2f} s wall, {compact[2]:.0f} MB peak")
    first_report = reports[formats[0]]
    print(
        f"sessions in the report: {first_report['n_sessions']}, records: "
        f"{first_report['n_records']} (formats measured agree: {same})"
    )
    load_after = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"load average before / after the run: {load_before} / {load_after} "
        f"({os.cpu_count()} cores shared: trust CPU s over wall s)"
    )
    header = f"{'step':<56} {'wall s':>7} {'CPU s':>7} {'peak RSS MB':>12}"
    print(header)
    print("-" * len(header))
    for name, wall, cpu, rss in rows:
        print(f"{name:<56} {wall:>7.2f} {cpu:>7.2f} {rss:>12.0f}")
    print()
    for line in ratios:
        print(line)
    print(
        f"--help / python -c pass = {help_run[0] / bare[0]:.1f}x; --help {help_run[0]:.2f} s "
        f"(target <= {TARGET_HELP_SECONDS} s)"
    )
    for line in targets:
        print(line)
    if args.check:
        print("the reports' numbers equal the pure-Python pass (mean scores, slot means, length r)")


if __name__ == "__main__":
    main()
