"""Simulated labelling campaigns: plan with ``label-plan``, label that many, measure the width.

A pair has a true quality difference ``delta ~ N(0, 1.5^2)``. Its human label is ``a`` when
``delta + N(0, 0.7^2)`` exceeds 0.25, ``b`` below -0.25, else ``tie``. Each of three judges
sees, per order, ``delta + lean * (+1 first shown / -1 second) + N(0, noise^2)`` and picks
``a``/``b`` outside +-0.25, else ``tie``; judge 0 (the planned judge) has lean 0.4 and
noise 1.0 (``good_judge``: 0.1 and 0.3), the others 0.2/1.2 and 0.6/0.8, so they disagree
and flip on close pairs. The
achieved half-width is read from ``calibrate``'s own replay report (accuracy's Wilson
interval, kappa's FCE interval).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np

from llm_council.calibration.label_plan_file import plan_document
from llm_council.calibration.pairs import Judgment, Pair
from llm_council.calibration.session import replay_reports

JUDGES = (("j0", 0.4, 1.0), ("j1", 0.2, 1.2), ("j2", 0.6, 0.8))
#: judge j0 when ``good_judge``: little lean and noise, so its agreement is far from 1/2
GOOD_J0 = ("j0", 0.1, 0.3)
_BAND = 0.25


def _verdict(score: float) -> str:
    return "a" if score > _BAND else "b" if score < -_BAND else "tie"


def campaign_pairs(
    n: int, rng: np.random.Generator, good_judge: bool = False
) -> tuple[list[Pair], dict[str, str]]:
    """Judged pairs without labels, and the label a human would give each."""
    delta = 1.5 * rng.standard_normal(n)
    truth = {f"p{i}": _verdict(d + 0.7 * rng.standard_normal()) for i, d in enumerate(delta)}
    records = []
    for name, lean, noise in (GOOD_J0, *JUDGES[1:]) if good_judge else JUDGES:
        for i, d in enumerate(delta):
            ab = _verdict(d + lean + noise * rng.standard_normal())
            ba = _verdict(d - lean + noise * rng.standard_normal())
            records.append(
                Pair(
                    pair_id=f"p{i}",
                    prompt="q",
                    response_a="x",
                    response_b="y",
                    judge=name,
                    judgments=(Judgment("ab", ab), Judgment("ba", ba)),  # type: ignore[arg-type]
                )
            )
    return records, truth


def _labelled(records: list[Pair], truth: dict[str, str], ids: set[str]) -> list[Pair]:
    return [replace(r, human_label=truth[r.pair_id]) if r.pair_id in ids else r for r in records]  # type: ignore[arg-type]


def achieved_halfwidth(records: list[Pair], metric: str) -> float:
    """Half-width of the interval ``calibrate`` reports for judge j0."""
    judged = [r for r in records if r.judge == "j0"]
    report = replay_reports(judged, path="sim", only_judge="j0")[0]["human_agreement"]
    if metric == "agreement":
        return (report["accuracy"]["ci_high"] - report["accuracy"]["ci_low"]) / 2
    low, high = report["kappa_ci"]
    return (high - low) / 2


def run_campaign(
    *,
    n_pairs: int,
    already: int,
    metric: str,
    halfwidth: float,
    order: str,
    seed: int,
    good_judge: bool = False,
) -> dict[str, Any]:
    """One campaign: ``already`` random labels, plan, label the planned pairs in order."""
    rng = np.random.default_rng(seed)
    records, truth = campaign_pairs(n_pairs, rng, good_judge)
    first = {f"p{i}" for i in rng.choice(n_pairs, size=already, replace=False)}
    records = _labelled(records, truth, first)
    plan = plan_document(
        records, path="sim", metric=metric, halfwidth=halfwidth, judge="j0", order=order, seed=seed
    )
    chosen = {entry["id"] for entry in plan["order"][: plan["more_needed"]]}
    done = _labelled(records, truth, first | chosen)
    achieved = achieved_halfwidth(done, metric)
    return {
        "planned_total": plan["total_needed"],
        "more": plan["more_needed"],
        "reachable": plan["reachable"],
        "achieved": achieved,
        "reached": achieved <= halfwidth,
    }
