"""Benchmark: peak memory of a session in which one member answers 50 MB.

Before the answer cap, the 50 MB answer was copied into every reviewer's prompt and the
chairman's (about 1 GB peak for a 5-member council). With ``max_answer_chars`` the answer
is cut once, in stage 1, so the peak should stay near one copy of the answer (the
provider's own string) whatever the council size.

    .venv/bin/python benchmarks/answer_cap_memory.py [--mb 50] [--members 5]

Each provider call waits 50 ms, as a network call would, so the requests of one stage
are alive at the same time (as they are with a real SDK). Each mode runs in a fresh
subprocess and reports Python's peak traced allocation (``tracemalloc``) during the
session and the process's peak RSS (``ru_maxrss``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import time
import tracemalloc

from llm_council import CouncilConfig, CouncilMember, run_full_council
from llm_council.providers.base import Completion, CompletionRequest, Provider
from llm_council.providers.registry import register_provider


class _Bench(Provider):
    """``bench:huge`` answers ``--mb`` megabytes; the others answer briefly and review."""

    provider_name = "bench"
    answer_chars = 0
    labels = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        await asyncio.sleep(0.05)  # like a network call: concurrent requests are all alive
        if request.task == "answer":
            text = "x" * self.answer_chars if self.model_name == "huge" else "a short answer"
        elif request.task == "review":
            ranking = [f"Response {chr(ord('A') + i)}" for i in range(self.labels)]
            text = json.dumps({"ranking": ranking})
        else:
            text = "synthesis"
        return Completion(text=text, model=self.spec)


def _measure(mb: int, members: int, cap: int) -> dict[str, float]:
    _Bench.answer_chars = mb * 1_000_000
    _Bench.labels = members
    register_provider("bench", lambda name, options: _Bench(name))
    names = ["huge", *(f"m{i}" for i in range(1, members))]
    config = CouncilConfig(
        members=tuple(CouncilMember(name=n, spec=f"bench:{n}") for n in names),
        chairman=CouncilMember(name="chair", spec="bench:chair"),
        max_answer_chars=cap,
    )
    tracemalloc.start()
    started = time.perf_counter()
    result = asyncio.run(run_full_council("q", config=config, seed=1, middleware=[]))
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert result.metadata["degraded"] == [], result.metadata["degraded"]
    return {
        "cap": cap,
        "truncated": len(result.metadata["truncated_answers"]),
        "traced_peak_mb": round(peak / 1e6, 1),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "session_s": round(elapsed, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--child-cap", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child_cap is not None:
        print(json.dumps(_measure(args.mb, args.members, args.child_cap)))
        return
    print(f"one member answers {args.mb} MB; {args.members} members + chairman")
    for label, cap in (("cap 100,000 chars (default)", 100_000), ("no cap (10^10)", 10**10)):
        done = subprocess.run(
            [
                sys.executable,
                __file__,
                "--mb",
                str(args.mb),
                "--members",
                str(args.members),
                "--child-cap",
                str(cap),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        row = json.loads(done.stdout)
        print(
            f"{label:28s} traced peak {row['traced_peak_mb']:8.1f} MB   "
            f"max RSS {row['max_rss_mb']:8.1f} MB   session {row['session_s']:5.2f} s   "
            f"answers cut: {row['truncated']}"
        )


if __name__ == "__main__":
    main()
