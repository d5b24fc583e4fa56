"""How often a whole bias report lists a false finding, and how much power the one procedure keeps.

    PYTHONPATH=src nice .venv/bin/python benchmarks/report_error_rate.py --null --runs 200
    PYTHONPATH=src nice .venv/bin/python benchmarks/report_error_rate.py --power --runs 100 \\
        --baseline-src /work/main/src

``--null``: honest councils (no bias planted) from three generators: the independent
score generator (``tests/generators/independent_council.py``: integer 1-10 scores, 5%
missing cells, each reviewer its own order or one shared order per session), the
rank-only generator (``tests/generators/rank_council.py``: karpathy rankings, one fixed
order or each reviewer its own) and ``llm_council.simulation`` (Gaussian noise), at 3, 5
and 9 members and 10, 30 and 100 sessions. A report "has a finding" when its ``findings``
list is not empty; the promise is that share <= 5% (+ 2 Monte Carlo standard errors).

``--dump DIR`` saves every store's tested hypotheses (family, subject, bias, p, blocked,
estimate, and for the council's all-slots test the min-p p of its nested pair, ADR 0082)
one file a cell; ``benchmarks/report_replay.py DIR`` decides them again with
any tree's procedure.

``--power``: one planted bias per store (30 sessions, 5 members), the share of reports
whose findings name it, after (``fwer`` and ``fdr``) and, with ``--baseline-src``, before
(that tree's dashboard findings: each family at its own 5%).

Each source tree runs in its own subprocess (``PYTHONPATH=<tree>``) over the same stores;
the driver writes the stores (generators from this tree), collects the findings and
prints markdown tables (``--out`` also writes them to a file).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

#: the tree whose reports are measured (``--src``: a frozen copy, so edits during a long run
#: do not reach its later cells)
SOURCE = ROOT / "src"

#: one finding as the child reports it: (family, subject, bias)
Found = list[list[str]]


def child(paths: list[str]) -> None:
    """Build each store's report with the tree on ``PYTHONPATH``; one JSON line per store."""
    from llm_council.bias_audit.report.build import build_report

    try:
        from llm_council.bias_audit.report.report_verdicts import decide_findings
    except ImportError:  # a tree from before the report-wide procedure
        decide_findings = None
    for path in paths:
        started = time.process_time()
        report = build_report(path, n_resamples=20, threads=1)
        if decide_findings is None:
            from llm_council.bias_audit.report.dashboard.dashboard_findings import (
                dashboard_findings,
            )

            rows = dashboard_findings(report).findings
            result: dict[str, Any] = {"before": [[f.family, f.subject, f.bias] for f in rows]}
        else:
            from llm_council.bias_audit.report import hypotheses

            report_hypotheses = hypotheses.report_hypotheses
            fdr = decide_findings(report, "fdr")
            result = {
                # ADR 0060 made the self-preference hypothesis one-sided
                "self_preference_sided": (
                    "one" if hasattr(hypotheses, "upper_one_sided_p") else "two"
                ),
                # ADR 0072 made the length hypothesis one-sided (verbosity)
                "length_sided": "one" if hasattr(hypotheses, "LENGTH_BIAS") else "two",
                "fwer": [[f.family, f.subject, f.bias] for f in report.findings],
                "fdr": [[f.family, f.subject, f.bias] for f in fdr.findings],
                "n_tests": len(report.hypotheses),
                # every tested hypothesis before the procedure, for --replay
                "tested": [
                    [h.finding.family, h.finding.subject, h.finding.bias, h.finding.p_value]
                    + [h.blocked_by is not None, h.finding.estimate]
                    # ADR 0082: the min-p test of the council's nested position pair
                    + [getattr(h, "combined_p", float("nan"))]
                    for h in report_hypotheses(report)
                ],
            }
        result["cpu_seconds"] = time.process_time() - started
        print(json.dumps(result), flush=True)


