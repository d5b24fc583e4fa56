"""Benchmark: what the bias audit adds to a 5-member session (target: median < 2 ms).

Two measurements in one run, on the offline simulated council:

1. side by side: the same sessions (same seeds) with and without ``BiasAuditMiddleware``,
   interleaved so machine load hits both alike; medians, their difference and ratio;
2. the hook alone: ``on_session_end`` on a captured ``SessionCompleted`` event, which is
   exactly the audit's overhead (thresholds, statistics, records, locked append),
   with the statistics alone (``audit_score_table``) as a breakdown.

    .venv/bin/python benchmarks/audit_latency.py [--sessions 200] [--repeats 500]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from typing import Any

from llm_council import CouncilConfig, CouncilMember, run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.bias_audit.session.audit import audit_score_table
from llm_council.bias_audit.session.score_table import score_table_from_session
from llm_council.bias_audit.session.thresholds import load_thresholds
from llm_council.infra.log_setup import configure_logging
from llm_council.middleware import Middleware, SessionCompleted

TARGET_MS = 2.0


class EventCapture(Middleware):
    """Keeps the last SessionCompleted event so the hook can be timed on its own."""

    name = "event_capture"

    def __init__(self) -> None:
        self.event: SessionCompleted | None = None

    async def on_session_end(self, event: SessionCompleted) -> None:
        self.event = event
        return None


def council(members: int) -> CouncilConfig:
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=f"m{i}", spec="simulated:unbiased") for i in range(members)
        ),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased"),
    )


async def side_by_side(config: CouncilConfig, sessions: int) -> dict[str, dict[str, list[float]]]:
    """Wall and CPU seconds of each session, plain and audited, same seeds, interleaved.

    CPU time (``time.process_time``) is reported beside wall time because on a shared
    machine wall time also counts the time other processes held the CPU.
    """
    times: dict[str, dict[str, list[float]]] = {
        kind: {"wall": [], "cpu": []} for kind in ("plain", "audited")
    }
    audit = BiasAuditMiddleware()
    for seed in range(sessions):
        for kind, middleware in (("plain", []), ("audited", [audit])):
            wall_start, cpu_start = time.perf_counter(), time.process_time()
            await run_full_council(
                "How do I reduce tail latency?", config=config, seed=seed, middleware=middleware
            )
            times[kind]["cpu"].append(time.process_time() - cpu_start)
            times[kind]["wall"].append(time.perf_counter() - wall_start)
    return times


async def hook_alone(
    config: CouncilConfig, repeats: int
) -> tuple[list[float], list[float], list[float]]:
    capture = EventCapture()
    await run_full_council(
        "How do I reduce tail latency?", config=config, seed=1, middleware=[capture]
    )
    event = capture.event
    assert event is not None
    audit = BiasAuditMiddleware()
    hook: list[float] = []
    hook_cpu: list[float] = []
    stats_only: list[float] = []
    thresholds = load_thresholds()
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        await audit.on_session_end(event)
        hook_cpu.append(time.process_time() - cpu_started)
        hook.append(time.perf_counter() - started)
        started = time.perf_counter()
        audit_score_table(score_table_from_session(event.answers, event.reviews), thresholds)
        stats_only.append(time.perf_counter() - started)
    return hook, hook_cpu, stats_only


def summary(values_s: list[float]) -> dict[str, Any]:
    ordered = sorted(values_s)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p90_ms": ordered[int(0.9 * (len(ordered) - 1))] * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=500)
    parser.add_argument("--members", type=int, default=5)
    args = parser.parse_args()
    configure_logging(level="ERROR")
    config = council(args.members)
    with tempfile.TemporaryDirectory() as scratch:
        os.environ["LLM_COUNCIL_BIAS_STORE"] = os.path.join(scratch, "bias_records.jsonl")
        times = asyncio.run(side_by_side(config, args.sessions))
        hook, hook_cpu, stats_only = asyncio.run(hook_alone(config, args.repeats))
    print(f"members={args.members} sessions={args.sessions} (interleaved) repeats={args.repeats}")
    print(f"load average at the end: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    for clock in ("wall", "cpu"):
        plain, audited = times["plain"][clock], times["audited"][clock]
        plain_median = statistics.median(plain) * 1000
        audited_median = statistics.median(audited) * 1000
        paired = statistics.median(a - b for a, b in zip(audited, plain, strict=True)) * 1000
        print(
            f"{clock:>4} time: session without audit median {plain_median:.2f} ms, with audit "
            f"{audited_median:.2f} ms; difference of medians {audited_median - plain_median:.2f}"
            f" ms, median paired difference {paired:.2f} ms, ratio "
            f"{audited_median / plain_median:.3f}"
        )
    hook_summary, stats_summary = summary(hook), summary(stats_only)
    verdict = "met" if hook_summary["median_ms"] < TARGET_MS else "NOT met"
    print(
        f"on_session_end alone (stats + records + locked append): median "
        f"{hook_summary['median_ms']:.3f} ms, p90 {hook_summary['p90_ms']:.3f} ms "
        f"(target median < {TARGET_MS:g} ms: {verdict})"
    )
    print(f"on_session_end alone, CPU time: median {statistics.median(hook_cpu) * 1000:.3f} ms")
    print(
        f"statistics alone (audit_score_table): median {stats_summary['median_ms']:.3f} ms, "
        f"p90 {stats_summary['p90_ms']:.3f} ms"
    )


if __name__ == "__main__":
    main()
