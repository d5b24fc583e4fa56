"""Benchmark: the shipped local council's session and stage times (issue 35 item 3, ADR 0065).

Runs audited sessions of ``config/local_council.toml`` (two SmolLM2-135M members, two
Gemma 3 270M, a SmolLM2 chairman; each model on its own llama.cpp server, one thread) in
one process, as the real-model tests do: the first session starts the servers (and, the
first time on a machine, joins Gemma's chunks), so it is reported on its own; the target
(session median <= 25 s on 2 cores) is read on the sessions after it.

For each session: wall time of each stage (the council's own ``stage_durations_s``), and
the CPU seconds each server process spent in each stage (``/proc/PID/stat`` utime + stime,
read by a middleware at the stage boundaries). Wall time depends on what else runs on the
machine; CPU time much less, so both are printed, with the load average before and after.
The critical path in CPU seconds is, per session, the sum over the three stages of the
busier server's CPU in that stage: the servers run side by side, one thread each, so on two
otherwise idle cores a session takes at least about that much wall time (an estimate, not
a measurement: it leaves out the council's own work between calls, and CPU time can change
when other processes share the cores' caches).
Answers, parsed reviews and whether the audit's self-preference family was tested are
counted, so a faster setting that breaks the council shows here.

    nice .venv/bin/python benchmarks/local_council.py [--sessions 6] [--config PATH]
        [--json OUT]

Needs the ``local`` extra (``pip install -e '.[local]'``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from llm_council import run_full_council
from llm_council.config import load_council_config
from llm_council.middleware import (
    Middleware,
    SessionCompleted,
    SessionStarted,
    Stage1Completed,
    Stage2Completed,
    discover_middleware,
)
from llm_council.providers.local_server import shared_servers, stop_shared_servers

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "config" / "local_council.toml"
QUERIES = (
    "Why is the sky blue?",
    "How do I make a good cup of tea?",
    "What is a prime number?",
    "Why do leaves change colour in autumn?",
    "How does a bicycle stay upright?",
    "What causes the seasons?",
    "How do vaccines work?",
    "Why is sleep important?",
    "What is inflation?",
    "How do bees make honey?",
)
STAGES = ("stage1", "stage2", "stage3")
_TICKS = os.sysconf("SC_CLK_TCK")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and its threads (``/proc/PID/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # fields after the name: state is [0]; utime and stime are stat fields 14 and 15
    return (int(fields[11]) + int(fields[12])) / _TICKS


class ServerCpu(Middleware):
    """Reads each local server's CPU time at the session's stage boundaries."""

    name = "benchmark_server_cpu"

    def __init__(self) -> None:
        self.marks: list[dict[str, float]] = []

    def _mark(self) -> None:
        self.marks.append(
            {
                model: process_cpu_s(server.pid)
                for model, server in shared_servers().items()
                if server.pid is not None
            }
        )

    async def on_session_start(self, event: SessionStarted) -> None:
        self.marks = []
        self._mark()

    async def on_stage1_complete(self, event: Stage1Completed) -> None:
        self._mark()

    async def on_stage2_complete(self, event: Stage2Completed) -> None:
        self._mark()

    async def on_session_end(self, event: SessionCompleted) -> dict[str, Any] | None:
        self._mark()
        return None

    def per_stage(self) -> dict[str, dict[str, float]]:
        """CPU seconds per stage and server (a server started mid-stage counts from 0)."""
        result: dict[str, dict[str, float]] = {}
        pairs = list(zip(self.marks, self.marks[1:], strict=False))
        for stage, (before, after) in zip(STAGES, pairs, strict=False):
            result[stage] = {
                model: round(after[model] - before.get(model, 0.0), 2) for model in after
            }
        return result


def critical_path_cpu_s(server_cpu_s: dict[str, dict[str, float]]) -> float:
    """The sum over stages of the busier server's CPU seconds in that stage."""
    return round(sum(max(stage.values(), default=0.0) for stage in server_cpu_s.values()), 2)