def run_tree(src: Path, paths: list[Path]) -> list[dict[str, Any]]:
    """Run :func:`child` in a subprocess with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, __file__, "--child", *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


# ---- store writers -------------------------------------------------------------------

StoreWriter = Callable[[Path, int, int, int], None]


def independent(shared_order: bool, **biases: Any) -> StoreWriter:
    from generators.independent_council import CouncilSpec, generate_sessions, write_store

    def write(path: Path, n_members: int, n_sessions: int, seed: int) -> None:
        planted = {key: value(n_members) for key, value in biases.items()}
        spec = CouncilSpec(
            n_members=n_members,
            missing_score_rate=0.05,
            shared_order=shared_order,
            **planted,
        )
        write_store(path, generate_sessions(spec, n_sessions, seed=seed))

    return write


def ranked(order: str, judges: Callable[[int], list[str]] | None = None) -> StoreWriter:
    from generators.rank_council import RankCouncilSpec, generate_sessions, write_store

    def write(path: Path, n_members: int, n_sessions: int, seed: int) -> None:
        spec = RankCouncilSpec(
            n_members=n_members, order=order, judges=judges(n_members) if judges else None
        )
        write_store(path, generate_sessions(spec, n_sessions, seed=seed))

    return write


def simulator(path: Path, n_members: int, n_sessions: int, seed: int) -> None:
    from llm_council.simulation.profile import SimulatedProfile
    from llm_council.simulation.simulated_records import write_record_store

    members = [(f"judge{i}", SimulatedProfile(noise_sd=1.0)) for i in range(n_members)]
    write_record_store(path, members, n_sessions, seed=seed)


def first_only(value: float) -> Callable[[int], list[float]]:
    return lambda n: [value] + [0.0] * (n - 1)


NULL_GENERATORS: dict[str, StoreWriter] = {
    "independent, scores, own orders": independent(False),
    "independent, scores, shared order": independent(True),
    "rank-only, fixed order (karpathy)": ranked("fixed"),
    "rank-only, own orders": ranked("reviewer"),
    "simulator, scores, own orders": simulator,
}


@dataclass(frozen=True)
class PlantedBias:
    name: str
    write: StoreWriter
    found: Callable[[list[str]], bool]  # (family, subject, bias) names the planted bias


POWER_CELLS = (
    PlantedBias(
        "harsh -1.0 (judge-0)",
        independent(False, leniency=first_only(-1.0)),
        lambda f: f[0] == "leniency" and f[1] == "judge-0" and "harsh" in f[2],
    ),
    PlantedBias(
        "self-preference +1.0 (judge-0)",
        independent(False, self_bias=first_only(1.0)),
        lambda f: f[1] == "judge-0" and "self-preference" in f[2],
    ),
    PlantedBias(
        "always ranks A first (rank-only, own orders)",
        ranked("reviewer", lambda n: ["first"] + ["honest"] * (n - 1)),
        lambda f: f[0] == "position" and f[1] == "vendor/model-0",
    ),
    PlantedBias(
        "council slot A +0.5 (every reviewer)",
        independent(False, slot_effects=lambda n: [[0.5] + [0.0] * (n - 1)] * n),
        lambda f: f[0] in ("position", "council position") and f[1] == "council",
    ),
    PlantedBias(
        "verbosity +0.5 per sd of log words (every reviewer)",
        independent(False, verbosity=lambda n: [0.5] * n),
        lambda f: f[0] == "length" and "longer" in f[2],
    ),
    # what the weights of ADR 0060 cost: a smaller harsh judge, one reviewer's slot bias
    PlantedBias(
        "harsh -0.5 (judge-0)",
        independent(False, leniency=first_only(-0.5)),
        lambda f: f[0] == "leniency" and f[1] == "judge-0" and "harsh" in f[2],
    ),
    PlantedBias(
        "slot A +1.0 (judge-0 only)",
        independent(
            False, slot_effects=lambda n: [[1.0] + [0.0] * (n - 1)] + [[0.0] * n] * (n - 1)
        ),
        lambda f: f[0] == "position" and f[1] == "judge-0",
    ),
    # what the edge test of ADR 0072 costs: a bias of a middle slot (C of A-E)
    PlantedBias(
        "council slot C +0.5 (every reviewer; a middle slot)",
        independent(False, slot_effects=lambda n: [[0.0, 0.0, 0.5] + [0.0] * (n - 3)] * n),
        lambda f: f[0] in ("position", "council position") and f[1] == "council",
    ),
)


# ---- driver --------------------------------------------------------------------------


def _rate(count: int, runs: int) -> str:
    share = count / runs
    se = math.sqrt(max(share * (1 - share), 1e-12) / runs)
    return f"{count}/{runs} = {100 * share:.1f}% (se {100 * se:.1f})"


def _stores(write: StoreWriter, folder: Path, members: int, sessions: int, runs: int, seed: int):
    paths = []
    for run in range(runs):
        path = folder / f"s{members}-{sessions}-{run}.jsonl"
        write(path, members, sessions, seed + run)
        paths.append(path)
    return paths


def latin_cells(sizes: list[int], members: list[int]) -> list[tuple[int, int, int]]:
    """(generator index, members, sessions): each generator at every member count and every
    session count once, member count i paired with session count (i + g) mod 3."""
    return [
        (g, n_members, sizes[(i + g) % len(sizes)])
        for g in range(len(NULL_GENERATORS))
        for i, n_members in enumerate(members)
    ]


def _dump(folder: Path | None, name: str, results: list[dict[str, Any]]) -> None:
    """Save one cell's per-store results (JSON lines) for ``--replay``."""
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in results))


