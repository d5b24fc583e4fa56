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

    .venv/bin/python benchmarks/answer_cap_memory.py --http [--mb 50] [--members 5]

``--http`` measures the real path instead (issue 26 item 7): ``openai:`` members, the
official SDK and its HTTP client, against a loopback chat-completions server in a
process of its own (``tests/fakes/council_server.py``) whose ``huge`` model answers
``--mb`` MB. The SDK reads and parses the whole body before the council sees the text,
so the cap cannot help there; the run also measures a session whose ``huge`` member
answers briefly, to tell the answer's share of the peak RSS from the SDK's own.
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
from pathlib import Path

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


_SERVER = """
import sys
sys.path.insert(0, {tests!r})
from fakes.council_server import CouncilServer
from fakes.loopback_http import Reply, openai_completion_body

class HugeAnswer(CouncilServer):
    def choose_reply(self, request):
        body = request.body if isinstance(request.body, dict) else {{}}
        prompt = "\\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
        if body.get("model") == "huge" and "<<<CANDIDATE " not in prompt:
            return Reply(200, openai_completion_body("x" * {chars}, "huge"), delay_s=0.05)
        return super().choose_reply(request)

server = HugeAnswer(delay_s=0.05)
server.start()
print(server.base_url, flush=True)
sys.stdin.read()
"""


def _measure_http(mb: int, members: int, cap: int, traced: bool) -> dict[str, float]:
    """One session of ``openai:`` members against the loopback server (a child process)."""
    tests = str(Path(__file__).resolve().parents[1] / "tests")
    code = _SERVER.format(tests=tests, chars=mb * 1_000_000 or 20)  # 0: a brief answer
    server = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        options = {"base_url": base_url}
        names = ["huge", *(f"m{i}" for i in range(1, members))]
        config = CouncilConfig(
            members=tuple(
                CouncilMember(name=n, spec=f"openai:{n}", options=options) for n in names
            ),
            chairman=CouncilMember(name="chair", spec="openai:chair", options=options),
            max_answer_chars=cap,
        )
        import os

        os.environ.setdefault("OPENAI_API_KEY", "not-needed")
        import openai  # noqa: F401  (imported before the baseline: its size is not the answer's)

        baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        if traced:
            tracemalloc.start()
        started = time.perf_counter()
        result = asyncio.run(run_full_council("q", config=config, seed=1, middleware=[]))
        elapsed = time.perf_counter() - started
        peak = tracemalloc.get_traced_memory()[1] if traced else 0
        tracemalloc.stop()
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=60)
    assert result.metadata["degraded"] == [], result.metadata["degraded"]
    return {
        "cap": cap,
        "truncated": len(result.metadata["truncated_answers"]),
        "traced_peak_mb": round(peak / 1e6, 1),
        "rss_before_session_mb": round(baseline, 1),
        "max_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "session_s": round(elapsed, 2),
    }


def _child(args: list[str]) -> dict[str, float]:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=True
    )
    return dict(json.loads(done.stdout))


def _main_http(mb: int, members: int) -> None:
    print(f"real OpenAI SDK over loopback HTTP: one member answers {mb} MB; {members} members")
    base = ["--http", "--members", str(members), "--child-cap", "100000"]
    for label, size, traced in (
        ("brief answer (baseline)", 0, False),
        (f"{mb} MB answer", mb, False),
        (f"{mb} MB answer, tracemalloc", mb, True),
    ):
        row = _child([*base, "--mb", str(size), *(["--traced"] if traced else [])])
        print(
            f"{label:30s} max RSS {row['max_rss_mb']:7.1f} MB (before the session "
            f"{row['rss_before_session_mb']:6.1f})   traced peak {row['traced_peak_mb']:7.1f} MB"
            f"   session {row['session_s']:5.2f} s   answers cut: {row['truncated']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50)
    parser.add_argument("--members", type=int, default=5)
    parser.add_argument("--http", action="store_true", help="the real SDK over HTTP")
    parser.add_argument("--child-cap", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--traced", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.http and args.child_cap is not None:
        print(json.dumps(_measure_http(args.mb, args.members, args.child_cap, args.traced)))
        return
    if args.http:
        _main_http(args.mb, args.members)
        return
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
