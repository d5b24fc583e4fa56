"""Benchmark: are the three stages fully concurrent?

A 5-member simulated council whose every call sleeps 100 ms. Ideal wall time is
3 stages x 100 ms = 0.300 s; the target ratio wall / ideal is <= 1.10.

    .venv/bin/python benchmarks/council_concurrency.py [--sessions 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from llm_council import CouncilConfig, CouncilMember, run_full_council
from llm_council.log_setup import configure_logging

LATENCY_S = 0.100
IDEAL_S = 3 * LATENCY_S


def sleepy_council(members: int) -> CouncilConfig:
    options = {"latency_s": LATENCY_S}
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=f"m{i}", spec="simulated:unbiased", options=options)
            for i in range(members)
        ),
        chairman=CouncilMember(name="chair", spec="simulated:unbiased", options=options),
    )


async def measure(sessions: int, members: int) -> list[float]:
    config = sleepy_council(members)
    walls = []
    for seed in range(sessions):
        started = time.perf_counter()
        await run_full_council(
            "How do I reduce tail latency?", config=config, seed=seed, middleware=[]
        )
        walls.append(time.perf_counter() - started)
    return walls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--members", type=int, default=5)
    args = parser.parse_args()
    configure_logging(level="WARNING")
    walls = asyncio.run(measure(args.sessions, args.members))
    median = statistics.median(walls)
    print(f"members={args.members} sessions={args.sessions} latency={LATENCY_S * 1000:.0f} ms")
    print(f"wall time: median {median:.3f} s, min {min(walls):.3f} s, max {max(walls):.3f} s")
    print(f"ratio wall / ideal (median): {median / IDEAL_S:.3f}  (target <= 1.10)")


if __name__ == "__main__":
    main()