def null_table(
    runs: int,
    seed: int,
    cells: list[tuple[int, int, int]],
    baseline: Path | None = None,
    dump: Path | None = None,
) -> list[str]:
    lines = [
        "| generator | members | sessions | tests per report (median) | reports with a "
        "finding, fwer | reports with a finding, fdr | families of the fwer findings | "
        "CPU s per report |",
        "|---|---|---|---|---|---|---|---|",
    ]
    src = SOURCE
    names = list(NULL_GENERATORS)
    for g, n_members, n_sessions in cells:
        name, write = names[g], NULL_GENERATORS[names[g]]
        with tempfile.TemporaryDirectory() as folder:
            paths = _stores(write, Path(folder), n_members, n_sessions, runs, seed)
            results = run_tree(src, paths)
            before = run_tree(baseline, paths) if baseline else []
        _dump(dump, f"null-{g}-{n_members}-{n_sessions}-seed{seed}", results)
        tests = sorted(r["n_tests"] for r in results)
        fwer = sum(bool(r["fwer"]) for r in results)
        fdr = sum(bool(r["fdr"]) for r in results)
        cpu = sum(r["cpu_seconds"] for r in results) / len(results)
        families = sorted({f[0] for r in results for f in r["fwer"]})
        if before:
            name += f" (before: {_rate(sum(bool(r['before']) for r in before), runs)})"
        lines.append(
            f"| {name} | {n_members} | {n_sessions} | {tests[len(tests) // 2]} | "
            f"{_rate(fwer, runs)} | {_rate(fdr, runs)} | {', '.join(families) or '-'} | "
            f"{cpu:.2f} |"
        )
        print(lines[-1], flush=True)
    return lines


def power_table(
    runs: int,
    seed: int,
    baseline: Path | None,
    sessions: int,
    only: list[int] | None = None,
    dump: Path | None = None,
) -> list[str]:
    lines = [
        "| planted bias (5 members, "
        f"{sessions} sessions) | before: each family at 5% | after: fwer | after: fdr | "
        "after fwer / before |",
        "|---|---|---|---|---|",
    ]
    for index, cell in enumerate(POWER_CELLS):
        if only and index not in only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            paths = _stores(cell.write, Path(folder), 5, sessions, runs, seed)
            after = run_tree(SOURCE, paths)
            before = run_tree(baseline, paths) if baseline else []
        _dump(dump, f"power-{index}-{sessions}-seed{seed}", after)
        if before:
            _dump(dump, f"before-{index}-{sessions}-seed{seed}", before)
        found_fwer = sum(any(cell.found(f) for f in r["fwer"]) for r in after)
        found_fdr = sum(any(cell.found(f) for f in r["fdr"]) for r in after)
        found_before = sum(any(cell.found(f) for f in r["before"]) for r in before)
        ratio = f"{found_fwer / found_before:.2f}" if found_before else "n/a"
        lines.append(
            f"| {cell.name} | {_rate(found_before, runs) if before else 'not run'} | "
            f"{_rate(found_fwer, runs)} | {_rate(found_fdr, runs)} | {ratio} |"
        )
        print(lines[-1], flush=True)
    return lines


def main() -> None:
    global SOURCE
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--null", action="store_true", help="the honest-council grid")
    parser.add_argument("--power", action="store_true", help="the planted-bias table")
    parser.add_argument("--runs", type=int, default=200, help="stores per cell")
    parser.add_argument("--seed", type=int, default=20261127)
    parser.add_argument("--sessions", type=int, nargs="+", default=[10, 30, 100])
    parser.add_argument("--members", type=int, nargs="+", default=[3, 5, 9])
    parser.add_argument("--power-sessions", type=int, default=30)
    parser.add_argument(
        "--power-cells", type=int, nargs="+", help="indexes of the planted biases to run"
    )
    parser.add_argument("--baseline-src", type=Path, help="src of the tree to compare with")
    parser.add_argument(
        "--grid",
        choices=("full", "latin"),
        default="full",
        help="every generator x members x sessions, or each generator at each member and "
        "session count once (15 cells)",
    )
    parser.add_argument(
        "--cells", nargs="+", help="explicit cells GENERATOR_INDEX:MEMBERS:SESSIONS"
    )
    parser.add_argument("--out", type=Path, help="also write the markdown tables here")
    parser.add_argument(
        "--dump", type=Path, help="save every store's hypotheses here (one file a cell)"
    )
    parser.add_argument("--src", type=Path, default=ROOT / "src", help="the tree to measure")
    args = parser.parse_args()
    SOURCE = args.src.resolve()
    lines: list[str] = []
    if args.null:
        if args.cells:
            cells = [tuple(int(v) for v in cell.split(":")) for cell in args.cells]
        elif args.grid == "latin":
            cells = latin_cells(args.sessions, args.members)
        else:
            cells = [
                (g, m, s)
                for g in range(len(NULL_GENERATORS))
                for m in args.members
                for s in args.sessions
            ]
        lines += null_table(args.runs, args.seed, cells, args.baseline_src, args.dump) + [""]
    if args.power:
        lines += power_table(
            args.runs,
            args.seed,
            args.baseline_src,
            args.power_sessions,
            args.power_cells,
            args.dump,
        )
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
