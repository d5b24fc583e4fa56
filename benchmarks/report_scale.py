"""Scale benchmark of ``llm-council bias-report``: 1,000,000 records, time and peak memory.

    .venv/bin/python benchmarks/report_scale.py                 # 1,000,000 records
    .venv/bin/python benchmarks/report_scale.py --records 200000 --keep /tmp/store.jsonl

Steps, each measured in its own subprocess (wall time, and peak resident memory from
``os.wait4``'s rusage, i.e. ``ru_maxrss`` of that child alone):

1. the generator writes the store (default council, 25 records per session);
2. ``llm-council bias-report --format json`` on it (the real CLI: interpreter start, imports,
   DuckDB load, every analysis, 200 bootstrap resamples, rendering);
3. a straightforward pure-Python pass (``json.loads`` per line, dict accumulation) that
   computes the core aggregates: per-reviewer mean score and paired leniency, mean score per
   display slot, and the pooled per-session length correlation. The child checks that its
   figures equal the report's, so the two passes did the same work.

Targets (issue 4): report under 5 s and under 1.5 GB on this 2-core machine.
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

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
CLI = str(Path(PYTHON).with_name("llm-council"))
TARGET_SECONDS = 5.0
TARGET_MEMORY_MB = 1536.0


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
            if record.get("schema_version") != 1 or record.get("score_value") is None:
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
        if is_self:
            continue
        n = answer_n[session, model]
        if n >= 2:
            deviation_sum[reviewer, session] += score - (answer_sum[session, model] - score) / (
                n - 1
            )
            deviation_n[reviewer, session] += 1
        slot_session[session, position].append(score)
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
    from llm_council.bias_audit.report.length import pooled_length_bias
    from llm_council.bias_audit.report.loading import load_store
    from llm_council.bias_audit.report.position import position_bias
    from llm_council.bias_audit.report.reviewers import reviewer_profiles
    from llm_council.bias_audit.report.tables import create_analysis_tables

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
    for reviewer, leniency in baseline["leniency"].items():  # type: ignore[union-attr]
        got = profiles[reviewer]["leniency"]["estimate"]
        assert math.isclose(got, leniency, rel_tol=1e-9, abs_tol=1e-12), reviewer
    position = report["position"]  # type: ignore[index]
    for slot, interval in zip(position["positions"], position["mean_score"], strict=True):
        assert math.isclose(interval["estimate"], baseline["slot_mean"][str(slot)], rel_tol=1e-9)  # type: ignore[index]
    pooled = report["length"]["pooled"]["estimate"]  # type: ignore[index]
    assert math.isclose(pooled, baseline["pooled_r"], rel_tol=1e-7), (pooled, baseline["pooled_r"])  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keep", help="write the store here and keep it (default: a temp dir)")
    parser.add_argument("--baseline-child", help=argparse.SUPPRESS)
    parser.add_argument("--core-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.baseline_child:
        print(json.dumps(baseline_pass(args.baseline_child)))
        return
    if args.core_child:
        print(json.dumps(duckdb_core_pass(args.core_child)))
        return

    load_before = " ".join(f"{value:.2f}" for value in os.getloadavg())
    with tempfile.TemporaryDirectory() as scratch:
        store = args.keep or str(Path(scratch) / "store.jsonl")
        report_path = str(Path(scratch) / "report.json")
        generate = [
            PYTHON,
            "-m",
            "llm_council.bias_audit.simulated_records",
            "--out",
            store,
            "--records",
            str(args.records),
            "--seed",
            "2026",
        ]
        gen_wall, gen_cpu, gen_rss, gen_out = _measure(generate)
        size_mb = os.path.getsize(store) / 1e6
        report_wall, report_cpu, report_rss, _ = _measure(
            [CLI, "bias-report", "--store", store, "--format", "json", "--out", report_path]
        )
        import_wall, import_cpu, import_rss, _ = _measure(
            [PYTHON, "-c", "import llm_council.cli.app, llm_council.bias_audit.report, scipy.stats"]
        )
        base_wall, base_cpu, base_rss, base_out = _measure(
            [PYTHON, str(Path(__file__).resolve()), "--baseline-child", store]
        )
        core_wall, core_cpu, core_rss, core_out = _measure(
            [PYTHON, str(Path(__file__).resolve()), "--core-child", store]
        )
        baseline = json.loads(base_out)
        core = json.loads(core_out)
        for name in ("mean_score", "leniency", "slot_mean"):
            for key, value in core[name].items():
                assert math.isclose(value, baseline[name][key], rel_tol=1e-9, abs_tol=1e-12)
        assert math.isclose(core["pooled_r"], baseline["pooled_r"], rel_tol=1e-7)
        report = json.loads(Path(report_path).read_text())
        _check_same(report, baseline)

    print(gen_out.strip() + f" ({size_mb:.0f} MB)")
    print(f"sessions in the report: {report['n_sessions']}, records: {report['n_records']}")
    print()
    rows = [
        ("generate the store (numpy, JSON lines)", gen_wall, gen_cpu, gen_rss),
        ("llm-council bias-report --format json (end to end)", report_wall, report_cpu, report_rss),
        ("  of which: interpreter start + imports", import_wall, import_cpu, import_rss),
        ("DuckDB pass, core aggregates only (same numbers)", core_wall, core_cpu, core_rss),
        ("pure-Python line-by-line pass (core aggregates)", base_wall, base_cpu, base_rss),
    ]
    header = f"{'step':<52} {'wall s':>7} {'CPU s':>7} {'peak RSS MB':>12}"
    print(f"load average before the run: {load_before}")
    print(header)
    print("-" * len(header))
    for name, wall, cpu, rss in rows:
        print(f"{name:<52} {wall:>7.2f} {cpu:>7.2f} {rss:>12.0f}")
    print()
    print(
        "core aggregates, in-process time excluding start-up: "
        f"DuckDB {core['seconds']:.2f} s vs pure Python {baseline['seconds']:.2f} s "
        f"= {baseline['seconds'] / core['seconds']:.1f}x"
    )
    print(
        f"speed-up of the report over the pure-Python pass: {base_wall / report_wall:.1f}x "
        f"(the report also fits the joint model, Bradley-Terry with 200 bootstraps, ...)"
    )
    print("core aggregates of both passes agree (mean scores, leniency, slot means, pooled r)")
    within_time = "yes" if report_wall < TARGET_SECONDS else "NO"
    within_memory = "yes" if report_rss < TARGET_MEMORY_MB else "NO"
    print(
        f"report under {TARGET_SECONDS:.0f} s: {within_time}; "
        f"under {TARGET_MEMORY_MB / 1024:.1f} GB: {within_memory}"
    )


if __name__ == "__main__":
    main()
