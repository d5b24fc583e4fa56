"""Benchmark: CLI start-up (target: ``llm-council --help`` median <= 0.4 s).

Runs each command ``--runs`` times, interleaved round by round so machine load hits all
alike, and prints the median wall time of each, its ratio to ``python -c pass`` (the
interpreter's own start-up, the floor) and the load average, since on a shared machine
the absolute numbers move with it:

- ``python -c pass``
- ``llm-council --help`` (printed from the command table, no typer/rich import)
- ``llm-council ask --help`` and ``llm-council bias-report --help`` (typer, rich and the
  command's module)

    .venv/bin/python benchmarks/startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.4

SCRIPT = str(Path(sys.executable).with_name("llm-council"))
COMMANDS: dict[str, list[str]] = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "llm-council --help": [SCRIPT, "--help"],
    "llm-council ask --help": [SCRIPT, "ask", "--help"],
    "llm-council bias-report --help": [SCRIPT, "bias-report", "--help"],
}


def time_once(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    if not Path(SCRIPT).exists():
        raise SystemExit(f"no {SCRIPT}: install the package (pip install -e .) first")
    for command in COMMANDS.values():  # warm the page cache and .pyc files
        time_once(command)
    times: dict[str, list[float]] = {label: [] for label in COMMANDS}
    for _ in range(args.runs):
        for label, command in COMMANDS.items():
            times[label].append(time_once(command))
    floor = statistics.median(times["python -c pass"])
    print(
        f"runs={args.runs} (interleaved); load average {os.getloadavg()[0]:.2f} on "
        f"{os.cpu_count()} CPUs"
    )
    for label, values in times.items():
        median = statistics.median(values)
        line = f"{label:32s} median {median:.3f} s  ({median / floor:5.1f}x python -c pass)"
        if label == "llm-council --help":
            line += f"  target <= {TARGET_S:g} s: {'met' if median <= TARGET_S else 'NOT met'}"
        print(line)


if __name__ == "__main__":
    main()
