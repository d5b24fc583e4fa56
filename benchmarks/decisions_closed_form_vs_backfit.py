"""Decisions affected: the closed-form effects (ADR 0074) against the backfit they replaced.

    .venv/bin/python benchmarks/decisions_closed_form_vs_backfit.py --golden --extra \
        /tmp/store100k.jsonl /tmp/store1m.jsonl   # report_scale.py's simulated stores

For each store (the golden report stores with ``--golden``, three stores of the tests'
generators with ``--extra``, then every JSONL path given),
the section's summary is built once. The reviewer effects are then computed both ways on
the same arrays: backfitting to its tolerance
(:func:`~llm_council.stats.reviewers.reviewer_effects.fit_reviewer_effects`, the section
before ADR 0074) and in closed form from the merged sums (the section now). The table
gives the largest difference of any leniency, slot effect or slope, how many sessions'
debiased winners differ, how many sessions' three counted flags differ, and the
winner-changed counts both ways.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from llm_council.bias_audit.report.analyses.decisions import (  # noqa: E402
    _TIE,
    DECISIONS,
    _effects_by_code,
)
from llm_council.bias_audit.report.analyses.decisions_summary import DecisionsSummary  # noqa: E402
from llm_council.stats.bias_effects.winner_changes import (  # noqa: E402
    SessionWinners,
    _first_per_session,
    effect_adjusted_scores,
    group_mean,
    session_winners,
)
from llm_council.stats.reviewers.reviewer_effects import (  # noqa: E402
    ReviewerEffects,
    fit_reviewer_effects,
)


def _winners(
    summary: DecisionsSummary, effects: list[ReviewerEffects | None]
) -> tuple[np.ndarray, SessionWinners]:
    """Each session's debiased winner, and the section's three flags per session."""
    answers, votes = summary.answers, summary.votes
    adjusted = effect_adjusted_scores(
        effects, votes["reviewer"], votes["position"], answers["x"][votes["answer"]], votes["score"]
    )
    means = group_mean(votes["answer"], adjusted, answers["session"].size)
    with np.errstate(invalid="ignore", divide="ignore"):
        rank = answers["rank_sum"] / answers["rank_count"]
        score = answers["score_sum"] / answers["score_count"]
    order, first = _first_per_session(
        answers["session"], [np.nan_to_num(-means, nan=np.inf), answers["model"]]
    )
    flags = session_winners(answers["session"], answers["model"], rank, score, means, _TIE)
    return order[first], flags


def compare(name: str, path: Path) -> str:
    """One table row."""
    from bias_audit.report.analyses.split_stores import connection_of

    summary = DECISIONS.summarize(connection_of(path))
    closed_form = _effects_by_code(summary)
    votes = summary.votes
    backfit = fit_reviewer_effects(
        votes["answer"],
        votes["reviewer"],
        votes["position"],
        summary.answers["x"][votes["answer"]],
        votes["score"],
        len(summary.reviewers),
    )
    largest = 0.0
    for old, new in zip(backfit, closed_form, strict=True):
        if (old is None) != (new is None):
            raise SystemExit(f"{name}: a reviewer is fitted one way and not the other")
        if old is not None and new is not None:
            slots = max(
                (abs(a - b) for a, b in zip(old.slot_effects, new.slot_effects, strict=True)),
                default=0.0,
            )
            largest = max(
                largest,
                abs(old.leniency - new.leniency),
                abs(old.length_slope - new.length_slope),
                slots,
            )
    old_winner, old_flags = _winners(summary, backfit)
    new_winner, new_flags = _winners(summary, closed_form)
    fitted = sum(effect is not None for effect in closed_form)
    flags_differ = int((old_flags.changed != new_flags.changed).any(axis=1).sum())
    return (
        f"| {name} | {new_flags.sessions.size} | {fitted} | {largest:.1e} | "
        f"{int((old_winner != new_winner).sum())} | {flags_differ} | "
        f"{int(old_flags.changed[:, 0].sum())} / {int(new_flags.changed[:, 0].sum())} |"
    )


def write_extra_stores(directory: Path) -> list[Path]:
    """Three stores of the tests' independent generators: integer scores with 4 and 9
    members (rank generator), and a weakly identified reviewer (independent generator,
    judge-3 reviews in the first 3 of 300 sessions only)."""
    import json

    from bias_audit.report.analyses.split_stores import varied_lengths
    from generators import independent_council, rank_council

    rank4 = rank_council.RankCouncilSpec(
        n_members=4, scores=True, order="reviewer", judges=["first", "honest", "honest", "honest"]
    )
    rank9 = rank_council.RankCouncilSpec(
        n_members=9, scores=True, order="reviewer", missing_review_rate=0.2
    )
    weak = independent_council.CouncilSpec(
        n_members=4, missing_score_rate=0.05, missing_review_rate=0.1, leniency=[-1.5, 0, 0.5, 0]
    )
    stores = {
        "rank4-int.jsonl": [
            varied_lengths(s.records()) for s in rank_council.generate_sessions(rank4, 2000, 1)
        ],
        "rank9-int.jsonl": [
            varied_lengths(s.records()) for s in rank_council.generate_sessions(rank9, 500, 2)
        ],
        "weak4.jsonl": [
            [r for r in s.records() if r["reviewer_id"] != "judge-3" or index < 3]
            for index, s in enumerate(independent_council.generate_sessions(weak, 300, 8))
        ],
    }
    paths = []
    for name, sessions in stores.items():
        path = directory / name
        with path.open("w", encoding="utf-8") as handle:
            for session in sessions:
                for record in session:
                    handle.write(json.dumps(record) + "\n")
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="*", help="JSONL stores")
    parser.add_argument("--golden", action="store_true", help="the golden report stores too")
    parser.add_argument(
        "--extra", action="store_true", help="integer-score and weakly identified stores too"
    )
    args = parser.parse_args()
    print(
        "| store | sessions | fitted reviewers | max effect difference | debiased winners "
        "differing | sessions whose flags differ | winner changed old / new |"
    )
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as directory:
        if args.golden:
            from bias_audit.report.report_golden_cases import CASES

            for name, write in CASES:
                path = Path(directory) / f"{name}.jsonl"
                write(path)
                print(compare(name, path), flush=True)
        extra = write_extra_stores(Path(directory)) if args.extra else []
        for store in [*extra, *map(Path, args.stores)]:
            print(compare(store.name, store), flush=True)


if __name__ == "__main__":
    main()
