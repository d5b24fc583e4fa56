"""label-plan: the planning formulas against hand values, the order, the CLI, label-ui order."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from llm_council.calibration.label_plan import (
    order_pairs,
    pair_priority,
    plan_agreement,
    plan_kappa,
    wilson_halfwidth,
    worst_case_kappa_variance,
)
from llm_council.calibration.label_plan_file import apply_label_order, read_label_order
from llm_council.calibration.label_store import LabelStore
from llm_council.calibration.outcomes import PairOutcome
from llm_council.calibration.pairs import Pair, read_pairs
from llm_council.cli.command_group import app, run
from llm_council.errors import InputError
from llm_council.stats.inference.proportions import wilson_interval

from .label_plan_sim import run_campaign


def _pair(pair_id: str) -> Pair:
    return Pair(pair_id=pair_id, prompt="q", response_a="x", response_b="y")


def test_wilson_halfwidth_matches_the_interval() -> None:
    # 30 of 60: the interval's own half-width equals the formula at p = 0.5
    low, high = wilson_interval(30, 60)
    assert wilson_halfwidth(0.5, 60, 0.95) == pytest.approx((high - low) / 2)


def test_agreement_plan_without_labels_is_the_worst_case() -> None:
    plan = plan_agreement(0.05, 0.95, 0, 0)
    # Wald at p = 0.5 needs 1.96^2 * 0.25 / 0.05^2 = 384.1 -> 385; Wilson's half-width at
    # p-hat = 0.5 is z/(1+z^2/n) * sqrt(0.25/n + z^2/4n^2), which is <= 0.05 from n = 381
    assert plan.total_needed == 381 and plan.more_needed == 381
    assert wilson_halfwidth(0.5, 381, 0.95) <= 0.05 < wilson_halfwidth(0.5, 380, 0.95)


def test_agreement_plan_uses_the_bound_nearest_one_half() -> None:
    # 90/100, 90% Wilson (z = 1.6449, z^2 = 2.7055): centre (0.9 + z^2/200) / (1 + z^2/100)
    # = 0.88946, half-width z/(1 + z^2/100) * sqrt(0.0009 + z^2/40000) = 0.04982 -> 0.83964
    plan = plan_agreement(0.05, 0.95, 100, 90)
    low, _ = wilson_interval(90, 100, 0.90)
    assert plan.planning_value == pytest.approx(low) and low == pytest.approx(0.83964, abs=1e-5)
    # Wald at 0.8396 would ask 1.96^2 * 0.8396 * 0.1604 / 0.05^2 = 206.9; Wilson a few fewer
    assert 195 <= plan.total_needed <= 207
    assert plan.more_needed == plan.total_needed - 100
    assert wilson_halfwidth(low, plan.total_needed, 0.95) <= 0.05
    assert wilson_halfwidth(low, plan.total_needed - 1, 0.95) > 0.05
    # an interval that covers 1/2 plans at 1/2; the informative order ignores the labels
    assert plan_agreement(0.05, 0.95, 20, 11).planning_value == 0.5
    assert plan_agreement(0.05, 0.95, 100, 90, use_labels=False).planning_value == 0.5
    with pytest.raises(ValueError, match="half-width"):
        plan_agreement(float("nan"), 0.95, 0, 0)


def test_kappa_worst_case_binary_balanced_is_one() -> None:
    # two raters, shares (1/2, 1/2), kappa 0: FCE n Var = 1 (p_e = 1/2, numerator
    # sum p_ii[1 - 1]^2 ... reduces to (1 - p_e)^2 * ... = 0.25 / 0.25); larger kappa
    # lowers it, so the worst case over the grid is 1 and n = 1.96^2 / 0.05^2 = 1536.6
    assert worst_case_kappa_variance([0.5, 0.5, 0.0]) == pytest.approx(1.0, rel=1e-6)
    plan = plan_kappa(0.05, 0.95, [], [], [1.0, 1.0, 0.0])
    assert plan.total_needed == math.ceil(1.959963984540054**2 / 0.05**2) == 1537


def test_kappa_plan_from_labels_is_the_bootstrap_quantile() -> None:
    rng = np.random.default_rng(0)
    human = list(rng.choice(["a", "b"], size=200))
    judge = [h if rng.random() < 0.8 else ("b" if h == "a" else "a") for h in human]
    plan = plan_kappa(0.05, 0.95, judge, human, [1.0, 1.0, 0.0], seed=1)
    assert plan.labelled == 200 and "bootstrap" in plan.basis
    # kappa ~0.6 with balanced margins: n Var = (1-k)(1-2k... ) ~ 0.65-0.85 by FCE;
    # the 95% quantile lies above the point value
    assert 0.5 < plan.planning_value < 1.0
    assert plan.total_needed == math.ceil(1.959963984540054**2 * plan.planning_value / 0.0025)


def test_order_puts_flips_and_disagreement_first() -> None:
    pair = _pair("x")
    agree = [PairOutcome(pair, ("a",), ("a",)), PairOutcome(pair, ("a",), ("a",))]
    split = [PairOutcome(pair, ("a",), ("a",)), PairOutcome(pair, ("b",), ("b",))]
    flip = [PairOutcome(pair, ("a",), ("b",)), PairOutcome(pair, ("a",), ("a",))]
    priorities = [
        pair_priority("agree", agree),
        pair_priority("split", split),
        pair_priority("flip", flip),
        pair_priority("none", []),
    ]
    assert pair_priority("split", split).disagreement == 0.5
    # flip: one judge of two flips (0.5), consolidated tie vs a disagree (0.5) -> 1.0
    assert pair_priority("flip", flip).score == 1.0
    ordered = [p.pair_id for p in order_pairs(priorities)]
    assert ordered[:2] == ["flip", "split"]
    assert sorted(p.pair_id for p in order_pairs(priorities, "random")) == sorted(ordered)


def test_planned_labels_reach_the_target_in_small_simulation() -> None:
    # 10 campaigns per row, fixed seeds; the slow test gives the measured rates
    for metric, already, order in (("agreement", 0, "informative"), ("kappa", 60, "random")):
        runs = [
            run_campaign(
                n_pairs=500, already=already, metric=metric, halfwidth=0.1, order=order, seed=s
            )
            for s in range(10)
        ]
        assert all(run["reachable"] for run in runs)
        assert sum(run["reached"] for run in runs) >= 9, (metric, runs)


def _write(path: Path, records: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_cli_writes_an_order_that_label_ui_follows(tmp_path: Path) -> None:
    records = []
    for i in range(12):
        flips = i % 3 == 0
        records.append(
            {
                "id": f"p{i}",
                "prompt": "q",
                "response_a": "x",
                "response_b": "y",
                "judge": "j\x1b[31m",
                "judgments": [
                    {"order": "ab", "winner": "a"},
                    {"order": "ba", "winner": "b" if flips else "a"},
                ],
                **({"human_label": "a"} if i >= 9 else {}),
            }
        )
    pairs_path = _write(tmp_path / "pairs.jsonl", records)
    order_path = tmp_path / "order.json"
    result = CliRunner().invoke(
        app, ["label-plan", str(pairs_path), "--target-halfwidth", "0.1", "--out", str(order_path)]
    )
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "label 90 more" in result.output  # 93 - 3
    ids = read_label_order(order_path)
    assert len(ids) == 9 and set(ids[:3]) == {"p0", "p3", "p6"}  # the flipped pairs first
    ordered = apply_label_order(read_pairs(pairs_path), ids, str(order_path))
    store = LabelStore(ordered, tmp_path / "labels.jsonl")
    assert store.next_pair() is not None and store.next_pair().pair_id == ids[0]  # type: ignore[union-attr]
    with pytest.raises(InputError, match="'ghost'"):
        apply_label_order(read_pairs(pairs_path), ["ghost"], "order.json")


def test_cli_refuses_bad_options_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs_path = _write(
        tmp_path / "p.jsonl", [{"id": "1", "prompt": "q", "response_a": "x", "response_b": "y"}]
    )
    for args, message in (
        (["--metric", "vibes"], "unknown --metric 'vibes'"),
        (["--target-halfwidth", "0.7"], "--target-halfwidth must be in (0, 0.5)"),
        (["--order", "hard"], "unknown --order 'hard'"),
        # issue 37 A.11: the normal quantile of 1.0 was a StatisticsError traceback
        (["--confidence", "0.9999999999999999"], "--confidence must be in (0, 0.9999]"),
    ):
        assert run(["label-plan", str(pairs_path), *args], "llm-council", app) == 2
        error = capsys.readouterr().err
        assert message in error and "Traceback" not in error, error
    bad = tmp_path / "order.json"
    bad.write_text('{"format": "other"}', encoding="utf-8")
    with pytest.raises(InputError, match="not a label order"):
        read_label_order(bad)
