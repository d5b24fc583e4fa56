"""Self-preference measured against a baseline, not as a raw win rate.

Self-preference, as the taxonomy we follow defines it, is choosing one's own family MORE
OFTEN than blinded human raters (or other judges) would on the same pairs; a raw
own-family win rate cannot tell a biased judge from a family whose answers are better.

On pairs where exactly one answer is from the judge's family, a decisive verdict gets an
*own score*: 1 when it picks the own-family answer, 0 when it picks the other. The excess
is the mean of (judge's score - baseline's score) over the pairs where BOTH are decisive,
with a paired t interval. Ties are left out rather than scored 1/2: a position-biased
judge's flips become ``tie`` consolidated verdicts, and scoring them 1/2 would read as
self-preference on every family whose answers humans usually reject.

- over humans: the baseline is ``human_label``, on pairs that have one;
- over other judges (a multi-judge file): the baseline is the mean own score the other
  judges' decisive consolidated verdicts give the SAME answer on the same pair.

Only a significant excess (interval above 0, at least 10 pairs) raises the "do not let this
judge grade its own family" advice; without any baseline the raw rate is shown labelled
``unadjusted`` and raises nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from llm_council.calibration.estimates import mean_estimate, rate, significantly_positive
from llm_council.calibration.family import model_family
from llm_council.calibration.outcomes import PairOutcome
from llm_council.calibration.pairs import Winner


def own_score(verdict: Winner, own: str) -> float | None:
    """1 for the own-family answer, 0 for the other, None for a tie."""
    return None if verdict == "tie" else float(verdict == own)


def own_side(outcome: PairOutcome, family: str) -> str | None:
    """``"a"`` or ``"b"`` when exactly one answer is from ``family``, else None."""
    pair = outcome.pair
    sides = [
        side
        for side, model in (("a", pair.model_a), ("b", pair.model_b))
        if model and model_family(model) == family
    ]
    return sides[0] if len(sides) == 1 else None


def self_preference(
    evaluated: Sequence[PairOutcome],
    family: str,
    conf: float,
    other_judges: Mapping[str, Sequence[Winner]] | None = None,
) -> dict[str, Any]:
    """The report section; ``other_judges`` maps pair id -> other judges' consolidated verdicts."""
    own_wins = own_losses = ties = 0
    human_own_wins = human_decisive = 0
    over_humans: list[float] = []
    over_judges: list[float] = []
    for outcome in evaluated:
        own = own_side(outcome, family)
        if own is None:
            continue
        verdict = outcome.consolidated
        ties += verdict == "tie"
        own_wins += verdict == own
        own_losses += verdict not in ("tie", own)
        judge_score = own_score(verdict, own)
        human = outcome.pair.human_label
        if human is not None and human != "tie":
            human_decisive += 1
            human_own_wins += human == own
            if judge_score is not None:
                over_humans.append(judge_score - float(human == own))
        others = [
            score
            for v in (other_judges or {}).get(outcome.pair.pair_id, ())
            if (score := own_score(v, own)) is not None
        ]
        if others and judge_score is not None:
            over_judges.append(judge_score - sum(others) / len(others))
    excess_humans = mean_estimate(over_humans, conf)
    excess_judges = mean_estimate(over_judges, conf)
    if not excess_humans["too_few"]:
        basis, primary = "humans", excess_humans
    elif not excess_judges["too_few"]:
        basis, primary = "other_judges", excess_judges
    else:
        basis, primary = "unadjusted", None
    return {
        "judge_family": family,
        "pairs_with_own_answer": own_wins + own_losses + ties,
        "own_wins": own_wins,
        "own_losses": own_losses,
        "ties": ties,
        "own_win_rate": rate(own_wins, own_wins + own_losses, conf),
        "human_own_win_rate": rate(human_own_wins, human_decisive, conf),
        "excess_over_humans": excess_humans,
        "excess_over_other_judges": excess_judges,
        # what the verdict below is measured against: humans, other judges, or nothing
        "basis": basis,
        "significant_excess": primary is not None and significantly_positive(primary),
    }
