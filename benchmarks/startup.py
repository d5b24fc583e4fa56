"""Benchmark: CLI start-up and the audited ``ask`` against a plain one (ADR 0029, ADR 0063).

Targets: ``llm-council --help`` median <= 0.4 s; ``ask --bias-audit`` on the simulated
council <= 1.2x a plain ``ask`` in process wall time (ratio of the medians of paired runs)
and <= +30 MiB peak RSS.

Part 1, start-up: each command ``--runs`` times, interleaved round by round so machine load
hits all alike; the median wall time of each, its ratio to ``python -c pass`` (the
interpreter's own start-up, the floor) and the load average, since on a shared machine the
absolute numbers move with it:

- ``python -c pass``
- ``llm-council --help`` (printed from the command table, no typer/rich import)
- ``llm-council ask --help`` and ``llm-council bias-report --help`` (typer, rich and the
  command's module)
- ``python -c 'import numpy'`` and ``python -c 'import numpy, scipy.special'``: the
  audit's floor (numpy) and what ``scipy.special`` would add to it, which the session path
  no longer imports (ADR 0063)

Part 2, the paired ``ask`` (``--ask-runs`` pairs, 0 to skip): ``llm-council ask QUESTION
--seed 1`` with and without ``--bias-audit`` on the offline simulated council (no key in the
environment, no ``--config``), the two runs of a pair back to back, their order alternating
from pair to pair. Each audited run writes to a fresh store in a temporary directory
(``LLM_COUNCIL_BIAS_STORE``): a first session, with no history to read. Per run: wall time
(``time.perf_counter`` around the child), the child's CPU time (user + system) and its peak
RSS (``ru_maxrss`` from ``os.wait4``, the child's own ``getrusage``). Printed: the medians,
the ratio of the median walls (the target's figure) and the median of the per-pair ratios.

Part 3, pricing (``--price-runs`` pairs, 0 to skip): what ``genai-prices`` adds to a
real-provider ``ask``, which has imported its SDK before the first call is priced: ``import
openai`` against ``import openai`` plus pricing one ``openai:gpt-4o`` call through
``llm_council.call_pricing.price_usd`` (the table's import and first lookup), paired and
interleaved like part 2; CPU and wall medians and the median paired difference.

    .venv/bin/python benchmarks/startup.py [--runs 15] [--ask-runs 15] [--price-runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TARGET_S = 0.4
ASK_RATIO_TARGET = 1.2
ASK_RSS_TARGET_MIB = 30.0
QUESTION = "How should a small team start measuring the reliability of its service?"

SCRIPT = str(Path(sys.executable).with_name("llm-council"))
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "llm-council --help": [SCRIPT, "--help"],
    "llm-council ask --help": [SCRIPT, "ask", "--help"],
    "llm-council bias-report --help": [SCRIPT, "bias-report", "--help"],
    # the audit's floor is numpy: its tails are stats/numerics/special_functions.py since
    # scipy.special's
    # import clones numpy's namespace (numpy.f2py, numpy.ma, numpy.testing; ADR 0063), the
    # second row is what that saves
    "python -c 'import numpy'": [sys.executable, "-c", "import numpy"],
    "... 'import numpy, scipy.special'": [sys.executable, "-c", "import numpy, scipy.special"],
}
#: variables that would make ``ask`` leave the simulated council or the audit's default
_ASK_ENV_DROPPED = (
    "LLM_COUNCIL_CONFIG",
    "LLM_COUNCIL_BIAS_AUDIT",
    "BIAS_AUDIT_ENABLED",  # the reference council's switch, which ours honours (ADR 0015)
    "LLM_COUNCIL_BIAS_STORE",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "OTEL_TRACES_EXPORTER",
)


@dataclass(frozen=True)
class ChildRun:
    """One child process: wall seconds, CPU seconds (user + system), peak RSS in MiB."""

    wall_s: float
    cpu_s: float
    peak_rss_mib: float


def base_environment() -> dict[str, str]:
    """This environment, but writing ``.pyc`` files: an installed package has them, so the
    warm-up run leaves them and no timed run compiles source."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def run_child(command: list[str], env: dict[str, str] | None = None) -> ChildRun:
    """Run ``command`` to completion (output discarded); fail loudly on a non-zero exit."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=base_environment() if env is None else env,
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited with {child.returncode}")
    # ru_maxrss is in KiB on Linux
    return ChildRun(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024)


def startup(runs: int) -> None:
    """Part 1: the start-up medians (see the module)."""
    for command in COMMANDS.values():  # warm the page cache and .pyc files
        run_child(command)
    results: dict[str, list[ChildRun]] = {label: [] for label in COMMANDS}
    for _ in range(runs):
        for label, command in COMMANDS.items():
            results[label].append(run_child(command))
    floor = statistics.median(run.wall_s for run in results["python -c pass"])
    print(
        f"runs={runs} (interleaved); load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    for label, label_runs in results.items():
        median = statistics.median(run.wall_s for run in label_runs)
        cpu = statistics.median(run.cpu_s for run in label_runs)
        line = (
            f"{label:34s} median {median:.3f} s  ({median / floor:5.1f}x python -c pass)  "
            f"CPU {cpu:.3f} s"
        )
        if label == "llm-council --help":
            line += f"  target <= {TARGET_S:g} s: {'met' if median <= TARGET_S else 'NOT met'}"
        print(line)


def ask_environment(store: Path | None) -> dict[str, str]:
    """The environment of an ``ask`` run: the simulated council, the audit's store in ``store``."""
    env = {key: value for key, value in base_environment().items() if key not in _ASK_ENV_DROPPED}
    if store is not None:
        env["LLM_COUNCIL_BIAS_STORE"] = str(store)
    return env


