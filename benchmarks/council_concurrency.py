"""Benchmark: is a council through the real OpenAI SDK as concurrent as its stages allow?

Every member and the chairman is an ``openai:`` provider (the official SDK and its HTTP
client) pointed at a loopback OpenAI-compatible server, in its own process, that answers
every call after 100 ms (``tests/fakes/council_server.py``). The ideal session is
3 stages x 100 ms = 0.300 s; the target ratio wall / ideal is <= 1.10 for 5 and 12
members. Sessions run back to back on one event loop, as in a service; the first one
(which imports nothing more but builds the SDK client) is reported on its own.

To show where the time above the ideal goes, each council session is interleaved with
three floors that send the very request bodies of a recorded session, stage by stage
(N answers, N reviews, 1 synthesis, each stage's calls at once), against the same server:

- ``sockets``: raw HTTP/1.1 on kept-alive asyncio streams (what the machine and server allow);
- ``httpx``: the SDK's own HTTP client class (``openai.DefaultAsyncHttpxClient``);
- ``sdk``: ``AsyncOpenAI.post`` exactly as the provider calls it, without the council.

So council - sdk is our core's cost, sdk - httpx the SDK's, httpx - sockets the HTTP
client's, and sockets - ideal the machine's (scheduling under load). Every row is measured
in the same rounds, side by side; the load average is printed with them. The CLI ``ask``
process is timed too, start-up included, against the same server.

    .venv/bin/python benchmarks/council_concurrency.py [--members 5 12] [--sessions 15]
        [--ask-runs 3] [--structured-output native|nonce|default] [--http-client httpx aiohttp]

Each size runs once per HTTP client (``http_client`` option, ADR 0034): the SDK's httpx
client and its aiohttp transport (the default whenever aiohttp is installed, ADR 0035); the
floors use the same client as the council. CPU per call is this process's CPU (the
server's is not counted); the wall ratio is the target.
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
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import openai

from llm_council import CouncilConfig, CouncilMember, run_full_council
from llm_council.infra.log_setup import configure_logging
from llm_council.providers.base import CompletionRequest
from llm_council.providers.client_pool import http_library, stainless_http_client
from llm_council.providers.openai_sdk import OpenAIProvider, chat_completions_url, decoded_body
from llm_council.providers.provider_setup import default_http_client
from llm_council.providers.registry import register_provider, unregister_provider

LATENCY_S = 0.100
IDEAL_S = 3 * LATENCY_S
REPO = Path(__file__).resolve().parent.parent
CLI = str(Path(sys.executable).parent / "llm-council")  # the console script users run
QUERY = "How do I reduce tail latency?"
KEY = "not-needed"  # the loopback server checks no key; the SDK's placeholder for local servers

Stages = list[list[dict[str, Any]]]  # per stage, the JSON bodies of its calls
RESPONSE_CLASS = http_library(openai.DefaultAsyncHttpxClient).Response


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


def member_options(base_url: str, structured_output: str, http_client: str) -> dict[str, str]:
    options = {"base_url": base_url, "http_client": http_client}
    if structured_output != "default":
        options["structured_output"] = structured_output
    return options


def council(
    members: int, base_url: str, structured_output: str, http_client: str, prefix: str = "openai"
) -> CouncilConfig:
    options = member_options(base_url, structured_output, http_client)
    return CouncilConfig(
        members=tuple(
            CouncilMember(name=f"m{i}", spec=f"{prefix}:model-{i}", options=options)
            for i in range(members)
        ),
        chairman=CouncilMember(name="chair", spec=f"{prefix}:chair", options=options),
    )


async def record_bodies(
    members: int, base_url: str, structured_output: str, http_client: str
) -> Stages:
    """The request bodies of one session, by stage, as the OpenAI provider builds them."""
    recorded: dict[str, list[dict[str, Any]]] = {"answer": [], "review": [], "synthesize": []}

    class RecordingProvider(OpenAIProvider):
        def request_arguments(self, request: CompletionRequest) -> dict[str, Any]:
            arguments = super().request_arguments(request)
            recorded[request.task].append(arguments)
            return arguments

    register_provider("recording", lambda name, options: RecordingProvider(name, **options))
    try:
        config = council(members, base_url, structured_output, http_client, prefix="recording")
        await run_full_council(QUERY, config=config, seed=0, middleware=[])
    finally:
        unregister_provider("recording")
    return [recorded["answer"], recorded["review"], recorded["synthesize"]]


class SocketFloor:
    """Raw HTTP/1.1 POSTs on kept-alive asyncio streams: no HTTP client, no SDK."""

    def __init__(self, base_url: str, stages: Stages) -> None:
        host_port = base_url.split("//", 1)[1].split("/", 1)[0]
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)
        path = "/" + base_url.split("//", 1)[1].split("/", 1)[1] + "/chat/completions"
        self.requests = [
            [self._encode(path, host_port, body) for body in bodies] for bodies in stages
        ]
        self.streams: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    @staticmethod
    def _encode(path: str, host_port: str, body: dict[str, Any]) -> bytes:
        import json

        payload = json.dumps(body).encode()
        head = (
            f"POST {path} HTTP/1.1\r\nHost: {host_port}\r\nContent-Type: application/json\r\n"
            f"Authorization: Bearer {KEY}\r\nContent-Length: {len(payload)}\r\n\r\n"
        )
        return head.encode() + payload

    async def session(self) -> None:
        width = max(len(stage) for stage in self.requests)
        while len(self.streams) < width:
            self.streams.append(await asyncio.open_connection(self.host, self.port))
        for stage in self.requests:
            await asyncio.gather(*(self._post(*self.streams[i], r) for i, r in enumerate(stage)))

    @staticmethod
    async def _post(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: bytes
    ) -> None:
        writer.write(request)
        headers = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":", 1)[1])
            for line in headers.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)

    def close(self) -> None:
        for _, writer in self.streams:
            writer.close()


class HttpxFloor:
    """The SDK's own HTTP client class posting the same JSON: HTTP client, no SDK.

    One client per call slot, as the providers have one per model (small pools, ADR 0031);
    the SDK's httpx client or its aiohttp transport, as the council uses (ADR 0034).
    """

    def __init__(self, base_url: str, stages: Stages, http_client: str) -> None:
        width = max(len(stage) for stage in stages)
        self.clients = [stainless_http_client(openai, http_client) for _ in range(width)]
        self.url = f"{base_url}/chat/completions"
        self.stages = stages

    async def session(self) -> None:
        for stage in self.stages:
            await asyncio.gather(*(self._post(i, body) for i, body in enumerate(stage)))

    async def _post(self, slot: int, body: dict[str, Any]) -> Any:
        response = await self.clients[slot].post(
            self.url, json=body, headers={"Authorization": f"Bearer {KEY}"}
        )
        response.raise_for_status()
        return response.json()

    async def close(self) -> None:
        for client in self.clients:
            await client.aclose()


class SdkFloor:
    """``AsyncOpenAI.post`` as the provider calls it (a client per slot): the SDK, no council."""

    def __init__(self, base_url: str, stages: Stages, http_client: str) -> None:
        width = max(len(stage) for stage in stages)
        self.clients = [
            openai.AsyncOpenAI(
                api_key=KEY,
                base_url=base_url,
                max_retries=0,
                http_client=stainless_http_client(openai, http_client),
            )
            for _ in range(width)
        ]
        self.stages = stages

    async def session(self) -> None:
        for stage in self.stages:
            await asyncio.gather(*(self._post(i, body) for i, body in enumerate(stage)))

    async def _post(self, slot: int, body: dict[str, Any]) -> object:
        # exactly the provider's call (ADR 0035): its absolute URL, the raw response decoded
        client = self.clients[slot]
        response = await client.post(
            chat_completions_url(client),
            body=body,
            cast_to=RESPONSE_CLASS,
            options={"security": {"bearer_auth": True}},
        )
        return decoded_body(response)

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


async def timed(run: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """Wall and CPU seconds (this process) of one awaited run."""
    started, cpu_started = time.perf_counter(), time.process_time()
    await run()
    return time.perf_counter() - started, time.process_time() - cpu_started


async def measure_size(
    members: int, base_url: str, structured_output: str, sessions: int, http_client: str
) -> dict[str, Any]:
    """Council sessions and the three floors, interleaved round by round on one loop."""
    config = council(members, base_url, structured_output, http_client)
    first_wall, _ = await timed(
        lambda: run_full_council(QUERY, config=config, seed=10_000, middleware=[])
    )
    stages = await record_bodies(members, base_url, structured_output, http_client)
    sockets, httpx, sdk = (
        SocketFloor(base_url, stages),
        HttpxFloor(base_url, stages, http_client),
        SdkFloor(base_url, stages, http_client),
    )
    rows: dict[str, list[tuple[float, float]]] = {
        "sockets": [],
        "httpx": [],
        "sdk": [],
        "council": [],
    }
    stage_walls: list[dict[str, float]] = []
    load_before = os.getloadavg()[0]

    async def one_session(seed: int) -> None:
        result = await run_full_council(QUERY, config=config, seed=seed, middleware=[])
        if result.metadata["degraded"]:
            raise SystemExit(f"a session degraded: {result.metadata['degraded']}")
        stage_walls.append(result.metadata["stage_durations_s"])

    try:
        for warm_up in (True, False):
            for seed in range(2 if warm_up else sessions):
                for name, run in (
                    ("sockets", sockets.session),
                    ("httpx", httpx.session),
                    ("sdk", sdk.session),
                    ("council", lambda seed=seed: one_session(seed)),
                ):
                    measured = await timed(run)
                    if not warm_up:
                        rows[name].append(measured)
            if warm_up:
                stage_walls.clear()
    finally:
        sockets.close()
        await httpx.close()
        await sdk.close()
    return {
        "first": first_wall,
        "rows": rows,
        "stages": stage_walls,
        "calls": sum(len(stage) for stage in stages),
        "load": (load_before, os.getloadavg()[0]),
        "max_concurrency": config.max_concurrency,
    }


def report_size(members: int, measured: dict[str, Any], http_client: str) -> None:
    rows = measured["rows"]
    wall = {name: statistics.median(w for w, _ in row) for name, row in rows.items()}
    cpu = {name: statistics.median(c for _, c in row) for name, row in rows.items()}
    load_from, load_to = measured["load"]
    calls = measured["calls"]
    print(
        f"members={members:>2} ({calls} calls a session, max_concurrency="
        f"{measured['max_concurrency']}, {len(rows['council'])} interleaved rounds, "
        f"load average {load_from:.1f} -> {load_to:.1f})"
    )
    print(
        f"  first council session (builds the SDK client): {measured['first']:.3f} s "
        f"({measured['first'] / IDEAL_S:.2f}x)"
    )
    labels = {
        "sockets": "floor: raw asyncio sockets",
        "httpx": f"floor: SDK's {http_client} client",
        "sdk": "floor: AsyncOpenAI.post",
        "council": "council (run_full_council)",
    }
    for name, label in labels.items():
        walls = [w for w, _ in rows[name]]
        print(
            f"  {label:<28} median {wall[name]:.3f} s = {wall[name] / IDEAL_S:.3f}x ideal "
            f"(min {min(walls):.3f}, max {max(walls):.3f}); "
            f"CPU {cpu[name] * 1000:5.1f} ms/session = {cpu[name] * 1000 / calls:.2f} ms/call"
        )
    print(
        f"  council ratio {wall['council'] / IDEAL_S:.3f}x ideal (target <= 1.10); "
        f"council / httpx floor {wall['council'] / wall['httpx']:.3f}x; "
        f"council / sdk floor {wall['council'] / wall['sdk']:.3f}x"
    )
    excess = {
        "machine (sockets - ideal)": wall["sockets"] - IDEAL_S,
        "HTTP client (httpx - sockets)": wall["httpx"] - wall["sockets"],
        "SDK (sdk - httpx)": wall["sdk"] - wall["httpx"],
        "council core (council - sdk)": wall["council"] - wall["sdk"],
    }
    print(
        "  where the time above the ideal goes (differences of medians, ms): "
        + "; ".join(f"{name} {seconds * 1000:+.0f}" for name, seconds in excess.items())
    )
    per_stage = {
        stage: statistics.median(s[stage] for s in measured["stages"])
        for stage in ("stage1", "stage2", "stage3")
    }
    print(
        "  council stage walls (median, s): "
        + ", ".join(f"{stage} {seconds:.3f}" for stage, seconds in per_stage.items())
    )


def config_toml(members: int, base_url: str, structured_output: str, http_client: str) -> str:
    options = ", ".join(
        f'{k} = "{v}"' for k, v in member_options(base_url, structured_output, http_client).items()
    )
    rows = "\n".join(
        f'  {{ name = "m{i}", spec = "openai:model-{i}", options = {{ {options} }} }},'
        for i in range(members)
    )
    return (
        f"[council]\nmembers = [\n{rows}\n]\n"
        f'chairman = {{ name = "chair", spec = "openai:chair", options = {{ {options} }} }}\n'
    )


def time_ask(
    members: int, base_url: str, structured_output: str, runs: int, http_client: str
) -> list[float]:
    """Wall time of whole ``llm-council ask`` processes, interpreter start-up included."""
    walls = []
    env = {**os.environ, "LLM_COUNCIL_BIAS_AUDIT": "false"}
    env.pop("OPENAI_API_KEY", None)
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "council.toml"
        path.write_text(config_toml(members, base_url, structured_output, http_client))
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


def median_process_s(command: list[str], runs: int) -> float:
    """Median wall time of a short process (start-up costs)."""
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, nargs="+", default=[5, 12])
    parser.add_argument("--sessions", type=int, default=15)
    parser.add_argument("--ask-runs", type=int, default=3)
    parser.add_argument(
        "--structured-output", choices=("native", "nonce", "default"), default="native"
    )
    parser.add_argument(
        "--http-client",
        nargs="+",
        choices=("httpx", "aiohttp"),
        default=["httpx", "aiohttp"],
        help="the SDK's HTTP client(s) to measure (ADR 0034)",
    )
    args = parser.parse_args()
    configure_logging(level="WARNING")
    server, base_url = start_server(LATENCY_S)
    try:
        print(
            f"real OpenAI SDK {openai.__version__} -> loopback server in its own process, "
            f"{LATENCY_S * 1000:.0f} ms per call; ideal session {IDEAL_S:.3f} s; "
            f"structured_output={args.structured_output}; {os.cpu_count()} CPUs"
        )
        default = default_http_client(openai)
        for http_client in args.http_client:
            print(
                f"--- http_client={http_client}"
                + (" (the default)" if http_client == default else "")
            )
            for members in args.members:
                measured = asyncio.run(
                    measure_size(
                        members, base_url, args.structured_output, args.sessions, http_client
                    )
                )
                report_size(members, measured, http_client)
        if args.ask_runs:
            print("CLI processes (start-up included), median of runs:")
            for http_client in args.http_client:
                for members in args.members:
                    asks = time_ask(
                        members, base_url, args.structured_output, args.ask_runs, http_client
                    )
                    ask = statistics.median(asks)
                    print(
                        f"  members={members:>2} http_client={http_client} `llm-council ask`: "
                        f"{ask:.3f} s over {len(asks)} runs ({ask / IDEAL_S:.2f}x ideal), "
                        f"load {os.getloadavg()[0]:.1f}"
                    )
            runs = args.ask_runs
            print(
                f"  start-up alone (`llm-council --help`): "
                f"{median_process_s([CLI, '--help'], runs):.3f} s; "
                f"`python -c 'import openai'`: "
                f"{median_process_s([sys.executable, '-c', 'import openai'], runs):.3f} s; "
                f"`python -c pass`: {median_process_s([sys.executable, '-c', 'pass'], runs):.3f} s"
            )
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
