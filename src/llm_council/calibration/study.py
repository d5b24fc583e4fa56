"""Study mode: the report's figures per subset, and judges compared on the same pairs.

``--by pair_type | subset_tags | model_pair | metadata.KEY`` splits one judge's pairs and
recomputes every figure of the report on each part (a pair with several ``subset_tags``
is in each of their subsets). A subset with fewer than ``min_n`` evaluated pairs is marked
``too_small`` and not graded: its figures are still listed, with their (wide) intervals.

``--by judge`` on a file with several judges compares them on the pairs ALL of them
evaluated: one row per judge, then for every two judges the paired difference in order
agreement and in human kappa, with a percentile bootstrap interval over pairs (resampling
pairs keeps the two judges' verdicts on a pair together; see
:func:`llm_council.stats.reliability.agreement.paired_bootstrap_difference`). A difference on fewer
than ``min_n`` pairs is ``too_small`` like a subset (below
:data:`~llm_council.calibration.estimates.MIN_N_FOR_INTERVAL` it has no interval at all:
a bootstrap over 2 pairs gives a zero-width interval that reads as certainty).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

from llm_council.calibration.estimates import MIN_N_FOR_INTERVAL, finite
from llm_council.calibration.outcomes import PairOutcome
from llm_council.calibration.pairs import Pair, Winner
from llm_council.calibration.report import ReportOptions, compute_report
from llm_council.errors import ConfigError
from llm_council.stats.reliability.agreement import (
    agreement_of_coded_pairs,
    kappa_of_coded_pairs,
    paired_bootstrap_difference,
)

SUBSET_KEYS = ("pair_type", "subset_tags", "model_pair", "judge")
DEFAULT_MIN_SUBSET_N = 30
_CODES = {"a": 0, "b": 1, "tie": 2}
NONE_LABEL = "(none)"


def parse_by(keys: Sequence[str]) -> tuple[str, ...]:
    """Validate ``--by`` values: a known key or ``metadata.NAME``."""
    for key in keys:
        if key not in SUBSET_KEYS and not (key.startswith("metadata.") and len(key) > 9):
            raise ConfigError(
                f"--by: unknown key {key!r}; known: {', '.join(SUBSET_KEYS)}, metadata.NAME"
            )
    return tuple(dict.fromkeys(keys))


def subset_labels(pair: Pair, key: str) -> list[str]:
    """The subsets ``pair`` belongs to under ``key``."""
    if key == "pair_type":
        return [pair.pair_type or NONE_LABEL]
    if key == "subset_tags":
        return list(pair.subset_tags) or [NONE_LABEL]
    if key == "model_pair":
        models = sorted(model or "?" for model in (pair.model_a, pair.model_b))
        return [" vs ".join(models)] if any(m != "?" for m in models) else [NONE_LABEL]
    if key == "judge":
        return [pair.judge or NONE_LABEL]
    value = pair.metadata.get(key.removeprefix("metadata."))
    return [NONE_LABEL if value is None else str(value)]


def summary_row(report: Mapping[str, Any], min_n: int) -> dict[str, Any]:
    """The figures of one report that a subset table shows, flattened."""
    n = report["pairs_evaluated"]
    own = report["self_preference"]
    basis = own["basis"]
    excess = (
        own["excess_over_humans"]
        if basis == "humans"
        else own["excess_over_other_judges"]
        if basis == "other_judges"
        else None
    )
    humans = report["human_agreement"]
    too_small = n < min_n
    return {
        "n": n,
        "too_small": too_small,
        "order_agreement": report["consistency"]["agreement"],
        "order_kappa": {
            key: report["consistency"][key] for key in ("kappa", "kappa_ci", "too_few")
        },
        "flips": report["position_bias"]["flips"],
        "direction": report["position_bias"]["direction"],
        "flips_favoring": [
            report["position_bias"]["flips_favoring_first"],
            report["position_bias"]["flips_favoring_second"],
        ],
        "length_correlation": report["verbosity"]["length_correlation"],
        "length_correlation_ci": report["verbosity"]["length_correlation_ci"],
        "prefers_longer": report["verbosity"]["prefers_longer"],
        "self_preference": {
            "basis": basis,
            "own_win_rate": own["own_win_rate"],
            "excess": excess,
        },
        "human_pairs": humans["pairs"],
        "human_accuracy": humans.get("accuracy"),
        "human_kappa": {key: humans.get(key) for key in ("kappa", "kappa_ci", "too_few")},
        "grade": None if too_small else report["grade"],
    }


def subset_tables(
    outcomes: Sequence[PairOutcome],
    options: ReportOptions,
    keys: Sequence[str],
    min_n: int = DEFAULT_MIN_SUBSET_N,
) -> dict[str, list[dict[str, Any]]]:
    """``{key: [row per subset]}`` for one judge (``judge``: see :func:`compare_judges`)."""
    tables: dict[str, list[dict[str, Any]]] = {}
    for key in keys:
        if key == "judge":
            continue
        members: dict[str, list[PairOutcome]] = {}
        for outcome in outcomes:
            for label in subset_labels(outcome.pair, key):
                members.setdefault(label, []).append(outcome)
        tables[key] = [
            {"subset": label, **summary_row(compute_report(part, options), min_n)}
            for label, part in sorted(members.items())
        ]
    return tables


def _codes(rows: Sequence[tuple[str, str]]) -> NDArray[np.int64]:
    return np.array([[_CODES[x], _CODES[y]] for x, y in rows], dtype=np.int64).reshape(-1, 2)


def _difference(
    statistic: Callable[[NDArray[np.int64]], float],
    first: NDArray[np.int64],
    second: NDArray[np.int64],
    conf: float,
    seed: int,
    min_n: int,
) -> dict[str, Any]:
    """The paired difference; ``too_few`` (no interval) and ``too_small`` (< ``min_n``)."""
    result = paired_bootstrap_difference(statistic, first, second, confidence=conf, seed=seed)
    too_few = result.n < MIN_N_FOR_INTERVAL
    return {
        "difference": finite(result.difference),
        "ci_low": None if too_few else finite(result.ci_low),
        "ci_high": None if too_few else finite(result.ci_high),
        "n": result.n,
        "too_few": too_few,
        "too_small": result.n < min_n,
        "method": f"paired percentile bootstrap over pairs ({result.resamples} resamples)",
    }


def compare_judges(
    outcomes_by_judge: Mapping[str, Sequence[PairOutcome]],
    options_by_judge: Mapping[str, ReportOptions],
    *,
    min_n: int = DEFAULT_MIN_SUBSET_N,
    seed: int = 0,
) -> dict[str, Any]:
    """Judges side by side on the pairs every one of them evaluated, with paired differences."""
    judges = sorted(outcomes_by_judge)
    evaluated = {
        judge: {o.pair.pair_id: o for o in outcomes if o.evaluated}
        for judge, outcomes in outcomes_by_judge.items()
    }
    common = sorted(set.intersection(*(set(ids) for ids in evaluated.values())))
    rows = []
    for judge in judges:
        part = [evaluated[judge][pair_id] for pair_id in common]
        report = compute_report(part, options_by_judge[judge])
        rows.append({"judge": judge, **summary_row(report, min_n)})
    conf = next(iter(options_by_judge.values())).confidence
    # the first judge's record gives the human label, so every judge meets the same labels
    human = {i: evaluated[judges[0]][i].pair.human_label for i in common}
    labelled = [i for i in common if human[i] is not None]
    differences = []
    for first, second in combinations(judges, 2):
        orders = [
            _codes([(evaluated[j][i].verdict_ab, evaluated[j][i].verdict_ba) for i in common])
            for j in (first, second)
        ]
        versus_humans = [
            _codes([(evaluated[j][i].consolidated, human[i] or "tie") for i in labelled])
            for j in (first, second)
        ]
        differences.append(
            {
                "first": first,
                "second": second,
                "order_agreement": _difference(
                    agreement_of_coded_pairs, orders[0], orders[1], conf, seed, min_n
                ),
                "human_kappa": _difference(
                    kappa_of_coded_pairs, versus_humans[0], versus_humans[1], conf, seed, min_n
                ),
            }
        )
    return {
        "common_pairs": len(common),
        "confidence": conf,
        "min_n": min_n,
        "judges": rows,
        "differences": differences,
    }


def other_judges_verdicts(
    outcomes_by_judge: Mapping[str, Sequence[PairOutcome]], judge: str
) -> dict[str, tuple[Winner, ...]]:
    """pair id -> the consolidated verdicts of every OTHER judge that evaluated the pair."""
    verdicts: dict[str, list[Winner]] = {}
    for other, outcomes in outcomes_by_judge.items():
        if other == judge:
            continue
        for outcome in outcomes:
            if outcome.evaluated:
                verdicts.setdefault(outcome.pair.pair_id, []).append(outcome.consolidated)
    return {pair_id: tuple(v) for pair_id, v in verdicts.items()}
