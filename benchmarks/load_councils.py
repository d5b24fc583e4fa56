"""Benchmark: many concurrent council sessions in one process, on the simulated council.

Runs N sessions of the default 5-member simulated council at once (``asyncio.gather``),
each member call sleeping ``--latency`` seconds like a network call, and reports the
wall time, the process's peak resident memory (``getrusage`` ``ru_maxrss``) and its
growth over the baseline measured after one warm-up session. Exits non-zero if any
session raised, was degraded, or had a middleware error.

    .venv/bin/python benchmarks/load_councils.py [--councils 200] [--latency 0.05] [--audit]

Memory is bounded when the peak stops growing after the first round: later rounds of
the same size reuse the memory the first one freed (no per-session leak).

``--audit`` turns the bias audit on and writes records to a temporary store, so the
figure includes the middleware and the store's file lock.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from llm_council import CouncilConfig, CouncilMember, run_full_council
from llm_council.infra.log_setup import configure_logging

QUERY = "How do I reduce tail latency in a web service?"
PROFILES = ("balanced", "harsh", "verbose", "primacy", "narcissist")


@dataclass(frozen=True)
class LoadReport:
    councils: int
    wall_s: float
    baseline_rss_mib: float
    peak_rss_mib: float
    failures: list[str]
    peak_after_round_mib: tuple[float, ...] = ()

    @property
    def growth_mib(self) -> float:
        return self.peak_rss_mib - self.baseline_rss_mib


def peak_rss_mib() -> float:
    """Peak resident set size of this process so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def council(latency_s: float) -> CouncilConfig:
    options = {"latency_s": latency_s} if latency_s else {}
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=p, spec=f"simulated:{p}", options=options) for p in PROFILES
        ),
        chairman=CouncilMember(name="chairman", spec="simulated:balanced", options=options),
    )


def _failures(seed: int, outcome: object) -> list[str]:
    if isinstance(outcome, BaseException):
        return [f"session {seed}: raised {type(outcome).__name__}: {outcome}"]
    metadata = outcome.metadata  # type: ignore[attr-defined]
    problems = [f"session {seed}: degraded {f}" for f in metadata["degraded"]]
    problems += [
        f"session {seed}: middleware error {e}" for e in metadata.get("middleware_errors", [])
    ]
    return problems


async def run_councils(
    councils: int, latency_s: float, *, rounds: int = 1, middleware: list | None = None
) -> LoadReport:
    """``rounds`` times, ``councils`` sessions at once; wall time is the first round's."""
    config = council(latency_s)
    await run_full_council(QUERY, config=config, seed=10**6, middleware=middleware)  # warm-up
    baseline = peak_rss_mib()
    failures: list[str] = []
    peaks: list[float] = []
    wall = 0.0
    for round_number in range(rounds):
        seeds = range(round_number * councils, (round_number + 1) * councils)
        started = time.perf_counter()
        outcomes = await asyncio.gather(
            *(
                run_full_council(QUERY, config=config, seed=seed, middleware=middleware)
                for seed in seeds
            ),
            return_exceptions=True,
        )
        wall = wall or time.perf_counter() - started
        failures += [
            problem
            for seed, outcome in zip(seeds, outcomes, strict=True)
            for problem in _failures(seed, outcome)
        ]
        del outcomes
        peaks.append(peak_rss_mib())
    return LoadReport(councils, wall, baseline, peaks[-1], failures, tuple(peaks))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--councils", type=int, default=200)
    parser.add_argument(
        "--latency", type=float, default=0.05, help="seconds each member call sleeps"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="repeat to show memory does not creep"
    )
    parser.add_argument(
        "--audit", action="store_true", help="bias audit on, records to a temp store"
    )
    args = parser.parse_args()
    configure_logging(level="WARNING")
    with tempfile.TemporaryDirectory() as directory:
        middleware = None
        if args.audit:
            os.environ["LLM_COUNCIL_BIAS_AUDIT"] = "true"
            os.environ["LLM_COUNCIL_BIAS_STORE"] = str(Path(directory) / "records.jsonl")
        else:
            middleware = []
        report = asyncio.run(
            run_councils(args.councils, args.latency, rounds=args.rounds, middleware=middleware)
        )
        records = 0
        if args.audit:
            store = Path(os.environ["LLM_COUNCIL_BIAS_STORE"])
            records = sum(1 for _ in store.open("rb")) if store.exists() else 0
    calls = args.councils * (2 * len(PROFILES) + 1)
    print(
        f"councils={report.councils} members={len(PROFILES)} latency={args.latency * 1000:.0f} ms "
        f"audit={'on' if args.audit else 'off'} provider calls per round={calls}"
    )
    rate = report.councils / report.wall_s
    per_session_kib = 1024 * report.growth_mib / report.councils
    print(f"wall time (first round): {report.wall_s:.2f} s ({rate:.1f} sessions/s)")
    print(
        f"peak RSS: {report.peak_rss_mib:.1f} MiB (baseline after warm-up "
        f"{report.baseline_rss_mib:.1f} MiB, growth {report.growth_mib:.1f} MiB "
        f"= {per_session_kib:.0f} KiB/session)"
    )
    print(
        "peak RSS after each round: "
        + ", ".join(f"{peak:.1f}" for peak in report.peak_after_round_mib)
        + " MiB"
    )
    if args.audit:
        expected = (report.councils * args.rounds + 1) * len(PROFILES) ** 2
        print(f"records written: {records} (expected {expected})")
        if records != expected:
            report.failures.append(f"records written {records} != expected {expected}")
    print(f"errors: {len(report.failures)}")
    for problem in report.failures[:20]:
        print(f"  {problem}", file=sys.stderr)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
