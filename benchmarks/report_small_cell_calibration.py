"""The council position and pooled length p-values of honest small councils (ADR 0072).

    PYTHONPATH=src nice .venv/bin/python benchmarks/report_small_cell_calibration.py \\
        --generator 4 --members 3 --sessions 10 --runs 600 --seed 7000000

Writes each store with one of ``report_error_rate.NULL_GENERATORS`` (index ``--generator``),
runs only the position and length sections on it, and prints the share of stores whose
council position p and whose one-sided length p ("longer scores higher", as the
report-wide procedure enters it) fall at or below each level: the tests' calibration near
the level they enter the report-wide procedure with (about 0.015 at 3-5 members).
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_error_rate import NULL_GENERATORS  # noqa: E402

LEVELS = (0.005, 0.01, 0.015, 0.05, 0.1)


def store_p_values(path: Path) -> tuple[float, float]:
    """(council position p, one-sided length p) of one store; NaN where untested."""
    from llm_council.bias_audit.report.analyses.length import pooled_length_bias
    from llm_council.bias_audit.report.analyses.position import position_bias
    from llm_council.bias_audit.report.hypotheses import upper_one_sided_p
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.tables import create_analysis_tables

    connection = load_store(str(path), threads=1).connection
    try:
        create_analysis_tables(connection)
        position = position_bias(connection)
        length = pooled_length_bias(connection)
    finally:
        connection.close()
    nan = float("nan")
    position_p = position.council.test_p_value if position is not None else nan
    length_p = (
        upper_one_sided_p(length.pooled.p_value, length.pooled.estimate)
        if length is not None
        else nan
    )
    return float(position_p), float(length_p)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--generator", type=int, default=4, help="NULL_GENERATORS index")
    parser.add_argument("--members", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--seed", type=int, default=7_000_000)
    args = parser.parse_args()
    name, write = list(NULL_GENERATORS.items())[args.generator]
    found: dict[str, list[float]] = {"council position": [], "length (one-sided)": []}
    with tempfile.TemporaryDirectory() as folder:
        for run in range(args.runs):
            path = Path(folder) / f"s{run}.jsonl"
            write(path, args.members, args.sessions, args.seed + run)
            position_p, length_p = store_p_values(path)
            found["council position"].append(position_p)
            found["length (one-sided)"].append(length_p)
            path.unlink()
    print(f"{name}, {args.members} members x {args.sessions} sessions, {args.runs} stores")
    print("| test | stores | " + " | ".join(f"p <= {level}" for level in LEVELS) + " |")
    print("|---|---|" + "---|" * len(LEVELS))
    for test, values in found.items():
        tested = [p for p in values if math.isfinite(p)]
        shares = [sum(p <= level for p in tested) / max(len(tested), 1) for level in LEVELS]
        print(
            f"| {test} | {len(tested)} | "
            + " | ".join(f"{100 * share:.2f}%" for share in shares)
            + " |"
        )


if __name__ == "__main__":
    main()
