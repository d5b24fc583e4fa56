"""Reasoning-chain bias, score/rank mismatch and abstentions on two generators (ADR 0027).

Quick regressions run by default. The calibration table in docs/bias-report.md comes from
``.venv/bin/pytest tests/bias_audit/report/analyses/test_reasoning_and_mismatch.py -m slow -s``
(``REASONING_REPLICATES`` sets the runs). A "false alarm" is any reasoning flag anywhere
in the report (Holm across reviewers promises <= 5% per report); "power" is the share of
runs flagging the injected reviewer (judge1).

Simulator: ``SimulatedProfile.reasoning_bias`` etc. (simulation/simulated_records.py).
Second generator: tests/generators/reasoning_council.py wraps the independent generator
(integer, clipped scores with ties and missing cells) and, in its null, makes rationales
longer when the session's answers are better (a confounder the paired deviation must not
mistake for bias).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from generators.independent_council import CouncilSpec
from generators.reasoning_council import ReasoningSpec, ReasoningTruth, write_reasoning_store
from golden_compare import golden_differences
from llm_council.bias_audit.report.analyses.parse_outcomes import (
    ReviewerParseOutcomes,
    parse_outcomes_by_reviewer,
)
from llm_council.bias_audit.report.analyses.reasoning import (
    ReviewerReasoning,
    reasoning_by_reviewer,
)
from llm_council.bias_audit.report.analyses.reviewers import reviewer_profiles
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import write_record_store


@dataclass(frozen=True)
class Found:
    reasoning: dict[str, ReviewerReasoning]
    outcomes: dict[str, ReviewerParseOutcomes]


def analyse(path: Path) -> Found:
    store = load_store(path)
    try:
        create_analysis_tables(store.connection)
        reasoning = reasoning_by_reviewer(store.connection)
        outcomes = parse_outcomes_by_reviewer(store.connection)
    finally:
        store.connection.close()
    return Found(
        {item.reviewer: item for item in reasoning}, {item.reviewer: item for item in outcomes}
    )


def simulator_store(
    path: Path,
    n_members: int,
    n_sessions: int,
    seed: int,
    *,
    reasoning_bias: float = 0.0,
    mismatch: float = 0.0,
    abstention: float = 0.0,
) -> Path:
    """judge1 carries the reasoning bias, judge2 the ranking slips, judge0 the refusals."""
    names = [f"judge{i}" for i in range(n_members)]
    profiles = [
        SimulatedProfile(
            noise_sd=1.0,
            rationale_mean_chars=900.0,
            rationale_length_sigma=0.6,
            reasoning_bias=reasoning_bias if i == 1 else 0.0,
            rank_mismatch_probability=mismatch if i == 2 else 0.0,
            abstention_probability=abstention if i == 0 else 0.0,
        )
        for i in range(n_members)
    ]
    write_record_store(path, list(zip(names, profiles, strict=True)), n_sessions, seed=seed)
    return path


def independent_store(
    path: Path,
    n_members: int,
    n_sessions: int,
    seed: int,
    *,
    reasoning_bias: float = 0.0,
    mismatch: float = 0.0,
    abstention: float = 0.0,
) -> ReasoningTruth:
    def only(index: int, value: float) -> list[float]:
        return [value if i == index else 0.0 for i in range(n_members)]

    spec = ReasoningSpec(
        council=CouncilSpec(n_members=n_members, missing_score_rate=0.05, missing_review_rate=0.1),
        reasoning_bias=only(1, reasoning_bias),
        mismatch_probability=only(2, mismatch),
        abstention_probability=only(0, abstention),
        quality_rationale_link=0.5,
    )
    return write_reasoning_store(path, spec, n_sessions, seed)


def test_simulator_null_raises_no_reasoning_flag_and_no_mismatch(tmp_path: Path) -> None:
    found = analyse(simulator_store(tmp_path / "null.jsonl", 5, 300, seed=21))
    assert set(found.reasoning) == {f"judge{i}" for i in range(5)}
    assert not any(item.detected for item in found.reasoning.values())
    for item in found.outcomes.values():
        assert item.n_discordant_pairs == 0 and item.n_comparable_pairs > 0
        assert item.mismatch_rate.estimate == 0.0 and item.mismatch_rate.ci_high > 0.0
        assert item.status_counts == {"json": 300} and item.refusal_rate.estimate == 0.0


def test_simulator_reasoning_bias_is_found_on_its_reviewer_with_its_size(tmp_path: Path) -> None:
    found = analyse(simulator_store(tmp_path / "b.jsonl", 5, 300, seed=22, reasoning_bias=-0.6))
    flagged = {name for name, item in found.reasoning.items() if item.detected}
    assert flagged == {"judge1"}
    slope = found.reasoning["judge1"].points_per_doubling
    # the paired deviation measures judge1 against the others: slope -0.6 per doubling
    assert slope.ci_low < -0.6 < slope.ci_high


def test_simulator_mismatch_and_refusals_are_counted_on_their_reviewers(tmp_path: Path) -> None:
    path = simulator_store(tmp_path / "m.jsonl", 5, 400, seed=23, mismatch=0.4, abstention=0.2)
    found = analyse(path)
    assert found.outcomes["judge2"].n_discordant_pairs > 0
    assert all(found.outcomes[f"judge{i}"].n_discordant_pairs == 0 for i in (0, 1, 3, 4))
    judge2 = found.outcomes["judge2"].mismatch_rate
    assert 0.0 < judge2.ci_low < judge2.estimate < judge2.ci_high
    refusal = found.outcomes["judge0"].refusal_rate
    assert refusal.ci_low < 0.2 < refusal.ci_high
    assert found.outcomes["judge1"].status_counts == {"json": 400}


def test_second_generator_truth_is_counted_exactly(tmp_path: Path) -> None:
    truth = independent_store(tmp_path / "i.jsonl", 5, 300, seed=24, mismatch=0.5, abstention=0.25)
    found = analyse(tmp_path / "i.jsonl")
    for name, item in found.outcomes.items():
        assert item.n_discordant_pairs == truth.discordant_pairs[name]
        assert item.status_counts.get("refused", 0) == truth.refused_reviews[name]
        assert item.status_counts.get("error", 0) == truth.failed_reviews[name]
    assert truth.discordant_pairs["judge2"] > 20 and truth.refused_reviews["judge0"] > 40


def test_second_generator_null_with_confounded_lengths_and_its_alternative(
    tmp_path: Path,
) -> None:
    null = tmp_path / "null.jsonl"
    independent_store(null, 5, 300, seed=25)
    assert not any(item.detected for item in analyse(null).reasoning.values())
    biased = tmp_path / "biased.jsonl"
    independent_store(biased, 5, 300, seed=25, reasoning_bias=0.8)
    flagged = {name for name, item in analyse(biased).reasoning.items() if item.detected}
    assert flagged == {"judge1"}


def test_null_records_never_enter_an_estimate(tmp_path: Path) -> None:
    """The same store with and without its refused reviews' lines gives the same numbers."""
    path = simulator_store(tmp_path / "with.jsonl", 4, 200, seed=26, abstention=0.3)
    lines = path.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["review_status"] != "refused"]
    assert len(kept) < len(lines)
    without = tmp_path / "without.jsonl"
    without.write_text("\n".join(kept) + "\n", encoding="utf-8")

    def numbers(store_path: Path) -> list[tuple[object, ...]]:
        store = load_store(store_path)
        try:
            create_analysis_tables(store.connection)
            profiles = reviewer_profiles(store.connection)
            reasoning = reasoning_by_reviewer(store.connection)
        finally:
            store.connection.close()
        return [(p.reviewer, p.n_scores, p.mean_score, p.leniency, p.spread) for p in profiles] + [
            (r.reviewer, r.points_per_doubling, r.n_scores) for r in reasoning
        ]

    # equal up to the order DuckDB's threads sum in (1e-15), never up to a record
    with_refusals, without_refusals = numbers(path), numbers(without)
    assert not golden_differences(
        json.loads(json.dumps(with_refusals, default=vars)),
        json.loads(json.dumps(without_refusals, default=vars)),
        "numbers",
        1e-12,
    )


