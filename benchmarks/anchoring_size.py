"""False-alarm rate of the anchoring flag alone, on null councils of both generators.

Runs only the anchoring estimator (fast), so many more null stores fit than in the
families calibration test: ``--runs`` stores of 200 sessions per (generator, k), noise sd 1,
no bias. Prints the share of stores with any anchoring flag (Holm over reviewers, alpha 0.05).

    .venv/bin/python benchmarks/anchoring_size.py [--runs 200]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).parents[1] / "tests" / "bias_audit" / "report" / "analyses"))

from test_bias_families import STORES, Injection  # noqa: E402

from llm_council.bias_audit.report.analyses.anchoring import anchoring_by_reviewer  # noqa: E402
from llm_council.bias_audit.report.load.loading import load_store  # noqa: E402
from llm_council.bias_audit.report.load.tables import create_analysis_tables  # noqa: E402


def _flagged(path: Path) -> bool:
    store = load_store(path)
    try:
        create_analysis_tables(store.connection)
        return any(item.detected for item in anchoring_by_reviewer(store.connection))
    finally:
        store.connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        for generator in sorted(STORES):
            for k in (3, 5, 9):
                flags = 0
                for run in range(args.runs):
                    path = STORES[generator](
                        Path(scratch) / "null.jsonl", k, 200, 5000 + run, Injection()
                    )
                    flags += _flagged(path)
                print(
                    f"{generator:11s} k={k}: anchoring false alarm {flags}/{args.runs} = "
                    f"{flags / args.runs:.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
