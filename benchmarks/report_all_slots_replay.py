"""Honest stores re-decided with the council's all-slots position test added (ADR 0076).

    PYTHONPATH=src nice .venv/bin/python benchmarks/report_all_slots_replay.py DUMP_DIR \\
        --cells 0:5:10 4:9:10 --seed 20261127

ADR 0076 adds one hypothesis to a report with 4+ slots: the council's all-slots-equal Wald
test beside its edge test. Every other hypothesis and its p are unchanged, so a store's
report from the previous tree (``report_error_rate.py --dump``) needs only that one p: each
cell's stores are written again from the same generator and seed, only the position
section is fitted (this tree), and the dumped hypotheses plus the new one are decided by
this tree's procedure. A check that it is the same store: the recomputed council edge p
must equal the dumped one (to 1e-9), else the store is reported as a mismatch.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_error_rate import NULL_GENERATORS, _rate, _stores  # noqa: E402
from report_replay import _sided, replay_findings  # noqa: E402


def council_position_ps(path: Path) -> tuple[float, float]:
    """(edge p, all-slots p) of the council's position test in ``path``'s store."""
    from llm_council.bias_audit.report.analyses.position import position_bias
    from llm_council.bias_audit.report.load.loading import load_store
    from llm_council.bias_audit.report.load.tables import create_analysis_tables

    store = load_store(path, threads=1)
    try:
        create_analysis_tables(store.connection)
        position = position_bias(store.connection)
    finally:
        store.connection.close()
    nan = float("nan")
    if position is None or not position.council.identified:
        return nan, nan
    return position.council.test_p_value, position.council.all_slots_p_value


def with_all_slots(result: dict[str, Any], edge_p: float, all_slots_p: float) -> list[list[Any]]:
    """The dumped hypotheses plus the council's all-slots one (when its p is finite)."""
    from llm_council.bias_audit.report.hypotheses import ALL_SLOTS_BIAS

    tested = [list(row) for row in result["tested"]]
    if math.isfinite(all_slots_p):
        tested.append(["council position", "council", ALL_SLOTS_BIAS, all_slots_p, False, 0.0])
    return tested


def replay_cell(folder: Path, g: int, members: int, sessions: int, seed: int) -> str:
    names = list(NULL_GENERATORS)
    dumped = folder / f"null-{g}-{members}-{sessions}-seed{seed}.jsonl"
    results = [json.loads(line) for line in dumped.read_text().splitlines()]
    runs = len(results)
    with tempfile.TemporaryDirectory() as tmp:
        paths = _stores(NULL_GENERATORS[names[g]], Path(tmp), members, sessions, runs, seed)
        tests = [council_position_ps(path) for path in paths]
    mismatches = found = recorded = 0
    families: dict[str, int] = {}
    for result, (edge_p, all_p) in zip(results, tests, strict=True):
        dumped_edge = [row[3] for row in result["tested"] if row[0] == "council position"]
        if dumped_edge and not math.isclose(dumped_edge[0], edge_p, rel_tol=1e-9):
            mismatches += 1
        findings = replay_findings(with_all_slots(result, edge_p, all_p), "fwer", _sided(result))
        found += bool(findings)
        recorded += bool(result["fwer"])
        for family in {f[0] for f in findings}:
            families[family] = families.get(family, 0) + 1
    listed = ", ".join(f"{k} {v}" for k, v in sorted(families.items(), key=lambda kv: -kv[1]))
    return (
        f"| {names[g]} | {members} | {sessions} | {runs} | {_rate(recorded, runs)} | "
        f"{_rate(found, runs)} | {listed or '-'} | {mismatches} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dumps", type=Path)
    parser.add_argument("--cells", nargs="+", required=True, help="GENERATOR:MEMBERS:SESSIONS")
    parser.add_argument("--seed", type=int, default=20261127)
    args = parser.parse_args()
    print(
        "| generator | members | sessions | stores | fwer, dumped tree | fwer, with the "
        "all-slots test | families of the findings (stores) | stores not matching the dump |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for cell in args.cells:
        g, members, sessions = (int(v) for v in cell.split(":"))
        print(replay_cell(args.dumps, g, members, sessions, args.seed), flush=True)


if __name__ == "__main__":
    main()
