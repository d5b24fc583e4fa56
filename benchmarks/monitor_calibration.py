"""Issue 34 item 4: the anytime monitor's false confirmations, power and delay, and its cost.

Streams of sessions from a fixed council, every reviewer watched for leniency, first-slot
preference and self-preference (ADR 0053), looked at after every session. Per cell:

- **honest**: the share of streams in which any (reviewer, bias) is ever confirmed
  (target <= 5% + 2 SE), at the default practical null (delta0 = 0.5) and at
  delta0 = 0, where every test sits on the boundary of its null (the worst case of the
  composite null: the level is spent there, and nowhere else);
- **judge 1.0 point harsh**: the share of streams in which that judge's leniency is
  confirmed, and the delay (sessions until confirmation) quartiles (targets: median <= 50
  at 3 members, <= 20 at 5);
- **judge 2.0 points harsh**: the median delay (the centred prior must not slow large
  biases; at most 200 sessions);
- **judge 0.3 point harsh** (inside delta0): the share of streams in which anything is
  confirmed (target <= 5% + 2 SE).

Generators: the independent one's score model as arrays
(``tests/generators/independent_arrays.py``: integer scores clipped to 1-10, per-reviewer
shuffled orders) and the simulator (``llm_council.simulation.simulate_record_columns``).
Honest noise SDs spread evenly from 0.5 to 1.5 points; the harsh judge is judge 0 (the
quietest, as in ``audit_power_history.py``), and in extra rows the noisiest. The per-session
estimates come straight from the score arrays through the same functions the store's
records go through (``session_effects``, ``fold_session``), 200 streams at a time.

Then the cost of one update from a session's records (5 members): the statistic alone
(``session_estimates`` + ``fold_estimates``), and the whole ``current_monitor`` after an
append (lock, read the tail, seal, write the file) on stores of 100 and 2,000 sessions.

    PYTHONPATH=src .venv/bin/python benchmarks/monitor_calibration.py [--streams 200]
        [--sessions 1000] [--seed 1] [--sizes 3 5 9] [--cost-only]
    PYTHONPATH=src .venv/bin/python benchmarks/monitor_calibration.py --missing 0.1
        --streams 100 --sessions 400      # missing cells, 3, 5 and 9 members
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from generators.independent_arrays import draw_score_arrays  # noqa: E402
from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402
from llm_council.simulation.profile import SimulatedProfile  # noqa: E402
from llm_council.simulation.simulated_records import simulate_record_columns  # noqa: E402
from llm_council.stats.monitor.anytime_monitor import (  # noqa: E402
    MonitorSettings,
    MonitorSums,
    fold_session,
)
from llm_council.stats.monitor.monitor_session_effects import (  # noqa: E402
    BIASES,
    effect_design,
    session_effects,
)

#: draws ``(scores (streams, R, R), first (streams, R))`` for one session of every stream
Draw = Callable[[np.random.Generator, int], tuple[np.ndarray, np.ndarray]]


def noise_sds(n_members: int) -> list[float]:
    return np.linspace(0.5, 1.5, n_members).tolist()


def independent(n_members: int, leniency: list[float]) -> Draw:
    spec = CouncilSpec(n_members=n_members, noise_sds=noise_sds(n_members), leniency=leniency)
    return lambda rng, streams: draw_score_arrays(spec, (streams,), rng)


def simulator(n_members: int, leniency: list[float]) -> Draw:
    profiles = [
        SimulatedProfile(noise_sd=sd, leniency=lenient)
        for sd, lenient in zip(noise_sds(n_members), leniency, strict=True)
    ]

    def draw(rng: np.random.Generator, streams: int) -> tuple[np.ndarray, np.ndarray]:
        columns = simulate_record_columns(profiles, streams, rng)
        shape = (streams, n_members, n_members)
        scores = columns.score.reshape(shape)  # every cell kept: session, reviewer, model
        position = columns.position.reshape(shape)
        return scores, np.argmin(position, axis=-1)

    return draw


GENERATORS: dict[str, Callable[[int, list[float]], Draw]] = {
    "independent": independent,
    "simulator": simulator,
}


def run_streams(
    draw: Draw, n_members: int, streams: int, sessions: int, settings: MonitorSettings, seed: int
) -> MonitorSums:
    """Every stream's monitor after ``sessions`` sessions (complete councils, self-reviews)."""
    rng = np.random.default_rng(seed)
    design = effect_design(~np.eye(n_members, dtype=bool), np.arange(n_members))
    assert design is not None
    sums = MonitorSums.empty((streams, n_members, len(BIASES)))
    for _ in range(sessions):
        scores, first = draw(rng, streams)
        estimates, variances = session_effects(design, scores, first)
        sums = fold_session(sums, estimates, variances, settings)
    return sums