def run(config_path: Path, n_sessions: int) -> dict[str, Any]:
    config = load_council_config(config_path)
    sampler = ServerCpu()
    sessions: list[dict[str, Any]] = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as folder:
        os.environ["LLM_COUNCIL_BIAS_AUDIT"] = "true"
        os.environ["LLM_COUNCIL_BIAS_STORE"] = str(Path(folder) / "records.jsonl")
        middleware = [*discover_middleware(), sampler]
        try:
            for index in range(n_sessions):
                query = QUERIES[index % len(QUERIES)]
                started = time.perf_counter()
                result = asyncio.run(
                    run_full_council(query, config=config, seed=index + 1, middleware=middleware)
                )
                wall = time.perf_counter() - started
                audit = result.metadata.get("bias_audit") or {}
                stages = result.metadata.get("stage_durations_s", {})
                sessions.append(
                    {
                        "query": query,
                        "wall_s": round(wall, 2),
                        "stage_s": {s: round(stages.get(s, float("nan")), 2) for s in STAGES},
                        "server_cpu_s": sampler.per_stage(),
                        "answers_ok": sum(1 for a in result.stage1 if a.ok),
                        "reviews": len(result.stage2),
                        "reviews_parsed": sum(1 for r in result.stage2 if r.ok),
                        "review_failures": [
                            f"{r.reviewer}: {r.parse_error or r.error}"[:160]
                            for r in result.stage2
                            if not r.ok
                        ],
                        # what the model wrote, for a failure's cause (model text, no secrets)
                        "review_failure_texts": [
                            (r.raw_text or "")[:400] for r in result.stage2 if not r.ok
                        ],
                        "review_output_tokens": [r.output_tokens for r in result.stage2],
                        "answer_words": [len((a.text or "").split()) for a in result.stage1],
                        "synthesis_fallback": result.stage3.is_fallback,
                        "self_preference_tested": "self_preference"
                        in audit.get("risk_tests_run", []),
                        "load_average_1m": round(os.getloadavg()[0], 2),
                    }
                )
                print(json.dumps(sessions[-1]), file=sys.stderr, flush=True)
        finally:
            stop_shared_servers()
    return {
        "config": str(
            config_path.relative_to(REPO) if config_path.is_relative_to(REPO) else config_path
        ),
        "sessions": sessions,
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "cpus": os.cpu_count(),
    }


def summary(report: dict[str, Any]) -> str:
    """The first session, then medians over the rest (the warm sessions)."""
    sessions = report["sessions"]
    first, warm = sessions[0], sessions[1:] or sessions[:1]

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 1)

    models = sorted({m for s in sessions for stage in s["server_cpu_s"].values() for m in stage})
    lines = [
        f"config {report['config']}, {len(sessions)} sessions, {report['cpus']} CPUs, load "
        f"average before {report['load_average_before']}, after {report['load_average_after']}",
        f"first session (servers start): wall {first['wall_s']} s, stages {first['stage_s']}",
        "",
        f"| median of {len(warm)} sessions | answers | reviews | synthesis | session |",
        "|---|---|---|---|---|",
        "| wall (s) | "
        + " | ".join(str(median([s["stage_s"][st] for s in warm])) for st in STAGES)
        + f" | {median([s['wall_s'] for s in warm])} |",
    ]
    for model in models:
        cells = [
            str(median([s["server_cpu_s"].get(st, {}).get(model, 0.0) for s in warm]))
            for st in STAGES
        ]
        total = median(
            [sum(s["server_cpu_s"].get(st, {}).get(model, 0.0) for st in STAGES) for s in warm]
        )
        lines.append(f"| CPU of the {model} server (s) | " + " | ".join(cells) + f" | {total} |")
    lines.append(
        "| critical path, CPU (s): the busier server per stage | "
        + " | ".join(
            str(median([max(s["server_cpu_s"].get(st, {}).values(), default=0.0) for s in warm]))
            for st in STAGES
        )
        + f" | {median([critical_path_cpu_s(s['server_cpu_s']) for s in warm])} |"
    )
    lines += [
        "",
        f"sessions whose wall <= 25 s: {sum(s['wall_s'] <= 25 for s in warm)} of {len(warm)}; "
        f"load average 1 min during the warm sessions: "
        f"{min(s['load_average_1m'] for s in warm)}-{max(s['load_average_1m'] for s in warm)}",
        f"answers ok {sum(s['answers_ok'] for s in sessions)}, reviews parsed "
        f"{sum(s['reviews_parsed'] for s in sessions)} of {sum(s['reviews'] for s in sessions)}, "
        f"synthesis fallbacks {sum(s['synthesis_fallback'] for s in sessions)}, "
        f"self-preference tested in {sum(s['self_preference_tested'] for s in sessions)} "
        f"of {len(sessions)} sessions",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--json", type=Path, help="write the per-session figures here")
    args = parser.parse_args(argv)
    if args.sessions < 2:
        parser.error("--sessions must be >= 2 (the first session is reported on its own)")
    report = run(args.config.resolve(), args.sessions)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(summary(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
