"""The report's summary file: bytes, encode and decode CPU seconds, full-width layout against
the compact one (ADR 0083), side by side on the same summaries.

    PYTHONPATH=src nice .venv/bin/python benchmarks/summary_file_read.py STORE [--repeats 3]

``STORE`` is a store whose ``<store>.report-sessions`` exists (run ``bias-report`` on it
once). The file is read once; its summaries are then encoded both ways in memory and each
encoding decoded ``--repeats`` times (the median CPU time is printed), so neither layout
is favoured by the page cache. Decoding is what a report on a grown store pays before any
section merges; the sealing and its SHA-256 are included (``decode_summaries``).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np


def main() -> None:
    from llm_council.bias_audit.report.load import session_summaries as files

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("store", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    summaries = files.read_summaries(args.store)
    if summaries is None:
        raise SystemExit(f"{files.summaries_path(args.store)}: no verified summary file")
    rows = []
    for layout, compact in (("full width (before ADR 0083)", False), ("compact", True)):
        started = time.process_time()
        content = files.encode_summaries(args.store, summaries, compact=compact)
        encode_s = time.process_time() - started
        if content is None:
            raise SystemExit("no sealing key: cannot encode")
        decode_s = []
        for _ in range(args.repeats):
            started = time.process_time()
            back = files.decode_summaries(args.store, content)
            decode_s.append(time.process_time() - started)
        same = all(
            back.sections[name].arrays[key].dtype == values.dtype
            and back.sections[name].arrays[key].tobytes() == values.tobytes()
            if values.dtype.kind != "U"
            else np.array_equal(back.sections[name].arrays[key], values)
            for name, section in summaries.sections.items()
            for key, values in section.arrays.items()
        )
        rows.append((layout, len(content), encode_s, statistics.median(decode_s), same))
    print("| layout | bytes | encode CPU s | decode CPU s (median) | arrays equal to the saved |")
    print("|---|---|---|---|---|")
    for layout, size, encode_s, decode_s, same in rows:
        print(f"| {layout} | {size:,} | {encode_s:.2f} | {decode_s:.2f} | {same} |")


if __name__ == "__main__":
    main()
