"""CPU time and peak memory of the report's favouritism and style-mimicry families.

    .venv/bin/python benchmarks/report_families_h1.py                      # this tree only
    .venv/bin/python benchmarks/report_families_h1.py --baseline-src DIR   # before/after

``--store`` defaults to the 1M-record Parquet copy that ``benchmarks/report_scale.py
--keep /tmp/store1m.jsonl`` leaves (``/tmp/store1m.jsonl.parquet``). Each source tree
runs in its own subprocess (``PYTHONPATH=<tree>``); ``--baseline-src`` names an older
``src`` directory, e.g. one unpacked with ``git archive <commit> src | tar -x -C DIR``.
A child loads the store once (``load_store`` + ``create_analysis_tables``, not timed),
then times each family with ``time.process_time`` (CPU of every thread of the process;
the machine is shared, so wall time is not reported), best of ``--repeats``, and
measures its peak traced memory in one extra call under ``tracemalloc`` (numpy reports
its buffers there). The children print their results as JSON; the driver prints both
side by side and the largest difference between them (it must be below 1e-9).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

DEFAULT_STORE = "/tmp/store1m.jsonl.parquet"
FAMILIES = ("favouritism", "style_mimicry")


def _plain(value: Any) -> Any:
    """A family result as JSON-ready lists, dicts and numbers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)
        }
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def child(store: str, repeats: int) -> None:
    """Load ``store`` once, then time each family; print one JSON line."""
    from llm_council.bias_audit.report.analyses.favouritism import favouritism
    from llm_council.bias_audit.report.analyses.style_mimicry import style_mimicry
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.tables import create_analysis_tables

    connection = load_store(store).connection
    create_analysis_tables(connection)
    functions = {"favouritism": favouritism, "style_mimicry": style_mimicry}
    measured: dict[str, Any] = {}
    for name in FAMILIES:
        run = functions[name]
        seconds = []
        for _ in range(repeats):
            started = time.process_time()
            result = run(connection)
            seconds.append(time.process_time() - started)
        tracemalloc.start()
        run(connection)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        measured[name] = {
            "cpu_seconds": min(seconds),
            "peak_mb": peak / 2**20,
            "result": _plain(result),
        }
    print(json.dumps(measured))


def _largest_difference(left: Any, right: Any) -> float:
    """Largest absolute difference between two equally shaped results (inf if shapes differ)."""
    if isinstance(left, dict) and isinstance(right, dict):
        if left.keys() != right.keys():
            return math.inf
        return max((_largest_difference(left[k], right[k]) for k in left), default=0.0)
    if isinstance(left, list) and isinstance(right, list):
        if len(left) != len(right):
            return math.inf
        return max(
            (_largest_difference(a, b) for a, b in zip(left, right, strict=True)), default=0.0
        )
    if isinstance(left, float | int) and isinstance(right, float | int):
        if isinstance(left, bool) or isinstance(right, bool):
            return 0.0 if left == right else math.inf
        return abs(float(left) - float(right))
    return 0.0 if left == right else math.inf


def _run_tree(source: str, store: str, repeats: int) -> dict[str, Any]:
    environment = dict(os.environ, PYTHONPATH=source)
    command = [sys.executable, __file__, "--child", "--store", store, "--repeats", str(repeats)]
    output = subprocess.run(command, env=environment, check=True, capture_output=True, text=True)
    return dict(json.loads(output.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", default=DEFAULT_STORE)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--baseline-src", help="an older src directory to time side by side")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(arguments.store, arguments.repeats)
        return
    here = str(Path(__file__).resolve().parent.parent / "src")
    trees = {"this tree": here}
    if arguments.baseline_src:
        trees = {"baseline": str(Path(arguments.baseline_src).resolve()), **trees}
    results = {
        label: _run_tree(source, arguments.store, arguments.repeats)
        for label, source in trees.items()
    }
    print(f"store {arguments.store}; load average {os.getloadavg()[0]:.2f}")
    print(
        f"{'family':<15}" + "".join(f"{label + ' CPU s':>18}{'peak MB':>10}" for label in results)
    )
    for name in FAMILIES:
        line = f"{name:<15}"
        for measured in results.values():
            line += f"{measured[name]['cpu_seconds']:>18.3f}{measured[name]['peak_mb']:>10.0f}"
        print(line)
    if "baseline" in results:
        for name in FAMILIES:
            difference = _largest_difference(
                results["baseline"][name]["result"], results["this tree"][name]["result"]
            )
            print(f"{name}: largest difference from the baseline {difference:.3g}")


if __name__ == "__main__":
    main()
