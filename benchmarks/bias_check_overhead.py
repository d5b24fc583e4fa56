"""Benchmark: what the live bias checks (ADR 0024) cost a session when they are off (p = 0).

"Before" is the code at ``--base`` (a git revision without the checks, extracted with
``git archive`` into a temporary directory); "after" is this checkout. Each measurement is
a child process that runs ``--sessions`` sessions of the default simulated council with
the bias audit on (records to a fresh temporary store) and prints its CPU seconds per
session (process time: the machine's other load does not count, only this code's work);
before and after alternate ``--rounds`` times, each round swapping which runs first, and
the paired differences are summarised, so machine load drifts into both arms alike.

    .venv/bin/python benchmarks/bias_check_overhead.py [--base 9e64c69] [--rounds 8]

Also reports p = 1 (every reviewer checked once) for the cost of the checks when on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = """
import asyncio, os, sys, time
from llm_council import run_full_council
from llm_council.bias_audit.middleware import BiasAuditMiddleware
from llm_council.config import load_council_config
from llm_council.infra.log_setup import configure_logging
configure_logging(level="ERROR", standard_logging=False)
sessions = int(sys.argv[1])
config = load_council_config()
async def run_all(n):
    for seed in range(n):
        await run_full_council("How do I shard a queue?", config=config, seed=seed,
                               middleware=[BiasAuditMiddleware()])
asyncio.run(run_all(5))  # warm-up
started = time.process_time()
asyncio.run(run_all(sessions))
print((time.process_time() - started) / sessions)
"""


def _extract(revision: str, into: Path) -> Path:
    archive = into / "base.tar"
    subprocess.run(
        ["git", "-C", str(REPO), "archive", "-o", str(archive), revision, "src", "config"],
        check=True,
    )
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


def _seconds_per_session(src: Path, sessions: int, probability: float, store: Path) -> float:
    env = {
        **os.environ,
        "PYTHONPATH": str(src),
        "LLM_COUNCIL_BIAS_STORE": str(store),
        "LLM_COUNCIL_BIAS_CHECK_PROBABILITY": str(probability),
    }
    for name in ("LLM_COUNCIL_CONFIG", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, "-c", _CHILD, str(sessions)],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="9e64c69", help="git revision without the checks")
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        before_src, after_src = _extract(args.base, root), REPO / "src"
        before, after, checked = [], [], []
        for round_index in range(args.rounds):
            # alternate which arm runs first (ABBA), each arm with its own fresh store
            arms = [("before", before_src, 0.0, before), ("after", after_src, 0.0, after)]
            if round_index % 2:
                arms.reverse()
            arms.append(("checked", after_src, 1.0, checked))
            for name, src, probability, times in arms:
                store = root / f"{name}-{round_index}.jsonl"
                times.append(_seconds_per_session(src, args.sessions, probability, store))
    differences = [a - b for a, b in zip(after, before, strict=True)]
    ms = 1000.0
    print(f"sessions per measurement: {args.sessions}, rounds: {args.rounds}, base {args.base}")
    print(f"before (p=0, base):      median {statistics.median(before) * ms:.2f} CPU ms/session")
    print(f"after  (p=0, this tree): median {statistics.median(after) * ms:.2f} CPU ms/session")
    print(
        f"paired after - before:   median {statistics.median(differences) * ms:+.2f} ms, "
        f"range [{min(differences) * ms:+.2f}, {max(differences) * ms:+.2f}] ms"
    )
    ratio = statistics.median(checked) / statistics.median(after)
    print(
        f"after  (p=1, every reviewer checked): median "
        f"{statistics.median(checked) * ms:.2f} CPU ms/session ({ratio:.2f}x p=0)"
    )


if __name__ == "__main__":
    main()
