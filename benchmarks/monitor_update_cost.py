"""The monitor update's cost after an append, two source trees side by side in one run.

Each tree's own ``benchmarks/monitor_calibration.py --cost-only`` (the same measuring
code: 5 members; the statistic alone, records -> estimates -> fold; the whole
``current_monitor`` after an append, lock, read the tail, fold, seal, write, on stores of
100 and 2,000 sessions; medians of 150 updates) runs in its own process, the trees
alternating round by round (ABAB...), so both see the same machine load. Prints each
round's medians and their median per tree.

    nice .venv/bin/python benchmarks/monitor_update_cost.py \\
        --tree before=/tmp/monitor-before --tree after=. [--rounds 3]

A tree is a checkout (or ``git archive`` of one) with ``src/`` and ``benchmarks/``.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

ROW = re.compile(r"^\| (?P<what>[^|]+?) \| (?P<ms>[0-9.]+) ms \|$")


def measure(tree: Path, seed: int) -> dict[str, float]:
    """One run of ``tree``'s cost table: milliseconds by row (the state file's size
    dropped from the row's name, so the trees' rows line up)."""
    environment = {**os.environ, "PYTHONPATH": str(tree / "src")}
    completed = subprocess.run(
        [
            sys.executable,
            str(tree / "benchmarks" / "monitor_calibration.py"),
            "--cost-only",
            "--seed",
            str(seed),
        ],
        env=environment,
        capture_output=True,
        text=True,
        check=True,
        cwd=tree,
    )
    rows: dict[str, float] = {}
    for line in completed.stdout.splitlines():
        match = ROW.match(line.strip())
        if match:
            what = re.sub(r" \(state file [^)]*\)", "", match["what"])
            rows[what] = float(match["ms"])
    if not rows:
        raise SystemExit(f"{tree}: its cost table printed no rows:\n{completed.stdout}")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--tree", action="append", required=True, help="LABEL=PATH (give two or more)"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    trees: dict[str, Path] = {}
    for item in args.tree:
        label, separator, path = item.partition("=")
        if not separator or not (Path(path) / "src").is_dir():
            raise SystemExit(f"--tree {item!r}: expected LABEL=PATH of a tree with src/")
        trees[label] = Path(path).resolve()
    runs: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    for round_index in range(args.rounds):
        for label, tree in trees.items():
            runs[label].append(measure(tree, args.seed))
            print(f"  round {round_index + 1}: {label} done", file=sys.stderr)
    labels = list(trees)
    whats = list(runs[labels[0]][0])
    print("| what (5 members, median per session) | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for what in whats:
        cells = []
        for label in labels:
            values = [run[what] for run in runs[label] if what in run]
            rounds = ", ".join(f"{value:.2f}" for value in values)
            cells.append(f"{statistics.median(values):.2f} ms ({rounds})" if values else "-")
        print(f"| {what} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
