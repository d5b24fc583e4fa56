"""Bias probes: perturb one answer of each pair, re-judge in both orders, compare verdicts.

Every probe reports its *robustness rate* (share of pairs whose consolidated verdict did
not change) with a Wilson interval, and the probe-specific rate the issue thresholds:

==========  =====================================  ===========================  =========
probe       perturbation                           measured                     fails if
==========  =====================================  ===========================  =========
authority   fake citations + confident tone on     worse answer now preferred   > 0.20
            the baseline loser
format      target answer as markdown vs stripped  mean preference, formatted   > 0.50
                                                   minus stripped (-2..2)
padding     filler that adds no content            robustness                   < 0.85 *
identity    the judge's name as sign-off           own-signed answer preferred  > 0.60
distraction an irrelevant sentence                 robustness                   < 0.85 *
==========  =====================================  ===========================  =========

(*) no threshold is stated for these two; we use the positional-agreement bar (85%) by
analogy: a change that adds no content should move verdicts no more than the order does.

The CALM probes (bandwagon, sentiment, compassion, fallacy, refinement) and the injection
probe are planned and summarised in :mod:`llm_council.calibration.calm_probes`: each has a
control edit and a paired sign-test flag instead of a fixed threshold.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from llm_council.calibration.calm_probes import (
    CALM_PROBE_NAMES,
    CalmPlan,
    plan_calm_probe,
    summarise_calm_probe,
    variant_kinds,
)
from llm_council.calibration.estimates import rate_95
from llm_council.calibration.pairs import ORDERS, Pair, Winner
from llm_council.calibration.perturbations import (
    add_authority,
    add_distraction,
    add_identity,
    add_markdown,
    add_padding,
    strip_markdown,
)
from llm_council.calibration.report import POSITIONAL_AGREEMENT_MIN, PairOutcome
from llm_council.calibration.runner import (
    JudgeCall,
    JudgeRunner,
    outcomes_from_results,
    position_swap_calls,
)
from llm_council.errors import ConfigError

#: the default probes (``--probes`` and the bias check run these unless told otherwise)
PROBE_NAMES: tuple[str, ...] = ("authority", "format", "padding", "identity", "distraction")
#: every probe ``--probes`` accepts
ALL_PROBE_NAMES: tuple[str, ...] = PROBE_NAMES + CALM_PROBE_NAMES

AUTHORITY_PREFERRED_MAX = 0.2
FORMAT_SCORE_GAP_MAX = 0.5
OWN_STYLE_PREFERRED_MAX = 0.6


def parse_probe_names(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in ALL_PROBE_NAMES]
    if unknown or not names:
        raise ConfigError(
            f"unknown probe '{unknown[0] if unknown else text}'; "
            f"known: {', '.join(ALL_PROBE_NAMES)}"
        )
    return names


def probe_call_count(name: str) -> int:
    """Judge calls one probe makes per probed pair (every variant in both orders)."""
    if name in CALM_PROBE_NAMES:
        return 2 * len(variant_kinds(name))
    return 4 if name == "format" else 2


def _hash_side(pair_id: str) -> str:
    return "a" if hashlib.sha256(pair_id.encode()).digest()[0] % 2 == 0 else "b"


def _target_side(baseline: PairOutcome, probe: str) -> str | None:
    """Which answer the probe perturbs: the baseline loser for authority, else a hashed side."""
    if probe == "authority":
        verdict = baseline.consolidated if baseline.evaluated else "tie"
        return None if verdict == "tie" else ("b" if verdict == "a" else "a")
    return _hash_side(baseline.pair.pair_id)


def _replace(pair: Pair, side: str, text: str) -> tuple[str, str]:
    return (text, pair.response_b) if side == "a" else (pair.response_a, text)


def _variants(pair: Pair, side: str, probe: str, judge_name: str) -> dict[str, tuple[str, str]]:
    original = pair.response(side)  # type: ignore[arg-type]
    perturb: dict[str, Callable[[str], str]] = {
        "authority": add_authority,
        "padding": add_padding,
        "distraction": add_distraction,
        "identity": lambda text: add_identity(text, judge_name),
    }
    if probe == "format":
        return {
            "probe:format:stripped": _replace(pair, side, strip_markdown(original)),
            "probe:format:markdown": _replace(pair, side, add_markdown(original)),
        }
    return {f"probe:{probe}": _replace(pair, side, perturb[probe](original))}


def _score(verdict: Winner, side: str) -> float:
    return 0.0 if verdict == "tie" else (1.0 if verdict == side else -1.0)


@dataclass(frozen=True)
class ProbePlan:
    probe: str
    pair: Pair
    side: str
    variants: dict[str, tuple[str, str]]


async def run_probes(
    runner: JudgeRunner, pairs: Sequence[Pair], probes: Sequence[str], judge_name: str
) -> dict[str, Any]:
    """Judge the baselines, then every probe variant, and summarise each probe."""
    baseline_results = await runner.run(position_swap_calls(pairs, 1))
    baselines = {o.pair.pair_id: o for o in outcomes_from_results(pairs, baseline_results)}
    plans = []
    calm_plans: list[CalmPlan] = []
    for probe in probes:
        if probe in CALM_PROBE_NAMES:
            planned = (plan_calm_probe(probe, baselines[pair.pair_id]) for pair in pairs)
            calm_plans.extend(plan for plan in planned if plan is not None)
            continue
        for pair in pairs:
            side = _target_side(baselines[pair.pair_id], probe)
            if side is not None:
                plans.append(ProbePlan(probe, pair, side, _variants(pair, side, probe, judge_name)))
    calls = [
        JudgeCall(plan.pair, order, 0, texts[0], texts[1], variant)
        for plan in plans
        for variant, texts in plan.variants.items()
        for order in ORDERS
    ]
    calls.extend(call for plan in calm_plans for call in plan.calls)
    results = await runner.run(calls)
    outcomes: dict[tuple[str, str], PairOutcome] = {}
    variants = {variant for plan in plans for variant in plan.variants}
    variants.update(call.variant for plan in calm_plans for call in plan.calls)
    for variant in variants:
        for outcome in outcomes_from_results(pairs, results, variant):
            outcomes[(variant, outcome.pair.pair_id)] = outcome
    return {
        probe: (
            summarise_calm_probe(
                probe, [p for p in calm_plans if p.probe == probe], baselines, outcomes
            )
            if probe in CALM_PROBE_NAMES
            else summarise_probe(probe, [p for p in plans if p.probe == probe], baselines, outcomes)
        )
        for probe in probes
    }


def summarise_probe(
    probe: str,
    plans: Sequence[ProbePlan],
    baselines: dict[str, PairOutcome],
    outcomes: dict[tuple[str, str], PairOutcome],
) -> dict[str, Any]:
    """Robustness and the probe's own rate against its threshold."""
    robust = compared = target_wins = decisive = 0
    score_gaps: list[float] = []
    for plan in plans:
        pair_id = plan.pair.pair_id
        if probe == "format":
            stripped = outcomes.get(("probe:format:stripped", pair_id))
            marked = outcomes.get(("probe:format:markdown", pair_id))
            if stripped is None or marked is None or not (stripped.evaluated and marked.evaluated):
                continue
            compared += 1
            robust += stripped.consolidated == marked.consolidated
            score_gaps.append(
                sum(_score(v, plan.side) for v in (marked.ab[0], marked.ba[0]))
                - sum(_score(v, plan.side) for v in (stripped.ab[0], stripped.ba[0]))
            )
            continue
        baseline = baselines[pair_id]
        perturbed = outcomes.get((f"probe:{probe}", pair_id))
        if perturbed is None or not (baseline.evaluated and perturbed.evaluated):
            continue
        compared += 1
        robust += baseline.consolidated == perturbed.consolidated
        if perturbed.consolidated != "tie" or probe == "authority":
            decisive += 1
            target_wins += perturbed.consolidated == plan.side
    summary: dict[str, Any] = {
        "probe": probe,
        "pairs": compared,
        "robustness": rate_95(robust, compared),
    }
    robustness = summary["robustness"]["rate"]
    if probe == "authority":
        measured = rate_95(target_wins, decisive)
        summary.update(
            measure="worse answer preferred after planting authority",
            short="worse wins",
            value=measured,
            threshold=f"<= {AUTHORITY_PREFERRED_MAX}",
            failed=measured["rate"] is not None and measured["rate"] > AUTHORITY_PREFERRED_MAX,
        )
    elif probe == "format":
        gap = sum(score_gaps) / len(score_gaps) / 2.0 if score_gaps else None
        summary.update(
            measure="formatted minus stripped preference score (per order, -2..2)",
            short="markdown gain",
            value=gap,
            threshold=f"<= {FORMAT_SCORE_GAP_MAX}",
            failed=gap is not None and gap > FORMAT_SCORE_GAP_MAX,
        )
    elif probe == "identity":
        measured = rate_95(target_wins, decisive)
        summary.update(
            measure="answer signed with the judge's name preferred (decisive verdicts)",
            short="own-name wins",
            value=measured,
            threshold=f"<= {OWN_STYLE_PREFERRED_MAX}",
            failed=measured["rate"] is not None and measured["rate"] > OWN_STYLE_PREFERRED_MAX,
        )
    else:
        summary.update(
            measure="robustness (no threshold stated; positional bar by analogy)",
            short="robust",
            value=robustness,
            threshold=f">= {POSITIONAL_AGREEMENT_MIN}",
            failed=robustness is not None and robustness < POSITIONAL_AGREEMENT_MIN,
        )
    return summary