def paired_ask(runs: int) -> None:
    """Part 2: plain against audited ``ask``, paired (see the module)."""
    plain_command = [SCRIPT, "ask", QUESTION, "--seed", "1"]
    audited_command = [*plain_command, "--bias-audit"]
    results: dict[str, list[ChildRun]] = {"plain": [], "audited": []}
    with tempfile.TemporaryDirectory(prefix="startup-ask-") as scratch:
        # warm the page cache and .pyc files on both paths
        run_child(plain_command, ask_environment(None))
        run_child(audited_command, ask_environment(Path(scratch, "warm", "records.jsonl")))
        for pair in range(runs):
            store = Path(scratch, f"pair-{pair}", "records.jsonl")
            order = ["plain", "audited"] if pair % 2 == 0 else ["audited", "plain"]
            for kind in order:
                if kind == "plain":
                    results[kind].append(run_child(plain_command, ask_environment(None)))
                else:
                    results[kind].append(run_child(audited_command, ask_environment(store)))
        if not Path(scratch, "pair-0", "records.jsonl").is_file():
            raise SystemExit("the audited ask wrote no records: was the audit on?")
    plain, audited = results["plain"], results["audited"]
    plain_wall = statistics.median(run.wall_s for run in plain)
    audited_wall = statistics.median(run.wall_s for run in audited)
    ratio = audited_wall / plain_wall
    pair_ratio = statistics.median(
        left.wall_s / right.wall_s for left, right in zip(audited, plain, strict=True)
    )
    plain_rss = statistics.median(run.peak_rss_mib for run in plain)
    audited_rss = statistics.median(run.peak_rss_mib for run in audited)
    print(
        f"\nask on the simulated council: {runs} pairs, order alternating; load average "
        f"{os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"
    )
    for label, kind_runs in (("ask", plain), ("ask --bias-audit", audited)):
        print(
            f"{label:18s} wall median {statistics.median(r.wall_s for r in kind_runs):.3f} s  "
            f"CPU median {statistics.median(r.cpu_s for r in kind_runs):.3f} s  "
            f"peak RSS median {statistics.median(r.peak_rss_mib for r in kind_runs):.1f} MiB"
        )
    cpu_ratio = statistics.median(r.cpu_s for r in audited) / statistics.median(
        r.cpu_s for r in plain
    )
    met = "met" if ratio <= ASK_RATIO_TARGET else "NOT met"
    print(
        f"audited / plain: wall {ratio:.2f}x (median of pairs {pair_ratio:.2f}x; "
        f"target <= {ASK_RATIO_TARGET:g}x: {met}); CPU "
        f"{cpu_ratio:.2f}x"
    )
    extra = audited_rss - plain_rss
    met = "met" if extra <= ASK_RSS_TARGET_MIB else "NOT met"
    print(f"peak RSS +{extra:.1f} MiB (target <= +{ASK_RSS_TARGET_MIB:g} MiB: {met})")


PRICE_COMMANDS: dict[str, list[str]] = {
    "import openai": [sys.executable, "-c", "import openai"],
    "import openai + price one call": [
        sys.executable,
        "-c",
        "import openai\n"
        "from llm_council.call_pricing import price_usd\n"
        "cost, why = price_usd('openai:gpt-4o', 1000, 100, {})\n"
        "assert cost is not None, why",
    ],
}


def pricing_cost(runs: int) -> None:
    """Part 3: what pricing the first call with ``genai-prices`` adds (see the module)."""
    for command in PRICE_COMMANDS.values():  # warm, and fail early without the extra
        run_child(command)
    results: dict[str, list[ChildRun]] = {label: [] for label in PRICE_COMMANDS}
    labels = list(PRICE_COMMANDS)
    for pair in range(runs):
        for label in labels if pair % 2 == 0 else labels[::-1]:
            results[label].append(run_child(PRICE_COMMANDS[label]))
    print(f"\npricing: {runs} pairs; load average {os.getloadavg()[0]:.2f}")
    for label, kind_runs in results.items():
        print(
            f"{label:32s} wall median {statistics.median(r.wall_s for r in kind_runs):.3f} s  "
            f"CPU median {statistics.median(r.cpu_s for r in kind_runs):.3f} s"
        )
    base, priced = results[labels[0]], results[labels[1]]
    wall = statistics.median(p.wall_s - b.wall_s for p, b in zip(priced, base, strict=True))
    cpu = statistics.median(p.cpu_s - b.cpu_s for p, b in zip(priced, base, strict=True))
    print(f"genai-prices import + first lookup: +{wall:.3f} s wall, +{cpu:.3f} s CPU (median)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds of the start-up commands")
    parser.add_argument(
        "--ask-runs", type=int, default=15, help="pairs of plain/audited ask (0: skip)"
    )
    parser.add_argument(
        "--price-runs", type=int, default=15, help="pairs of the pricing measurement (0: skip)"
    )
    args = parser.parse_args()
    if not Path(SCRIPT).exists():
        raise SystemExit(f"no {SCRIPT}: install the package (pip install -e .) first")
    if args.runs < 1 or args.ask_runs < 0 or args.price_runs < 0:
        raise SystemExit("--runs must be >= 1, --ask-runs and --price-runs >= 0")
    startup(args.runs)
    if args.ask_runs:
        paired_ask(args.ask_runs)
    if args.price_runs:
        pricing_cost(args.price_runs)


if __name__ == "__main__":
    main()
