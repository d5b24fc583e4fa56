"""Benchmark: is a council through the real OpenAI SDK as concurrent as its stages allow?

Every member and the chairman is an ``openai:`` provider (the official SDK and its HTTP
client) pointed at a loopback OpenAI-compatible server, in its own process, that answers
every call after 100 ms (``tests/fakes/council_server.py``). The ideal session is
3 stages x 100 ms = 0.300 s; the target ratio wall / ideal is <= 1.10 for 5 and 12
members. Sessions run back to back on one event loop, as in a service; the first one
(which builds the SDK client) is reported on its own. The CLI ``ask`` process is timed
too, start-up included, against the same server.

    .venv/bin/python benchmarks/council_concurrency.py [--members 5 12] [--sessions 10]
        [--ask-runs 3] [--structured-output native|nonce|default]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from llm_council import CouncilConfig, CouncilMember, run_full_council
from llm_council.log_setup import configure_logging

LATENCY_S = 0.100
IDEAL_S = 3 * LATENCY_S
REPO = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "llm-council")  # the console script users run


def start_server(latency_s: float) -> tuple[subprocess.Popen[str], str]:
    """The council server in a child process (so it never shares our GIL); its base URL."""
    code = (
        "import sys, time\n"
        f"sys.path.insert(0, {str(REPO / 'tests')!r})\n"
        "from fakes.council_server import CouncilServer\n"
        f"server = CouncilServer(delay_s={latency_s!r})\n"
        "server.start()\n"
        "print(server.base_url, flush=True)\n"
        "sys.stdin.read()\n"  # serve until the parent closes our stdin
    )
    process = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def member_options(base_url: str, structured_output: str) -> dict[str, str]:
    options = {"base_url": base_url}
    if structured_output != "default":
        options["structured_output"] = structured_output
    return options


def council(members: int, base_url: str, structured_output: str) -> CouncilConfig:
    options = member_options(base_url, structured_output)
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=f"m{i}", spec=f"openai:model-{i}", options=options)
            for i in range(members)
        ),
        chairman=CouncilMember(name="chair", spec="openai:chair", options=options),
    )


async def measure(config: CouncilConfig, sessions: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds (this process) of each session, run back to back."""
    walls, cpus = [], []
    for seed in range(sessions):
        started, cpu_started = time.perf_counter(), time.process_time()
        result = await run_full_council(
            "How do I reduce tail latency?", config=config, seed=seed, middleware=[]
        )
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu_started)
        if result.metadata["degraded"]:
            raise SystemExit(f"a session degraded: {result.metadata['degraded']}")
    return walls, cpus


async def transport_floor(base_url: str, members: int, rounds: int) -> float:
    """Median wall time of 3 rounds of ``members + 1`` concurrent raw HTTP/1.1 POSTs.

    The same server, kept-alive connections, no SDK and no council: what this machine and
    server allow for a session's three stages, so the council's ratio to it shows our own
    overhead apart from the machine's (under load, wake-ups add milliseconds per call).
    """
    host_port = base_url.split("//", 1)[1].split("/", 1)[0]
    host, port = host_port.rsplit(":", 1)
    body = b'{"model": "floor", "messages": [{"role": "user", "content": "hi"}]}'
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {host_port}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    ).encode() + body
    streams = [await asyncio.open_connection(host, int(port)) for _ in range(members + 1)]

    async def post(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(request)
        await writer.drain()
        headers = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in headers.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)

    walls = []
    for _ in range(rounds):
        started = time.perf_counter()
        for _stage in range(3):
            await asyncio.gather(*(post(r, w) for r, w in streams))
        walls.append(time.perf_counter() - started)
    for _, writer in streams:
        writer.close()
    return statistics.median(walls)


def config_toml(members: int, base_url: str, structured_output: str) -> str:
    options = ", ".join(
        f'{k} = "{v}"' for k, v in member_options(base_url, structured_output).items()
    )
    rows = "\n".join(
        f'  {{ name = "m{i}", spec = "openai:model-{i}", options = {{ {options} }} }},'
        for i in range(members)
    )
    return (
        f"[council]\nmembers = [\n{rows}\n]\n"
        f'chairman = {{ name = "chair", spec = "openai:chair", options = {{ {options} }} }}\n'
    )


def time_ask(members: int, base_url: str, structured_output: str, runs: int) -> list[float]:
    """Wall time of whole ``llm-council ask`` processes, interpreter start-up included."""
    walls = []
    env = {**os.environ, "LLM_COUNCIL_BIAS_AUDIT": "false"}
    env.pop("OPENAI_API_KEY", None)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "council.toml"
        path.write_text(config_toml(members, base_url, structured_output))
        command = [CLI, "ask", "How do I cut p99?"]
        command += ["--config", str(path), "--log-level", "warning"]
        for seed in range(runs):
            started = time.perf_counter()
            done = subprocess.run(
                [*command, "--seed", str(seed)], env=env, capture_output=True, text=True
            )
            walls.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(f"ask failed: {done.stderr.strip()[-500:]}")
    return walls


def startup_s(runs: int) -> float:
    """Median wall time of ``llm-council --help``: the process start-up alone."""
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([CLI, "--help"], capture_output=True, check=True)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[5, 12])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--ask-runs", type=int, default=3)
    parser.add_argument(
        "--structured-output", choices=("native", "nonce", "default"), default="native"
    )
    args = parser.parse_args()
    configure_logging(level="WARNING")
    server, base_url = start_server(LATENCY_S)
    try:
        print(
            f"real OpenAI SDK -> loopback server in its own process, {LATENCY_S * 1000:.0f} ms "
            f"per call; ideal session {IDEAL_S:.3f} s; structured_output={args.structured_output}"
        )
        for members in args.members:
            config = council(members, base_url, args.structured_output)
            floor = asyncio.run(transport_floor(base_url, members, args.sessions))
            walls, cpus = asyncio.run(measure(config, args.sessions))
            warm = walls[1:] or walls
            median = statistics.median(warm)
            print(
                f"members={members:>2} max_concurrency={config.max_concurrency} "
                f"sessions={args.sessions}: first {walls[0]:.3f} s "
                f"({walls[0] / IDEAL_S:.2f}x); then median {median:.3f} s, "
                f"min {min(warm):.3f}, max {max(warm):.3f}; "
                f"ratio {median / IDEAL_S:.3f}x (target <= 1.10); "
                f"CPU per session {statistics.median(cpus[1:] or cpus):.3f} s"
            )
            print(
                f"members={members:>2} transport floor (3 rounds of {members + 1} raw "
                f"concurrent POSTs): {floor:.3f} s ({floor / IDEAL_S:.3f}x ideal); "
                f"council / floor: {median / floor:.3f}x"
            )
            if args.ask_runs:
                asks = time_ask(members, base_url, args.structured_output, args.ask_runs)
                ask = statistics.median(asks)
                print(
                    f"members={members:>2} `llm-council ask` process, start-up included: "
                    f"median {ask:.3f} s over {len(asks)} runs ({ask / IDEAL_S:.2f}x ideal)"
                )
        if args.ask_runs:
            print(f"start-up alone (`llm-council --help`): median {startup_s(3):.3f} s")
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
