"""Repetition stability: does the judge give the same verdict when asked again?

Two definitions, side by side:

- ``all_repetitions_agree`` (ours): share of (pair, order) whose repetitions are all equal;
- ``majority_share`` (the published one): mean over (pair, order) of the share of
  repetitions that gave the majority (modal) verdict, as in the position-bias literature
  (Shi et al., "Judging the Judges: A Systematic Study of Position Bias in LLM-as-a-Judge",
  2024: repetition stability). With 3 repetitions it is 1 when all agree and 2/3 otherwise
  (or 1/3 when all differ); t interval over the (pair, order) items.

Kappa between repetitions compares the two lowest repetition NUMBERS present (explicit
``repetition`` fields are kept, so a dropped repetition does not shift the others).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from llm_council.calibration.estimates import kappa_estimate, mean_estimate, rate
from llm_council.calibration.majority import modal_share
from llm_council.calibration.outcomes import PairOutcome
from llm_council.stats.reliability.agreement import cohen_kappa

CATEGORIES = ("a", "b", "tie")


def repetition_stability(evaluated: Sequence[PairOutcome], conf: float) -> dict[str, Any] | None:
    """The section of the report; ``None`` when no order was judged more than once."""
    repeated = [
        outcome.repetitions(order)
        for outcome in evaluated
        for order in ("ab", "ba")
        if len(outcome.repetitions(order)) > 1  # type: ignore[arg-type]
    ]
    if not repeated:
        return None
    stable = sum(len(set(by_number.values())) == 1 for by_number in repeated)
    shares = [modal_share(by_number.values()) for by_number in repeated]
    numbers = sorted({number for by_number in repeated for number in by_number})
    first, second = numbers[0], numbers[1]
    both = [by_number for by_number in repeated if first in by_number and second in by_number]
    kappa = cohen_kappa([b[first] for b in both], [b[second] for b in both], CATEGORIES, conf)
    counts = Counter(len(by_number) for by_number in repeated)
    return {
        "orders_with_repetitions": len(repeated),
        # e.g. {2: 10, 3: 290}: how many (pair, order) had 2 and 3 repetitions when mixed
        "repetitions_per_order": {str(k): v for k, v in sorted(counts.items())},
        "all_repetitions_agree": rate(stable, len(repeated), conf),
        "majority_share": mean_estimate(shares, conf),
        "kappa_between_repetitions": {
            "repetitions": [first + 1, second + 1],
            **kappa_estimate(kappa),
        },
        "kappa_first_vs_second": kappa_estimate(kappa)["kappa"],
    }
