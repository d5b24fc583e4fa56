"""Measure: how often SIGKILL leaves a partial session in the JSONL store, and that reads drop it.

For each council size, ``--kills`` writer processes are killed one after another at
random moments while a second writer keeps appending (the loop of
``tests/reliability/test_store_crashes.py``). Prints the partial sessions found on disk
(counted with ``json`` alone) and those the reader dropped; exits non-zero if the reader
returned any partial session.

    .venv/bin/python benchmarks/store_sigkill.py [--kills 50] [--members 10 20]
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
import warnings
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1] / "tests" / "reliability" / "test_store_crashes.py"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument("--members", type=int, nargs="+", default=[10, 20])
    args = parser.parse_args()
    spec = importlib.util.spec_from_file_location("store_crashes", TESTS)
    assert spec is not None and spec.loader is not None
    crashes = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(crashes)
    ok = True
    for members in args.members:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "records.jsonl"
            started = time.perf_counter()
            partial = crashes._kill_repeatedly(path, members, args.kills, seed=members)
            reader = crashes.RecordReader(path)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                per_session = Counter(r.session_id for r in reader)
            returned_partial = sum(1 for n in per_session.values() if n != members * members)
            ok = ok and returned_partial == 0 and len(reader.incomplete_sessions) == partial
            print(
                f"members={members} ({members**2} records/session) kills={args.kills}: "
                f"partial sessions on disk={partial}, dropped by the reader="
                f"{len(reader.incomplete_sessions)}, partial sessions returned={returned_partial}, "
                f"complete sessions read={len(per_session)} "
                f"({time.perf_counter() - started:.1f} s)"
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
