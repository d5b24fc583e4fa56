"""CPU time of each report section outside favouritism and style mimicry (issue 12, h2).

    .venv/bin/python benchmarks/report_families_h2.py --store /tmp/store1m.jsonl
    .venv/bin/python benchmarks/report_families_h2.py --store /tmp/store1m.jsonl --repeats 3

Loads the store once, builds the shared analysis tables, then runs each section on the
main thread (no thread pool, so each section's CPU time is its own) and prints the CPU
seconds (``time.process_time``: every thread of this process, DuckDB's included) and the
wall seconds of the fastest of ``--repeats`` runs. The import cost of the report is measured
in a fresh interpreter (``python -X importtime`` would count the same imports). The machine
is shared: read CPU seconds, and compare before/after from the same run (``git stash``).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

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
    from llm_council.bias_audit.report.amplification import amplification
    from llm_council.bias_audit.report.anchoring import anchoring_by_reviewer
    from llm_council.bias_audit.report.causal_checks import causal_checks
    from llm_council.bias_audit.report.drift import drift_by_reviewer
    from llm_council.bias_audit.report.joint import fit_joint_model
    from llm_council.bias_audit.report.leaderboard import build_leaderboard
    from llm_council.bias_audit.report.length import pooled_length_bias
    from llm_council.bias_audit.report.parse_outcomes import parse_outcomes_by_reviewer
    from llm_council.bias_audit.report.position import position_bias
    from llm_council.bias_audit.report.reasoning import reasoning_by_reviewer
    from llm_council.bias_audit.report.reviewers import reviewer_profiles

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", required=True)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--only", nargs="*", default=None, help="section names to run")
    arguments = parser.parse_args()

    import_cpu, scipy_stats_loaded = _import_cost()
    print(f"{'import report (fresh process)':32s} cpu {import_cpu:7.3f} s", end="")
    print(f"   scipy.stats imported: {scipy_stats_loaded}")

    from llm_council.bias_audit.report.loading import load_store
    from llm_council.bias_audit.report.tables import create_analysis_tables

    cpu, wall = time.process_time(), time.perf_counter()
    store = load_store(arguments.store)
    print(f"{'load store':32s} cpu {time.process_time() - cpu:7.3f} s  wall "
          f"{time.perf_counter() - wall:7.3f} s  ({store.n_records} records)")
    connection = store.connection
    cpu, wall = time.process_time(), time.perf_counter()
    create_analysis_tables(connection)
    print(f"{'analysis tables':32s} cpu {time.process_time() - cpu:7.3f} s  wall "
          f"{time.perf_counter() - wall:7.3f} s")
    total = 0.0
    for name, section in _sections(0.05, 0).items():
        if arguments.only and name not in arguments.only:
            continue
        best_cpu, best_wall = float("inf"), float("inf")
        for _ in range(arguments.repeats):
            cpu, wall = time.process_time(), time.perf_counter()
            own = section(connection)
            spent = time.process_time() - cpu if not isinstance(own, float) else own
            best_cpu = min(best_cpu, spent)
            best_wall = min(best_wall, time.perf_counter() - wall)
        total += best_cpu
        print(f"{name:32s} cpu {best_cpu:7.3f} s  wall {best_wall:7.3f} s")
    print(f"{'sections total':32s} cpu {total:7.3f} s")
    connection.close()


if __name__ == "__main__":
    main()