def ceiling(streams: int, rate: float = 0.05) -> float:
    return rate + 2.0 * math.sqrt(rate * (1 - rate) / streams)


def _quartiles(delays: np.ndarray) -> str:
    if delays.size == 0:
        return "-"
    q1, q2, q3 = np.percentile(delays, [25, 50, 75])
    return f"{q1:.0f} / {q2:.0f} / {q3:.0f}"


def calibration_tables(
    streams: int, sessions: int, seed: int, sizes: tuple[int, ...] = (3, 5)
) -> str:
    limit = ceiling(streams)
    lines = [
        f"{streams} streams of {sessions} sessions a cell, seed {seed}; noise SDs 0.5-1.5; "
        f"alpha 0.05 over all reviewers, biases and looks; target <= {limit:.1%} "
        "(5% + 2 SE) for false confirmations",
        "",
        "| generator | members | honest: any confirmed (delta0 0.5) | honest: any confirmed "
        "(delta0 0, worst case) | 1.0 harsh: confirmed | delay Q1 / median / Q3 | "
        "1.0 harsh (noisiest judge): delay median | 2.0 harsh: delay median | "
        "0.3 harsh: any confirmed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    default = MonitorSettings()
    boundary = MonitorSettings(delta0=0.0)
    for name, make in GENERATORS.items():
        for n_members in sizes:
            started = time.perf_counter()
            honest_leniency = [0.0] * n_members
            cells = []
            for settings in (default, boundary):
                sums = run_streams(
                    make(n_members, honest_leniency), n_members, streams, sessions, settings, seed
                )
                cells.append(float((sums.confirmed_at > 0).any(axis=(1, 2)).mean()))
            harsh = [-1.0] + [0.0] * (n_members - 1)
            sums = run_streams(make(n_members, harsh), n_members, streams, sessions, default, seed)
            at = sums.confirmed_at[:, 0, 0]
            noisy = [0.0] * (n_members - 1) + [-1.0]
            noisy_sums = run_streams(
                make(n_members, noisy), n_members, streams, sessions, default, seed
            )
            noisy_at = noisy_sums.confirmed_at[:, -1, 0]
            strong = [-2.0] + [0.0] * (n_members - 1)
            strong_at = run_streams(
                make(n_members, strong), n_members, streams, min(sessions, 200), default, seed
            ).confirmed_at[:, 0, 0]
            mild = [-0.3] + [0.0] * (n_members - 1)
            mild_sums = run_streams(
                make(n_members, mild), n_members, streams, sessions, default, seed
            )
            mild_rate = float((mild_sums.confirmed_at > 0).any(axis=(1, 2)).mean())
            noisy_median = (
                f"{np.median(noisy_at[noisy_at > 0]):.0f}" if (noisy_at > 0).any() else "-"
            )
            lines.append(
                f"| {name} | {n_members} | {_mark(cells[0], limit)} | {_mark(cells[1], limit)} | "
                f"{(at > 0).mean():.1%} | {_quartiles(at[at > 0])} | {noisy_median} | "
                f"{_median(strong_at)} | {_mark(mild_rate, limit)} |"
            )
            print(f"  {name} {n_members}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return "\n".join(lines)


def run_streams_with_missing(
    n_members: int,
    leniency: list[float],
    streams: int,
    sessions: int,
    settings: MonitorSettings,
    seed: int,
    missing: float,
) -> MonitorSums:
    """As :func:`run_streams` on the independent generator with each score missing at
    rate ``missing`` (and a self-review missing too): every session has its own pattern
    of scored cells, so each is fitted on its own, as the store's records are."""
    spec = CouncilSpec(n_members=n_members, noise_sds=noise_sds(n_members), leniency=leniency)
    rng = np.random.default_rng(seed)
    sums = MonitorSums.empty((streams, n_members, len(BIASES)))
    for _ in range(sessions):
        scores, first = draw_score_arrays(spec, (streams,), rng)
        scores = np.where(rng.random(scores.shape) < missing, np.nan, scores)
        estimates = np.full((streams, n_members, len(BIASES)), np.nan)
        variances = np.full_like(estimates, np.nan)
        for stream in range(streams):
            table = scores[stream]
            own = np.where(np.isnan(np.diag(table)), -1, np.arange(n_members))
            fit_mask = ~np.isnan(table) & ~np.eye(n_members, dtype=bool)
            design = effect_design(fit_mask, own)
            if design is not None:
                estimates[stream], variances[stream] = session_effects(design, table, first[stream])
        sums = fold_session(sums, estimates, variances, settings)
    return sums


def missing_cells_table(streams: int, sessions: int, seed: int, missing: float) -> str:
    limit = ceiling(streams)
    lines = [
        f"Independent generator with {missing:.0%} of scores missing at random: {streams} "
        f"streams of {sessions} sessions, seed {seed}; target <= {limit:.1%}",
        "",
        "| members | honest: any confirmed (delta0 0.5) | honest, delta0 = 0 (worst case) | "
        "1.0 harsh: confirmed | delay Q1 / median / Q3 |",
        "|---|---|---|---|---|",
    ]
    for n_members in (3, 5, 9):
        honest = [0.0] * n_members
        rates = [
            float(
                (
                    run_streams_with_missing(
                        n_members, honest, streams, sessions, settings, seed, missing
                    ).confirmed_at
                    > 0
                )
                .any(axis=(1, 2))
                .mean()
            )
            for settings in (MonitorSettings(), MonitorSettings(delta0=0.0))
        ]
        harsh = [-1.0] + [0.0] * (n_members - 1)
        at = run_streams_with_missing(
            n_members, harsh, streams, sessions, MonitorSettings(), seed, missing
        ).confirmed_at[:, 0, 0]
        lines.append(
            f"| {n_members} | {_mark(rates[0], limit)} | {_mark(rates[1], limit)} | "
            f"{(at > 0).mean():.1%} | {_quartiles(at[at > 0])} |"
        )
    return "\n".join(lines)


def _median(at: np.ndarray) -> str:
    """The median confirmation session of the streams confirmed, and how many were."""
    found = at[at > 0]
    return f"{np.median(found):.0f} ({found.size / at.size:.0%})" if found.size else "-"


def _mark(rate: float, limit: float) -> str:
    return f"{rate:.1%}{' !' if rate > limit else ''}"


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1e3:.3f} ms"


def cost_table(seed: int) -> str:
    """Medians of the update's cost per session, 5 members."""
    from llm_council.bias_audit.records.jsonl_store import append_records
    from llm_council.bias_audit.records.monitor_fold import MonitorState, fold_estimates
    from llm_council.bias_audit.records.monitor_sessions import session_estimates
    from llm_council.bias_audit.records.monitor_state import current_monitor
    from llm_council.bias_audit.records.schema import ReviewRecord, upgrade_record

    spec = CouncilSpec(n_members=5, noise_sds=noise_sds(5))
    sessions = [
        [ReviewRecord.model_validate(upgrade_record(raw)) for raw in session.records()]
        for session in generate_sessions(spec, 2300, seed)
    ]
    state = MonitorState(settings=MonitorSettings())
    statistic: list[float] = []
    for records in sessions[:500]:
        started = time.perf_counter()
        estimates = session_estimates(records)
        assert estimates is not None
        state = fold_estimates(state, estimates)
        statistic.append(time.perf_counter() - started)
    rows = [
        "| what (5 members, per session) | median |",
        "|---|---|",
        f"| statistic: records -> estimates -> fold (no I/O) | {_median_ms(statistic[50:])} |",
    ]
    with tempfile.TemporaryDirectory() as directory:
        os.environ.setdefault("LLM_COUNCIL_SUMMARY_KEY_FILE", str(Path(directory) / "summary.key"))
        store = Path(directory) / "records.jsonl"
        for size, batch in ((100, sessions[:100]), (2000, sessions[100:2000])):
            for records in batch:
                append_records(store, records)
            current_monitor(store)
            whole: list[float] = []
            for records in sessions[2000 + (size == 2000) * 150 :][:150]:
                append_records(store, records)
                started = time.perf_counter()
                current_monitor(store)
                whole.append(time.perf_counter() - started)
            size_kib = os.stat(str(store) + ".monitor.json").st_size / 1024
            rows.append(
                f"| whole update after an append, store of {size} sessions "
                f"(state file {size_kib:.0f} KiB) | {_median_ms(whole)} |"
            )
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5])
    parser.add_argument(
        "--missing", type=float, default=0.0, help="only the missing-cells table, at this rate"
    )
    parser.add_argument("--cost-only", action="store_true")
    args = parser.parse_args(argv)
    if args.missing > 0:
        print(missing_cells_table(args.streams, args.sessions, args.seed, args.missing))
        return
    if not args.cost_only:
        print(calibration_tables(args.streams, args.sessions, args.seed, tuple(args.sizes)))
        print()
    print(cost_table(args.seed))


if __name__ == "__main__":
    main()
