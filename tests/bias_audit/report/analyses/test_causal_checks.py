"""The causal-checks section (ADR 0024): statistics against references, and the report.

The store generator here is written for these tests only and shares no code with
``llm_council.simulation``: it draws records the way the council's middleware writes them
(a review that counts, and for a chosen reviewer one check review of the same answers).
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from bias_audit.report.report_numbers import assert_same_numbers
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.analyses.causal_checks import (
    icc_one_way,
    padding_effect,
    repeat_stability,
    slot_effect,
)
from llm_council.bias_audit.report.render.render_html import render_html
from llm_council.bias_audit.report.render.render_tables import render_csv, render_json
from llm_council.bias_audit.report.render.render_text import render_text

# --- the statistics against independent references ------------------------------------


def _sandwich_with_dummies(
    x: np.ndarray, y: np.ndarray, sessions: np.ndarray
) -> tuple[float, float]:
    """Slope and CR1 se from the full dummy-variable design, written out with matrices."""
    labels, cluster = np.unique(sessions, return_inverse=True)
    dummies = (cluster[:, None] == np.arange(labels.size)[None, :]).astype(float)
    design = np.column_stack([x, dummies])
    bread = np.linalg.pinv(design.T @ design)
    coef = bread @ design.T @ y
    residual = y - design @ coef
    meat = np.zeros((design.shape[1], design.shape[1]))
    for index in range(labels.size):
        rows = cluster == index
        score = design[rows].T @ residual[rows]
        meat += np.outer(score, score)
    g = labels.size
    variance = g / (g - 1) * bread @ meat @ bread
    return float(coef[0]), math.sqrt(variance[0, 0])


def test_slot_effect_matches_the_dummy_variable_sandwich() -> None:
    rng = np.random.default_rng(4)
    sessions = np.repeat(np.arange(12), 4)
    x = np.concatenate([rng.permutation(4) - rng.permutation(4) for _ in range(12)]).astype(float)
    y = 0.3 * x + np.repeat(rng.normal(size=12), 4) + rng.normal(size=48)
    estimate = slot_effect(x, y, sessions)
    beta, se = _sandwich_with_dummies(x, y, sessions)
    assert estimate.estimate == pytest.approx(beta, rel=1e-10)
    half = stats.t.ppf(0.975, 11) * se
    assert estimate.ci_low == pytest.approx(beta - half, rel=1e-9)
    assert estimate.p_value == pytest.approx(2 * stats.t.sf(abs(beta / se), 11), rel=1e-9)
    assert estimate.n_sessions == 12 and estimate.n_pairs == 48


def test_slot_effect_hand_derivation() -> None:
    # two sessions, two answers each, slots swapped:
    #   s1: dx = (+1, -1), dy = (+1, -1) -> demeaned the same;  s2: dx = (+1, -1), dy = (3, 1)
    #   -> demeaned dy = (+1, -1).  beta = sum(x y) / sum(x^2) = 4 / 4 = 1, residuals all 0
    estimate = slot_effect(
        np.array([1.0, -1, 1, -1]), np.array([1.0, -1, 3, 1]), np.array([1, 1, 2, 2])
    )
    assert estimate.estimate == pytest.approx(1.0)
    assert math.isnan(estimate.ci_low)  # zero residual variance: no interval, not a fake one


def test_padding_effect_is_the_one_sample_t_interval() -> None:
    rng = np.random.default_rng(1)
    treated, control = rng.normal(0.5, 1, 15), rng.normal(0, 0.3, 15)
    estimate = padding_effect(treated, control, np.arange(15))
    reference = stats.ttest_1samp(treated - control, 0.0)
    low, high = reference.confidence_interval(0.95)
    assert estimate.estimate == pytest.approx(float(np.mean(treated - control)))
    assert (estimate.ci_low, estimate.ci_high) == pytest.approx((low, high), rel=1e-10)
    assert estimate.p_value == pytest.approx(reference.pvalue, rel=1e-10)


def test_icc_hand_derivation() -> None:
    # pairs (1,2), (3,3), (5,6): row means 1.5, 3, 5.5, grand mean 10/3
    # MS_B = 2 * ((1.5-10/3)^2 + (3-10/3)^2 + (5.5-10/3)^2) / 2 = 8.1667
    # MS_W = (0.25*2 + 0 + 0.25*2) / 3 = 0.3333;  ICC = (8.1667-.3333)/(8.1667+.3333) = 0.92157
    assert icc_one_way(np.array([1.0, 3, 5]), np.array([2.0, 3, 6])) == pytest.approx(
        0.921568627, rel=1e-8
    )


def test_repeat_stability_counts_and_intervals() -> None:
    original = np.array([5.0, 6, 7, 5, 6, 7, 5, 6, 7, 4])
    repeat = np.array([5.0, 7, 7, 5, 6, 8, 5, 6, 7, 4])
    sessions = np.arange(10)
    result = repeat_stability(original, repeat, sessions)
    assert result.mean_abs_change.estimate == pytest.approx(0.2)
    assert result.share_identical.estimate == pytest.approx(0.8)
    reference = stats.ttest_1samp(np.abs(repeat - original), 0.0).confidence_interval(0.95)
    assert result.mean_abs_change.ci_low == pytest.approx(reference.low, rel=1e-10)
    assert result.icc.ci_low <= result.icc.estimate <= result.icc.ci_high


# --- a paired-check store generator (independent of llm_council.simulation) -------------


@dataclass(frozen=True)
class CheckWorld:
    """Reviewers with a causal slot effect, repeat noise and padding effect (default zero)."""

    n_sessions: int = 60
    n_candidates: int = 4
    reviewers: tuple[str, ...] = ("r1", "r2", "r3")
    slot_effect: dict[str, float] = field(default_factory=dict)  # points per slot later
    padding_effect: dict[str, float] = field(default_factory=dict)  # points when padded
    identity_effect: dict[str, float] = field(default_factory=dict)  # points when signed
    noise_sd: float = 0.8
    integer_scores: bool = True
    check_kinds: tuple[str, ...] = ("reshuffle", "repeat", "padding")


def _score(world: CheckWorld, quality: float, rng: np.random.Generator) -> float:
    value = quality + world.noise_sd * rng.standard_normal()
    value = min(max(value, 1.0), 10.0)
    return float(round(value)) if world.integer_scores else value


def _line_maker(
    world: CheckWorld, session: int, reviewer: str, words: dict[str, int]
) -> Callable[..., dict[str, object]]:
    def line(model: str, slot: int, score: float, **check: object) -> dict[str, object]:
        return {
            "schema_version": 1,
            "session_id": f"s{session:05d}",
            "timestamp": "2026-11-20T00:00:00.000+00:00",
            "reviewer_id": reviewer,
            "model_id": model,
            "position": slot,
            "n_candidates": world.n_candidates,
            "response_length_chars": words[model] * 6,
            "response_length_words": words[model],
            "score_value": score,
            "score_scale": [1.0, 10.0],
            "rank": None,
            "is_self_review": False,
            "council_config_hash": "sha256:test",
            "query_hash": None,
            **check,
        }

    return line


def generate_check_lines(world: CheckWorld, seed: int) -> list[dict[str, object]]:
    """Record lines as the middleware writes them: each reviewer reviews every session,
    and gets one check (kinds in rotation) per session."""
    rng = np.random.default_rng(seed)
    models = [f"m{i}" for i in range(world.n_candidates)]
    lines: list[dict[str, object]] = []
    for session in range(world.n_sessions):
        quality = {m: 5.5 + rng.normal() for m in models}
        words = {m: int(rng.integers(80, 400)) for m in models}
        for index, reviewer in enumerate(world.reviewers):
            slope = world.slot_effect.get(reviewer, 0.0)
            line = _line_maker(world, session, reviewer, words)
            order = list(rng.permutation(models))

            for slot, model in enumerate(order):
                lines.append(line(model, slot, _score(world, quality[model] + slope * slot, rng)))
            kind = world.check_kinds[(session + index) % len(world.check_kinds)]
            original_slot = {m: s for s, m in enumerate(order)}
            if kind == "reshuffle":
                fresh = list(rng.permutation(order))
                while fresh == order:
                    fresh = list(rng.permutation(order))
                for slot, model in enumerate(fresh):
                    score = _score(world, quality[model] + slope * slot, rng)
                    lines.append(
                        line(
                            model,
                            slot,
                            score,
                            check_kind="reshuffle",
                            check_of_position=original_slot[model],
                        )
                    )
            else:
                treats = kind in ("padding", "identity")
                padded = order[int(rng.integers(len(order)))] if treats else None
                effects = world.padding_effect if kind == "padding" else world.identity_effect
                bonus = effects.get(reviewer, 0.0)
                for slot, model in enumerate(order):
                    extra = bonus if model == padded else 0.0
                    entry = line(
                        model,
                        slot,
                        _score(world, quality[model] + slope * slot + extra, rng),
                        check_kind=kind,
                        check_of_position=slot,
                        check_treated=(model == padded) if treats else None,
                    )
                    if model == padded and kind == "padding":
                        entry["response_length_words"] = 2 * words[model] + 8
                    lines.append(entry)
    return lines


def write_store(path: Path, lines: Sequence[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


# --- the section in the report ----------------------------------------------------------


def test_report_recovers_injected_effects_and_renders_them(tmp_path: Path) -> None:
    world = CheckWorld(
        n_sessions=60, slot_effect={"r1": -0.6}, padding_effect={"r2": 1.0}, noise_sd=0.7
    )
    report = build_report(write_store(tmp_path / "s.jsonl", generate_check_lines(world, 0)))
    assert report.causal_checks is not None
    by_reviewer = {r.reviewer: r for r in report.causal_checks.reviewers}
    r1, r2 = by_reviewer["r1"], by_reviewer["r2"]
    assert r1.slot_effect is not None and r1.slot_effect.finding
    assert r1.slot_effect.ci_low < -0.6 < r1.slot_effect.ci_high
    assert r2.padding_effect is not None and r2.padding_effect.finding
    assert r2.padding_effect.ci_low < 1.0 < r2.padding_effect.ci_high
    assert r2.padding_log_word_ratio > math.log(2)
    assert r1.repeat is not None and 0 < r1.repeat.icc.estimate < 1
    # observational sections never see check records: each review is counted once
    assert report.n_records == 60 * 3 * 4
    text = render_text(report)
    assert "=== Causal checks" in text and "DETECTED" in text
    assert "Re-shuffle, points per slot later" in text
    csv_rows = list(csv.reader(io.StringIO(render_csv(report))))
    assert ["causal_checks", "r1", "slot_effect_per_slot"] in [row[:3] for row in csv_rows]
    assert "=== Causal checks" in render_html(report)  # through the embedded full text
    section = json.loads(render_json(report))["causal_checks"]
    assert {r["reviewer"] for r in section["reviewers"]} == {"r1", "r2", "r3"}


def test_report_recovers_an_identity_effect(tmp_path: Path) -> None:
    world = CheckWorld(
        n_sessions=40,
        check_kinds=("identity", "repeat"),
        identity_effect={"r3": 1.5},
        noise_sd=0.7,
    )
    report = build_report(write_store(tmp_path / "s.jsonl", generate_check_lines(world, 3)))
    assert report.causal_checks is not None
    by_reviewer = {r.reviewer: r for r in report.causal_checks.reviewers}
    r3 = by_reviewer["r3"].identity_effect
    assert r3 is not None and r3.finding and r3.ci_low < 1.5 < r3.ci_high
    assert by_reviewer["r1"].identity_effect is not None
    assert by_reviewer["r1"].slot_effect is None  # no reshuffle checks in this store
    assert "Identity, points gained" in render_text(report)


def test_report_without_checks_has_no_section_and_too_few_says_so(tmp_path: Path) -> None:
    lines = generate_check_lines(CheckWorld(n_sessions=6), 1)
    plain = [line for line in lines if "check_kind" not in line]
    report = build_report(write_store(tmp_path / "plain.jsonl", plain))
    assert report.causal_checks is None and "Causal checks" not in render_text(report)
    few = build_report(write_store(tmp_path / "few.jsonl", lines))
    assert few.causal_checks is not None
    assert all(r.slot_effect is None for r in few.causal_checks.reviewers)  # 2 sessions each
    assert "too few" in render_text(few)


def test_observational_sections_are_unchanged_by_check_records(tmp_path: Path) -> None:
    lines = generate_check_lines(CheckWorld(n_sessions=20, padding_effect={"r1": 3.0}), 2)
    plain = [line for line in lines if "check_kind" not in line]
    with_checks = build_report(write_store(tmp_path / "a.jsonl", lines), n_resamples=20)
    without = build_report(write_store(tmp_path / "b.jsonl", plain), n_resamples=20)
    # equal to 1e-9: DuckDB's parallel aggregation may change the last bit between runs
    observational = ("profiles", "length", "position")
    assert (
        assert_same_numbers(
            {key: json.loads(render_json(with_checks))[key] for key in observational},
            {key: json.loads(render_json(without))[key] for key in observational},
        )
        > 20
    )


def _rejections(world: CheckWorld, n_stores: int, seed: int) -> tuple[int, int]:
    """How many of ``n_stores`` stores reject (slot test, padding test) at 5% for r1."""
    slot = padding = 0
    for store in range(n_stores):
        slot_rejects, padding_rejects = _reviewer_tests_reject(
            generate_check_lines(world, seed + store)
        )
        slot += slot_rejects
        padding += padding_rejects
    return slot, padding


def _reviewer_tests_reject(lines: list[dict[str, object]]) -> tuple[int, int]:
    """Whether the slot and the padding tests reject at 5% on these lines (pure functions)."""
    original = {
        (line["session_id"], line["model_id"]): line for line in lines if "check_kind" not in line
    }
    shuffle = [line for line in lines if line.get("check_kind") == "reshuffle"]
    pads = [line for line in lines if line.get("check_kind") == "padding"]

    def change(line: dict[str, object]) -> float:
        base = original[(line["session_id"], line["model_id"])]
        return float(line["score_value"]) - float(base["score_value"])  # type: ignore[arg-type]

    slot = slot_effect(
        np.array([float(line["position"]) - float(line["check_of_position"]) for line in shuffle]),  # type: ignore[arg-type]
        np.array([change(line) for line in shuffle]),
        np.array([line["session_id"] for line in shuffle]),
    )
    sessions = sorted({str(line["session_id"]) for line in pads})
    treated, control = [], []
    for session in sessions:
        mine = [entry for entry in pads if entry["session_id"] == session]
        treated += [change(entry) for entry in mine if entry["check_treated"]]
        control.append(
            float(np.mean([change(entry) for entry in mine if not entry["check_treated"]]))
        )
    padding = padding_effect(np.array(treated), np.array(control), np.array(sessions))
    # each test alone at 5% (its own false-positive rate, before the report-wide procedure)
    return int(slot.p_value < 0.05), int(padding.p_value < 0.05)


NULL_WORLD = CheckWorld(n_sessions=30, reviewers=("r1",))


def test_null_false_positive_rate_quick() -> None:
    # 60 null stores x 2 tests = 120 tests; at a true 5% the count is <= 13 with 97% probability
    slot, padding = _rejections(NULL_WORLD, 60, 100)
    assert slot + padding <= 13


@pytest.mark.slow
def test_null_false_positive_rate_and_power_slow() -> None:
    """Second generator: 30 sessions, kinds in rotation (10 reshuffle, 10 padding sessions),
    4 answers, integer scores, noise sd 0.8. Prints the measured rates for the docs."""
    n_null, n_power = 2000, 400
    slot, padding = _rejections(NULL_WORLD, n_null, 10_000)
    mc_error = math.sqrt(0.05 * 0.95 / n_null)
    print(
        f"\nnull: slot {slot / n_null:.4f}, padding {padding / n_null:.4f} (MC se {mc_error:.4f})"
    )
    assert slot / n_null <= 0.05 + 3 * mc_error and padding / n_null <= 0.05 + 3 * mc_error
    world = CheckWorld(
        n_sessions=30, reviewers=("r1",), slot_effect={"r1": -0.3}, padding_effect={"r1": 0.8}
    )
    slot_power, padding_power = _rejections(world, n_power, 50_000)
    print(
        f"power: slot -0.3/slot {slot_power / n_power:.3f}, "
        f"padding +0.8 {padding_power / n_power:.3f}"
    )
    # measured (seeded, so reproducible): slot 0.635, padding 0.388 with 10 sessions each
    assert slot_power / n_power > 0.5 and padding_power / n_power > 0.3
