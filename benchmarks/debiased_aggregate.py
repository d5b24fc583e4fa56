"""Raw vs debiased aggregate: top-1 accuracy and Kendall's tau against true quality.

Two sources, so the debiasing is not only checked on the simulator it was built beside:

- the simulated council (``llm_council.simulation`` through ``run_full_council``: answers
  carry their true quality in a footer). History: ``--history`` sessions run with the bias
  audit on, writing the store the adjustments are read from
  (:func:`~llm_council.bias_audit.session.history_adjustments.reviewer_adjustments`).
  "bias" is the default council (harsh -1.5, verbose 1.5/ln-word, primacy +1 at slot A,
  narcissist +1.5 on itself, one balanced judge); "no bias" is five ``unbiased`` members.
- the independent generator (``tests/generators/independent_council.py``: integer scores
  clipped to 1-10, per-reviewer shuffled orders, noise SDs spread 0.5-1.5). "bias": one
  judge 2 points harsh, one 1 point generous, one +1.5 at slot A, one 1 point per SD of
  log length; "no bias": none of it. Each reviewer's ranking is its scores' order (ties
  by name), as a reviewer that ranks by its own scores would give.

Per replicate: a fresh history, the adjustments fitted once, then ``--sessions`` new
sessions scored three ways: raw (the council's ``aggregate_rankings``: mean rank), raw
mean score (no adjustment: what "debiased" is with every adjustment zero) and debiased.
Top-1: the winner has the highest true quality. Tau: ``scipy.stats.kendalltau`` of the
places against the true qualities. Intervals: mean +- 1.96 SE over replicates (sessions
of one replicate share its history); "debiased - raw" and "debiased - mean score" are
paired differences (the second is what the adjustments themselves do).

    PYTHONPATH=src .venv/bin/python benchmarks/debiased_aggregate.py
        [--replicates 12] [--history 30] [--sessions 40] [--seed 1] [--markdown]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from generators.independent_council import (  # noqa: E402
    CouncilSpec,
    generate_sessions,
    write_store,
)
from llm_council.aggregate import aggregate_reviews  # noqa: E402
from llm_council.bias_audit.session.history_adjustments import (  # noqa: E402
    reviewer_adjustments,
)
from llm_council.debiased_aggregate import (  # noqa: E402
    ReviewerAdjustment,
    debiased_aggregate,
)
from llm_council.results import CandidateScore, LabelAssignment, Review  # noqa: E402

METHODS = ("raw", "raw_mean_score", "debiased")


def _session_metrics(places: Sequence[str], quality: Mapping[str, float]) -> tuple[float, float]:
    truth = [quality[model] for model in places]
    top1 = float(quality[places[0]] == max(quality.values()))
    tau = kendalltau(-np.arange(len(places)), truth).statistic
    return top1, float(tau)


def _three_orders(
    reviews: Sequence[Review],
    chars: Mapping[str, int],
    adjustments: Mapping[str, ReviewerAdjustment],
    candidates: Sequence[str],
) -> dict[str, list[str]]:
    raw = aggregate_reviews(reviews, candidates)
    zero = debiased_aggregate(reviews, chars, {}, raw)
    debiased = debiased_aggregate(reviews, chars, adjustments, raw)
    return {
        "raw": [s.model for s in raw],
        "raw_mean_score": [s.model for s in zero],
        "debiased": [s.model for s in debiased],
    }


# --- the independent generator --------------------------------------------------------


def _independent_spec(biased: bool) -> CouncilSpec:
    n = 5
    noise = list(np.linspace(0.5, 1.5, n))
    if not biased:
        return CouncilSpec(n_members=n, noise_sds=noise)
    return CouncilSpec(
        n_members=n,
        noise_sds=noise,
        leniency=[-2.0, 1.0, 0.0, 0.0, 0.0],
        slot_effects=[[], [], [1.5], [], []],
        verbosity=[0.0, 0.0, 0.0, 1.0, 0.0],
    )


def _reviews_of(session: object) -> tuple[list[Review], dict[str, int], list[str]]:
    scores: dict[str, dict[str, float | None]] = session.stage2_scores  # type: ignore[attr-defined]
    positions: dict[str, dict[str, int]] = session.position_mapping  # type: ignore[attr-defined]
    texts: dict[str, str] = session.stage1_responses  # type: ignore[attr-defined]
    reviews = []
    for reviewer, given in scores.items():
        shown = positions[reviewer]
        ranked = sorted(
            (c for c in shown if given.get(c) is not None),
            key=lambda c: (-(given[c] or 0.0), c),
        )
        rank_of = {c: i for i, c in enumerate(ranked, start=1)}
        label_map = {
            f"Response {chr(65 + p)}": LabelAssignment(model=c, display_index=p)
            for c, p in shown.items()
        }
        reviews.append(
            Review(
                reviewer=reviewer,
                label_to_model=label_map,
                candidates=tuple(
                    CandidateScore(
                        candidate=c,
                        label=f"Response {chr(65 + p)}",
                        display_index=p,
                        score=given.get(c),
                        rank=rank_of.get(c),
                        is_self_review=c == reviewer,
                    )
                    for c, p in shown.items()
                ),
                ranking=tuple(ranked),
                parse_status="json",
            )
        )
    chars = {member: len(text) for member, text in texts.items()}
    return reviews, chars, list(texts)


def independent_replicate(
    biased: bool, history: int, sessions: int, seed: int, directory: Path
) -> dict[str, np.ndarray]:
    spec = _independent_spec(biased)
    drawn = generate_sessions(spec, history + sessions, seed)
    store = directory / f"indep-{seed}.jsonl"
    write_store(store, drawn[:history])
    adjustments = reviewer_adjustments(store, spec.members())
    results: dict[str, list[tuple[float, float]]] = {m: [] for m in METHODS}
    for session in drawn[history:]:
        reviews, chars, candidates = _reviews_of(session)
        for method, places in _three_orders(reviews, chars, adjustments, candidates).items():
            results[method].append(_session_metrics(places, session.quality))
    return {m: np.mean(np.array(v), axis=0) for m, v in results.items()}


# --- the simulated council ------------------------------------------------------------


def simulated_replicate(
    biased: bool, history: int, sessions: int, seed: int, directory: Path
) -> dict[str, np.ndarray]:
    from llm_council.bias_audit.middleware import BiasAuditMiddleware
    from llm_council.config import CouncilConfig, CouncilMember, load_council_config
    from llm_council.council import run_full_council
    from llm_council.simulation.answers import read_footer

    if biased:
        config = load_council_config(environ={})
    else:
        members = [CouncilMember(name=f"u{i}", spec="simulated:unbiased") for i in range(5)]
        config = CouncilConfig(members=tuple(members), chairman=members[0])
    store = directory / f"sim-{seed}-{biased}.jsonl"
    os.environ["LLM_COUNCIL_BIAS_STORE"] = str(store)
    names = [m.name for m in config.members]

    async def run() -> dict[str, np.ndarray]:
        for index in range(history):
            await run_full_council(
                "q", config=config, seed=seed * 100_000 + index, middleware=[BiasAuditMiddleware()]
            )
        adjustments = reviewer_adjustments(store, names, council_config_hash=config.config_hash())
        results: dict[str, list[tuple[float, float]]] = {m: [] for m in METHODS}
        for index in range(history, history + sessions):
            result = await run_full_council(
                "q", config=config, seed=seed * 100_000 + index, middleware=[]
            )
            quality = {a.member: read_footer(a.text or "")[1] for a in result.stage1 if a.ok}
            if any(q is None for q in quality.values()):
                raise RuntimeError("a simulated answer without its quality footer")
            chars = {a.member: len(a.text) for a in result.stage1 if a.text is not None}
            orders = _three_orders(result.stage2, chars, adjustments, list(quality))
            for method, places in orders.items():
                results[method].append(_session_metrics(places, quality))  # type: ignore[arg-type]
        return {m: np.mean(np.array(v), axis=0) for m, v in results.items()}

    return asyncio.run(run())


# --- the table ------------------------------------------------------------------------


def _interval(values: np.ndarray) -> str:
    mean = float(np.mean(values))
    half = 1.96 * float(np.std(values, ddof=1)) / math.sqrt(values.size)
    return f"{mean:.3f} ± {half:.3f}"


def run_cell(
    replicate: Callable[[bool, int, int, int, Path], dict[str, np.ndarray]],
    biased: bool,
    args: argparse.Namespace,
    directory: Path,
) -> dict[str, np.ndarray]:
    per_replicate = [
        replicate(biased, args.history, args.sessions, args.seed + r, directory)
        for r in range(args.replicates)
    ]
    return {m: np.array([rep[m] for rep in per_replicate]) for m in METHODS}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=12)
    parser.add_argument("--history", type=int, default=30)
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    print(
        f"{args.replicates} replicates x {args.sessions} evaluated sessions, "
        f"{args.history} sessions of history each; mean ± 1.96 SE over replicates\n"
    )
    print(
        "| generator | bias | top-1 raw | top-1 mean score | top-1 debiased | "
        "top-1 debiased - raw | top-1 debiased - mean score | tau raw | tau mean score | "
        "tau debiased | tau debiased - raw | tau debiased - mean score |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    sources = {"simulated council": simulated_replicate, "independent": independent_replicate}
    with tempfile.TemporaryDirectory() as temporary:
        for name, replicate in sources.items():
            for biased in (True, False):
                cell = run_cell(replicate, biased, args, Path(temporary))
                row = [name, "bias" if biased else "no bias"]
                for column in (0, 1):
                    row += [_interval(cell[m][:, column]) for m in METHODS]
                    row.append(_interval(cell["debiased"][:, column] - cell["raw"][:, column]))
                    row.append(
                        _interval(cell["debiased"][:, column] - cell["raw_mean_score"][:, column])
                    )
                print("| " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
