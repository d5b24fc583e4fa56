"""CPU time of each report section outside favouritism and style mimicry (issue 12, h2).

    .venv/bin/python benchmarks/report_families_h2.py --store /tmp/store1m.jsonl
    .venv/bin/python benchmarks/report_families_h2.py --store /tmp/store1m.jsonl --repeats 3
    git archive BASE src | tar -x -C /tmp/base          # the code before, beside this one
    .venv/bin/python benchmarks/report_families_h2.py --store /tmp/store1m.jsonl \
        --against /tmp/base/src --rounds 3                # before | after, side by side

Loads the store once, builds the shared analysis tables, then runs each section on the
main thread (no thread pool, so each section's CPU time is its own) and prints the CPU
seconds (``time.process_time``: every thread of this process, DuckDB's included) and the
wall seconds of the fastest of ``--repeats`` runs. The import cost of the report is measured
in a fresh interpreter (``python -X importtime`` would count the same imports). The machine
is shared: read CPU seconds, and compare before/after in one run with ``--against``, which
alternates fresh processes of both trees ``--rounds`` times and prints each one's minimum.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE_SRC = Path(__file__).resolve().parents[1] / "src"

IMPORT_PROBE = (
    "import time; t = time.process_time(); import llm_council.bias_audit.report.build; "
    "import sys; print(time.process_time() - t, 'scipy.stats' in sys.modules)"
)


def _import_cost() -> tuple[float, bool]:
    """CPU seconds to import the report in a fresh interpreter, and whether scipy.stats came."""
    output = subprocess.run(
        [sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(output[0]), output[1] == "True"


def _sections(significance_level: float, seed: int) -> dict[str, Callable[[Any], object]]:
    from llm_council.bias_audit.report.analyses.amplification import amplification
    from llm_council.bias_audit.report.analyses.anchoring import anchoring_by_reviewer
    from llm_council.bias_audit.report.analyses.causal_checks import causal_checks
    from llm_council.bias_audit.report.analyses.drift import drift_by_reviewer
    from llm_council.bias_audit.report.analyses.joint import fit_joint_model
    from llm_council.bias_audit.report.analyses.leaderboard import build_leaderboard
    from llm_council.bias_audit.report.analyses.length import pooled_length_bias
    from llm_council.bias_audit.report.analyses.parse_outcomes import parse_outcomes_by_reviewer
    from llm_council.bias_audit.report.analyses.position import position_bias
    from llm_council.bias_audit.report.analyses.reasoning import reasoning_by_reviewer
    from llm_council.bias_audit.report.analyses.reviewers import reviewer_profiles

    def joint(connection: Any) -> object:
        reference = [p.reviewer for p in reviewer_profiles(connection) if p.in_leniency_reference]
        started = time.process_time()
        fit_joint_model(connection, reference)
        return time.process_time() - started  # the profiles are timed on their own

    return {
        "reviewer profiles": reviewer_profiles,
        "joint model": joint,
        "length": pooled_length_bias,
        "position": lambda c: position_bias(c, significance_level),
        "anchoring": lambda c: anchoring_by_reviewer(c, significance_level),
        "drift": lambda c: drift_by_reviewer(c, significance_level, seed=seed),
        "amplification": lambda c: amplification(c, significance_level, seed=seed),
        "reasoning": lambda c: reasoning_by_reviewer(c, significance_level),
        "parse outcomes": parse_outcomes_by_reviewer,
        "leaderboard": lambda c: build_leaderboard(c, n_resamples=200, seed=seed),
        "causal checks": causal_checks,
    }


def _measure(store: str, repeats: int, only: list[str] | None) -> dict[str, float]:
    """CPU seconds per step in this process (the import in a fresh one)."""
    import_cpu, _ = _import_cost()
    cpu_of: dict[str, float] = {"import report (fresh process)": import_cpu}
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.tables import create_analysis_tables

    cpu = time.process_time()
    store_read = load_store(store)
    cpu_of["load store"] = time.process_time() - cpu
    connection = store_read.connection
    cpu = time.process_time()
    create_analysis_tables(connection)
    cpu_of["analysis tables"] = time.process_time() - cpu
    for name, section in _sections(0.05, 0).items():
        if only and name not in only:
            continue
        best = float("inf")
        for _ in range(repeats):
            cpu = time.process_time()
            own = section(connection)
            best = min(best, own if isinstance(own, float) else time.process_time() - cpu)
        cpu_of[name] = best
    connection.close()
    return cpu_of


def _compare(arguments: argparse.Namespace) -> None:
    """Alternate fresh processes of the baseline tree and this one; print minimum CPU s."""
    command = [sys.executable, __file__, "--store", arguments.store, "--json"]
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for _ in range(arguments.rounds):
        for label in ("before", "after"):
            # "after" is this tree's src, never the venv's (editable) install of another tree
            source = arguments.against if label == "before" else str(HERE_SRC)
            environment = dict(os.environ, PYTHONPATH=source)
            output = subprocess.run(
                command, capture_output=True, text=True, check=True, env=environment
            ).stdout
            runs[label].append(json.loads(output.splitlines()[-1]))
    heading = f"CPU s (minimum of {arguments.rounds} runs)"
    print(f"{heading:34s} {'before':>8s} {'after':>8s}")
    totals = {"before": 0.0, "after": 0.0}
    for step in runs["before"][0]:
        best = {label: min(run[step] for run in runs[label]) for label in runs}
        for label in totals:
            totals[label] += best[label]
        print(f"{step:34s} {best['before']:8.3f} {best['after']:8.3f}")
    print(f"{'total':34s} {totals['before']:8.3f} {totals['after']:8.3f}")
    print(f"load average after: {os.getloadavg()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, help="section names to run")
    parser.add_argument("--against", help="src directory of the code to compare with")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.against:
        _compare(arguments)
        return
    cpu_of = _measure(arguments.store, arguments.repeats, arguments.only)
    if arguments.json:
        print(json.dumps(cpu_of))
        return
    for step, seconds in cpu_of.items():
        print(f"{step:34s} cpu {seconds:7.3f} s")
    print(f"{'total':34s} cpu {sum(cpu_of.values()):7.3f} s")


if __name__ == "__main__":
    main()
