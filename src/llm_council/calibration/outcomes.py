"""One judge's verdicts on one pair, in both orders and every repetition.

Repetitions are consolidated by MAJORITY within each order: the order's verdict is the
strict plurality of its repetitions (``[b, a, a]`` -> ``a``), and ``tie`` when the top
counts are equal (``[a, b]``). Every figure of the report that needs one verdict per order
(order agreement, kappa between orders, flips and their direction, the consolidated
verdict behind human agreement, verbosity and self-preference) uses these majority
verdicts, so a pair judged ``ab=[b, a, a]``, ``ba=[a, a, a]`` is a consistent ``a``.
Repetition stability is the only figure that looks inside the repetitions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from llm_council.calibration.majority import strict_plurality
from llm_council.calibration.pairs import Judgment, Order, Pair, Winner, shown_order


def order_verdict(verdicts: Sequence[Winner]) -> Winner:
    """The majority verdict of one order's repetitions; ``tie`` without a strict plurality."""
    majority = strict_plurality(verdicts)
    return "tie" if majority is None else majority


@dataclass(frozen=True)
class PairOutcome:
    """What the report knows about one pair: its verdicts, or why it was not evaluated.

    ``ab`` and ``ba`` hold the verdicts of each order sorted by repetition;
    ``ab_repetitions`` / ``ba_repetitions`` their 0-based repetition numbers (empty means
    ``0, 1, 2, ...``), so a dropped repetition does not shift the others.
    """

    pair: Pair
    ab: tuple[Winner, ...]
    ba: tuple[Winner, ...]
    problem: str | None = None  # e.g. a failed or unparseable call in a live run
    ab_repetitions: tuple[int, ...] = ()
    ba_repetitions: tuple[int, ...] = ()
    # each verdict's rationale length, aligned with ``ab`` / ``ba`` (empty: none given)
    ab_rationale_chars: tuple[int | None, ...] = ()
    ba_rationale_chars: tuple[int | None, ...] = ()
    # each verdict's stated confidence, aligned with ``ab`` / ``ba`` (empty: none given)
    ab_confidences: tuple[float | None, ...] = ()
    ba_confidences: tuple[float | None, ...] = ()

    @property
    def evaluated(self) -> bool:
        return bool(self.ab) and bool(self.ba)

    @cached_property
    def verdict_ab(self) -> Winner:
        return order_verdict(self.ab)

    @cached_property
    def verdict_ba(self) -> Winner:
        return order_verdict(self.ba)

    @property
    def consistent(self) -> bool:
        return self.evaluated and self.verdict_ab == self.verdict_ba

    @property
    def consolidated(self) -> Winner:
        """The common verdict when consistent, ``tie`` otherwise (MT-Bench, Zheng et al. 2023)."""
        return self.verdict_ab if self.consistent else "tie"

    @property
    def position_lean(self) -> int:
        """+1 per order the first-shown answer won, -1 per order the second-shown won."""
        lean = 0
        for order, verdict in (("ab", self.verdict_ab), ("ba", self.verdict_ba)):
            first, second = shown_order(order)  # type: ignore[arg-type]
            lean += 1 if verdict == first else -1 if verdict == second else 0
        return lean

    def repetitions(self, order: Order) -> dict[int, Winner]:
        """``{repetition number: verdict}`` of one order."""
        verdicts, numbers = (
            (self.ab, self.ab_repetitions) if order == "ab" else (self.ba, self.ba_repetitions)
        )
        return dict(zip(numbers or range(len(verdicts)), verdicts, strict=True))


def judgments_to_outcome(
    pair: Pair, judgments: Sequence[Judgment], problem: str | None = None
) -> PairOutcome:
    """Group verdicts by order, sorted by repetition number."""
    ordered = sorted(judgments, key=lambda j: (j.order, j.repetition))
    ab = [j for j in ordered if j.order == "ab"]
    ba = [j for j in ordered if j.order == "ba"]
    return PairOutcome(
        pair=pair,
        ab=tuple(j.winner for j in ab),
        ba=tuple(j.winner for j in ba),
        problem=problem,
        ab_repetitions=tuple(j.repetition for j in ab),
        ba_repetitions=tuple(j.repetition for j in ba),
        ab_rationale_chars=tuple(j.rationale_chars for j in ab),
        ba_rationale_chars=tuple(j.rationale_chars for j in ba),
        ab_confidences=tuple(j.confidence for j in ab),
        ba_confidences=tuple(j.confidence for j in ba),
    )


def outcomes_from_judgments(pairs: Sequence[Pair]) -> list[PairOutcome]:
    """Each pair's recorded judgments as an outcome (replay)."""
    return [judgments_to_outcome(pair, pair.judgments) for pair in pairs]
