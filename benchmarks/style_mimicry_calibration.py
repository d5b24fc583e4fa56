"""False-alarm rate and power of the style-mimicry flag, at 3, 5 and 9 reviewers.

The estimator is ``bias-report``'s own
(:func:`llm_council.stats.bias_effects.style_mimicry.mimicry_slopes`
plus Holm across reviewers at 0.05), fed with arrays so thousands of fresh councils run in
minutes; ``tests/bias_audit/report/analyses/test_style_mimicry.py -m slow`` repeats a smaller grid
through the report's loading. Two generators:

- **simulator**: ``llm_council.simulation.simulated_records`` (member style centres, per-answer
  style noise, similarity = (1 + cos) / 2; member 0 gets ``style_mimicry``);
- **independent**: ``tests/generators/independent_council.py`` (integer, clipped scores,
  5% missing cells) wrapped by ``tests/generators/style_similarity.py``, where similarity
  is **correlated with quality** (style_quality 0.15: good answers resemble good answers)
  -- the null a naive score-vs-similarity correlation fails.

For each setting: ``false alarm`` = share of null councils where any reviewer is flagged
(Holm promises <= 5%); ``per-test`` = share of single reviewer tests at p < 0.05 (the
uncorrected level, 5% expected); ``session-FE only`` = the false alarm rate of the same
regression with session instead of answer fixed effects (what ignoring answer quality
costs); ``power`` = share of councils where member 0, mimicking with the given points per
unit of similarity, is flagged; ``others`` = share of those where another reviewer is
flagged too.

    .venv/bin/python benchmarks/style_mimicry_calibration.py [--null-runs 1000]
        [--power-runs 300] [--sessions 150] [--sizes 3 5 9] [--effects 2 4 8]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from generators.independent_council import CouncilSpec, generate_sessions  # noqa: E402
from generators.style_similarity import StyleSpec, add_similarity, styled_arrays  # noqa: E402
from llm_council.simulation.profile import SimulatedProfile  # noqa: E402
from llm_council.simulation.simulated_records import simulate_record_columns  # noqa: E402
from llm_council.stats.bias_effects.style_mimicry import mimicry_slopes  # noqa: E402
from llm_council.stats.inference.multiplicity import holm_adjusted  # noqa: E402

ALPHA = 0.05
Arrays = dict[str, np.ndarray]


def simulator_arrays(n_members: int, n_sessions: int, seed: int, mimicry: float) -> Arrays:
    profiles = [
        SimulatedProfile(noise_sd=0.8, style_mimicry=mimicry if i == 0 else 0.0)
        for i in range(n_members)
    ]
    columns = simulate_record_columns(profiles, n_sessions, np.random.default_rng(seed))
    keep = ~columns.is_self_review & ~np.isnan(columns.score)
    return {
        "score": columns.score[keep],
        "similarity": columns.similarity[keep],
        "log_words": np.log(columns.length_words[keep]),
        "reviewer": columns.reviewer_index[keep],
        "answer": columns.session_index[keep] * n_members + columns.model_index[keep],
        "session": columns.session_index[keep],
    }


def independent_arrays(n_members: int, n_sessions: int, seed: int, mimicry: float) -> Arrays:
    spec = CouncilSpec(n_members=n_members, missing_score_rate=0.05)
    styled = add_similarity(
        generate_sessions(spec, n_sessions, seed),
        StyleSpec(style_quality=0.15, mimicry=[mimicry] + [0.0] * (n_members - 1)),
        seed=seed + 7919,
    )
    return styled_arrays(styled)


GENERATORS: dict[str, Callable[[int, int, int, float], Arrays]] = {
    "simulator": simulator_arrays,
    "independent": independent_arrays,
}


def flags(
    arrays: Arrays, n_members: int, *, answer_effects: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """(Holm flags, raw p-values) per reviewer."""
    grouping = arrays["answer"] if answer_effects else arrays["session"]
    fit = mimicry_slopes(
        arrays["score"],
        arrays["similarity"],
        arrays["log_words"],
        arrays["reviewer"],
        grouping,
        arrays["session"],
        n_members,
    )
    raw = np.array([slope.p_value for slope in fit.slopes])
    return holm_adjusted(raw) < ALPHA, raw


def binomial_se(rate: float, runs: int) -> float:
    return float(np.sqrt(max(rate * (1 - rate), 1e-12) / runs))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--null-runs", type=int, default=1000)
    parser.add_argument("--power-runs", type=int, default=300)
    parser.add_argument("--sessions", type=int, default=150)
    parser.add_argument("--sizes", type=int, nargs="+", default=[3, 5, 9])
    parser.add_argument("--effects", type=float, nargs="+", default=[2.0, 4.0, 8.0])
    parser.add_argument("--generators", nargs="+", default=sorted(GENERATORS))
    args = parser.parse_args(argv)
    started = time.perf_counter()
    print(
        "| generator | reviewers | sessions | false alarm (any reviewer) | per-test at 0.05 "
        "| session-FE only | "
        + " | ".join(f"power at {effect:g} (others)" for effect in args.effects)
        + " |"
    )
    print("|" + "---|" * (6 + len(args.effects)))
    for name in args.generators:
        draw = GENERATORS[name]
        for n_members in args.sizes:
            any_flag = naive_flag = 0
            per_test: list[bool] = []
            for run in range(args.null_runs):
                arrays = draw(n_members, args.sessions, 10_000 + run, 0.0)
                flagged, raw = flags(arrays, n_members)
                any_flag += int(flagged.any())
                per_test.extend((raw[np.isfinite(raw)] < ALPHA).tolist())
                naive_flag += int(flags(arrays, n_members, answer_effects=False)[0].any())
            null_rate = any_flag / args.null_runs
            cells = [
                f"{null_rate:.3f} ± {binomial_se(null_rate, args.null_runs):.3f}",
                f"{np.mean(per_test):.3f}",
                f"{naive_flag / args.null_runs:.3f}",
            ]
            for effect in args.effects:
                found = others = 0
                for run in range(args.power_runs):
                    flagged, _ = flags(
                        draw(n_members, args.sessions, 50_000 + run, effect), n_members
                    )
                    found += int(flagged[0])
                    others += int(flagged[1:].any())
                cells.append(f"{found / args.power_runs:.3f} ({others / args.power_runs:.3f})")
            print(
                f"| {name} | {n_members} | {args.sessions} | " + " | ".join(cells) + " |",
                flush=True,
            )
    print(
        f"\n{args.null_runs} null and {args.power_runs} power councils per row; "
        f"{time.perf_counter() - started:.0f} s"
    )


if __name__ == "__main__":
    main()