def test_new_simulator_parameters_at_zero_leave_the_store_unchanged(tmp_path: Path) -> None:
    names = ["a", "b", "c"]
    plain = [SimulatedProfile(noise_sd=1.0) for _ in names]
    explicit = [
        SimulatedProfile(
            noise_sd=1.0,
            reasoning_bias=0.0,
            rank_mismatch_probability=0.0,
            abstention_probability=0.0,
        )
        for _ in names
    ]
    write_record_store(tmp_path / "a.jsonl", list(zip(names, plain, strict=True)), 30, seed=3)
    write_record_store(tmp_path / "b.jsonl", list(zip(names, explicit, strict=True)), 30, seed=3)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    # rationales drawn from a side stream: the scores stay exactly as they were
    with_rationales = [SimulatedProfile(noise_sd=1.0, rationale_mean_chars=500.0) for _ in names]
    write_record_store(
        tmp_path / "c.jsonl", list(zip(names, with_rationales, strict=True)), 30, seed=3
    )
    plain_lines = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    with_lines = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert [line["score_value"] for line in plain_lines] == [
        line["score_value"] for line in with_lines
    ]
    assert all(line["rationale_chars"] >= 1 for line in with_lines)


def _rates(generator: str, n_members: int, bias: float, runs: int, tmp: Path) -> float:
    """Share of runs with any reasoning flag (bias 0) or a flag on judge1 (bias != 0)."""
    hits = 0
    for run in range(runs):
        path = tmp / f"{generator}-{n_members}-{run}.jsonl"
        if generator == "simulator":
            simulator_store(path, n_members, 200, 3000 + run, reasoning_bias=bias)
        else:
            independent_store(path, n_members, 200, 3000 + run, reasoning_bias=bias)
        found = analyse(path)
        if bias == 0.0:
            hits += any(item.detected for item in found.reasoning.values())
        else:
            hits += found.reasoning["judge1"].detected
        path.unlink()
    return hits / runs


@pytest.mark.slow
@pytest.mark.parametrize("generator", ["simulator", "independent"])
@pytest.mark.parametrize("n_members", [3, 5, 9])
def test_reasoning_false_alarm_rate_and_power(
    tmp_path: Path, generator: str, n_members: int
) -> None:
    runs = int(os.environ.get("REASONING_REPLICATES", "100"))
    null = _rates(generator, n_members, 0.0, runs, tmp_path)
    effects = {bias: _rates(generator, n_members, bias, runs, tmp_path) for bias in (0.25, 0.5)}
    print(
        f"\nreasoning {generator:11s} k={n_members} false alarm {null:.3f} power "
        + " ".join(f"@{bias:+.2f}/doubling {rate:.3f}" for bias, rate in effects.items())
        + f" ({runs} runs of 200 sessions)"
    )
    assert null <= 0.05 + 3 * (0.05 * 0.95 / runs) ** 0.5
