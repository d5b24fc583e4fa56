"""The +1% re-run's fixed costs (ADR 0091), side by side for two source trees.

    git -C . archive BASE src | tar -x -C /tmp/before
    PYTHONPATH=src nice .venv/bin/python benchmarks/summary_fixed_costs.py STORE \\
        --tree before=/tmp/before/src --tree after=src [--repeats 5] [--rounds 2]

``STORE`` is a store whose ``<store>.report-sessions`` exists (run ``bias-report`` on it
once) and whose file both trees read (same file format). Each tree runs in its own child
process, the trees alternating for ``--rounds`` rounds so that neither gets the quieter
minutes. A child reads the file once, then times, best of ``--repeats`` (wall seconds,
so the steps compare under the same load): reliability's resolution from the file's
per-(reviewer, score) counts, ``encode_arrays`` on the string arrays alone and on every
array, and ``decode_arrays``; the payload's SHA-256 and the resolutions are printed
to show the trees agree. Nothing is written: the file is left as it was. The load
average is printed beside each row.
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


def _best_ms(run: Callable[[], Any], repeats: int) -> tuple[Any, float]:
    """(the last result, the fastest of ``repeats`` runs in milliseconds)."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = run()
        best = min(best, time.perf_counter() - started)
    return result, best * 1000


def child(store: str, repeats: int) -> None:
    """Time the steps with the tree on ``sys.path``; print one JSON line."""
    from llm_council.bias_audit.report.analyses.reliability import resolution_from_counts
    from llm_council.bias_audit.report.load import summary_payload
    from llm_council.bias_audit.report.load.session_summaries import read_summaries

    summaries = read_summaries(store)
    if summaries is None:
        raise SystemExit(f"{store}: no verified summary file")
    arrays = {"folded/session_id": summaries.session_ids}
    for name, section in summaries.sections.items():
        arrays.update({f"{name}/{key}": values for key, values in section.arrays.items()})
    strings = {name: values for name, values in arrays.items() if values.dtype.kind == "U"}
    # the rows reliability's finish hands to resolution_from_counts (reliability_summary)
    counts = summaries.sections["reliability"].arrays
    reviewers = summaries.sections["reliability"].meta["reviewers"]
    scales = counts["scales"]
    rows = [
        (reviewers[r], float(scales[s][0]), float(scales[s][1]), float(v), int(n))
        for r, s, v, n in zip(
            counts["count_reviewer"].tolist(),
            counts["count_scale"].tolist(),
            counts["count_score"],
            counts["count_n"],
            strict=True,
        )
    ]
    resolutions, resolution_ms = _best_ms(
        lambda: resolution_from_counts(rows, frozenset()), repeats
    )
    _, strings_ms = _best_ms(lambda: summary_payload.encode_arrays(strings), repeats)
    (directory, raw), all_ms = _best_ms(lambda: summary_payload.encode_arrays(arrays), repeats)
    _, decode_ms = _best_ms(lambda: summary_payload.decode_arrays(directory, raw), repeats)
    print(
        json.dumps(
            {
                "resolution_ms": resolution_ms,
                "scores": sum(item.n_scores for item in resolutions),
                "encode_strings_ms": strings_ms,
                "string_arrays": len(strings),
                "string_bytes": int(sum(values.nbytes for values in strings.values())),
                "encode_all_ms": all_ms,
                "decode_all_ms": decode_ms,
                "payload_bytes": len(raw),
                "payload_digest": summary_payload.digest(raw)[7:19],
                "resolutions": [
                    [item.reviewer, item.effective_levels, item.n_scores] for item in resolutions
                ],
                "load1": os.getloadavg()[0],
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store")
    parser.add_argument("--tree", action="append", default=[], help="NAME=SRC_DIR")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.store, args.repeats)
        return
    trees = [tree.split("=", 1) for tree in args.tree] or [["this", "src"]]
    print(
        "| tree | resolution ms | encode strings ms | encode all ms | decode all ms "
        "| payload bytes | its SHA-256 | load 1 min |"
    )
    print("|---|---|---|---|---|---|---|---|")
    resolutions = {}
    for _ in range(args.rounds):
        for name, source in trees:
            environment = {**os.environ, "PYTHONPATH": str(Path(source).resolve())}
            command = [sys.executable, __file__, args.store, "--child"]
            command += ["--repeats", str(args.repeats)]
            output = subprocess.run(
                command, env=environment, check=True, capture_output=True, text=True
            ).stdout
            row = json.loads(output.strip().splitlines()[-1])
            print(
                f"| {name} | {row['resolution_ms']:.1f} | {row['encode_strings_ms']:.1f} "
                f"| {row['encode_all_ms']:.1f} | {row['decode_all_ms']:.1f} "
                f"| {row['payload_bytes']:,} | {row['payload_digest']} | {row['load1']:.2f} |"
            )
            resolutions[name] = row["resolutions"]
    same = len({json.dumps(value) for value in resolutions.values()}) == 1
    print(f"resolutions (reviewer, effective levels, scores) equal across trees: {same}")


if __name__ == "__main__":
    main()
