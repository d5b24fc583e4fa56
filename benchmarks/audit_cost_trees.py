"""The per-session audit's cost with history, source trees side by side in one run.

Each tree (a directory holding ``src/llm_council``, e.g. main's from
``git -C /work/main archive HEAD src | tar -x -C /tmp/cost-base``) gets one worker
process per council size, started with that tree's ``src`` first on ``PYTHONPATH``. Every
worker draws the same sessions (the independent generator of the tests, noise SDs
0.5-1.5, 30 sessions of history, the same seed), audits 50 of them to warm the
per-pattern caches as a running council has, then audits the sessions it is sent in
rounds: round k sends sessions [k*chunk, (k+1)*chunk) to every tree in turn, the order
of the trees rotating each round, so a burst of load on the shared machine falls on
every tree alike. Each session is timed by wall clock (``perf_counter``) and by the
thread's CPU time (``thread_time``: what the audit costs whatever else runs).

    PYTHONPATH=src nice .venv/bin/python benchmarks/audit_cost_trees.py \\
        --trees /tmp/cost-base . --sizes 3 5 9 --sessions 1000 --seeds 1 2

The first tree is the reference of the ratio column.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
N_HISTORY = 30
WARM_UP = 50


def _worker(n_members: int, seed: int, n_sessions: int) -> None:
    """Read ``start end`` lines on stdin, audit those sessions, answer with their times."""
    sys.path.insert(0, str(ROOT / "tests"))
    import numpy as np

    import llm_council
    from generators.independent_council import CouncilSpec, generate_session
    from llm_council.bias_audit.records.reviewer_profiles import merge_profiles, session_profiles
    from llm_council.bias_audit.session.audit import audit_score_table
    from llm_council.bias_audit.session.score_table import score_table_from_mappings
    from llm_council.bias_audit.session.thresholds import AuditThresholds

    spec = CouncilSpec(n_members=n_members, noise_sds=np.linspace(0.5, 1.5, n_members).tolist())

    def draw(rng: np.random.Generator) -> object:
        session = generate_session(spec, rng)
        return score_table_from_mappings(
            session.stage1_responses, session.stage2_scores, session.position_mapping
        )

    def profiles(table: object) -> object:
        scores, is_self = table.scores, table.is_self  # type: ignore[attr-defined]
        rows, columns = np.nonzero(~np.isnan(scores) & ~is_self)
        return session_profiles(
            (
                table.reviewers[r],  # type: ignore[attr-defined]
                table.candidates[c],  # type: ignore[attr-defined]
                float(scores[r, c]),
                int(table.positions[r, c]) if table.positions[r, c] >= 0 else None,  # type: ignore[attr-defined]
            )
            for r, c in zip(rows.tolist(), columns.tolist(), strict=True)
        )

    rng = np.random.default_rng(seed)
    history: dict = {}
    for _ in range(N_HISTORY):
        history = merge_profiles(history, profiles(draw(rng)))
    tables = [draw(rng) for _ in range(n_sessions)]
    thresholds = AuditThresholds()
    for table in tables[:WARM_UP]:
        audit_score_table(table, thresholds, history=history)
    print(json.dumps({"ready": str(Path(llm_council.__file__).parents[1])}), flush=True)
    for line in sys.stdin:
        start, end = map(int, line.split())
        walls, cpus = [], []
        for index in range(start, end):
            wall, cpu = time.perf_counter(), time.thread_time()
            audit_score_table(tables[index], thresholds, history=history, permutation_seed=index)
            cpus.append(time.thread_time() - cpu)
            walls.append(time.perf_counter() - wall)
        print(json.dumps({"wall": walls, "cpu": cpus}), flush=True)


def _start(tree: Path, n_members: int, seed: int, n_sessions: int) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(tree / "src"))
    command = [sys.executable, __file__, "--worker", str(n_members), str(seed), str(n_sessions)]
    return subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


def _answer(worker: subprocess.Popen[str]) -> dict:
    assert worker.stdout is not None
    line = worker.stdout.readline()
    if not line:
        raise RuntimeError(f"a worker stopped (exit code {worker.wait()})")
    return json.loads(line)


def compare(
    trees: list[Path], n_members: int, seed: int, n_sessions: int, chunk: int = 50
) -> dict[Path, dict[str, list[float]]]:
    """Per tree, the wall and CPU seconds of each of ``n_sessions`` sessions, interleaved."""
    workers = {tree: _start(tree, n_members, seed, n_sessions) for tree in trees}
    timings: dict[Path, dict[str, list[float]]] = {tree: {"wall": [], "cpu": []} for tree in trees}
    try:
        for tree, worker in workers.items():
            loaded = Path(_answer(worker)["ready"]).resolve()
            if loaded != (tree / "src").resolve():
                raise RuntimeError(f"tree {tree} imported llm_council from {loaded}")
        for round_index, start in enumerate(range(0, n_sessions, chunk)):
            shift = round_index % len(trees)
            for tree in trees[shift:] + trees[:shift]:
                worker = workers[tree]
                assert worker.stdin is not None
                worker.stdin.write(f"{start} {min(n_sessions, start + chunk)}\n")
                worker.stdin.flush()
                answer = _answer(worker)
                timings[tree]["wall"] += answer["wall"]
                timings[tree]["cpu"] += answer["cpu"]
    finally:
        for worker in workers.values():
            if worker.stdin is not None:
                worker.stdin.close()
            worker.wait()
    return timings


def _quantile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * share))]


def table(trees: list[Path], sizes: list[int], seeds: list[int], n_sessions: int) -> str:
    """A markdown table: per size, seed and tree, the medians and 95th percentiles of wall
    and CPU time, and the CPU median's ratio to the first tree's."""
    lines = [
        f"load average at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "",
        "| members | seed | tree | wall median | wall p95 | CPU median | CPU p95 | CPU ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for n_members in sizes:
        for seed in seeds:
            timings = compare(trees, n_members, seed, n_sessions)
            reference = statistics.median(timings[trees[0]]["cpu"])
            for tree in trees:
                wall, cpu = timings[tree]["wall"], timings[tree]["cpu"]
                cpu_median = statistics.median(cpu)
                lines.append(
                    f"| {n_members} | {seed} | {tree} | {statistics.median(wall) * 1e3:.2f} ms "
                    f"| {_quantile(wall, 0.95) * 1e3:.2f} ms | {cpu_median * 1e3:.2f} ms "
                    f"| {_quantile(cpu, 0.95) * 1e3:.2f} ms | {cpu_median / reference:.2f} |"
                )
    lines += ["", f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}"]
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        _worker(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trees", type=Path, nargs="+", default=[ROOT])
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 9])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--sessions", type=int, default=1000)
    args = parser.parse_args()
    for tree in args.trees:
        if not (tree / "src" / "llm_council" / "__init__.py").is_file():
            parser.error(f"--trees: {tree} has no src/llm_council/__init__.py")
    print(table(args.trees, args.sizes, args.seeds, args.sessions))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
