"""The power table of ADR 0076 from one set of dumped stores: before, main, this tree, and
the pre-stated weight rule, every column deciding the same stores' hypotheses.

    PYTHONPATH=src .venv/bin/python benchmarks/report_power_columns.py DUMP_DIR

``DUMP_DIR`` holds ``report_error_rate.py --power --dump`` output of this tree (``power-*``)
and of the before tree (``before-*``: each family at its own 5%). Columns:

- **main (ADR 0072)**: this tree's hypotheses without the council's all-slots one, decided
  with this tree's procedure (the weights are ADR 0072's, and every other p is the same
  test's, so this is exactly main's verdict);
- **this tree (ADR 0076)**: the recorded findings (and the replay, which must agree);
- **count rule**: the same hypotheses with the heavy families' weights in proportion to
  how many hypotheses each tests (:func:`count_rule_weights`, ADR 0076's one pre-stated
  alternative).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_error_rate import POWER_CELLS, _rate  # noqa: E402
from report_replay import _sided, entered_p, replay_findings  # noqa: E402

#: the heavy tier of ADR 0060 (weight 7 each)
HEAVY = ("council position", "length", "self-preference")


def count_rule_weights(families: list[str]) -> dict[str, float]:
    """ADR 0076's pre-stated rule: the heavy tier's total weight (7 per heavy family
    tested) split over the heavy families in proportion to their hypotheses' count, so every
    heavy hypothesis first enters at the same level; other families keep ADR 0060's weight.
    The counts come from the design (which tests could run), never from a p-value."""
    from llm_council.bias_audit.report.finding import FAMILY_WEIGHTS

    counts = Counter(family for family in families if family in HEAVY)
    weights = dict(FAMILY_WEIGHTS)
    total = 7.0 * len(counts)
    for family, count in counts.items():
        weights[family] = total * count / sum(counts.values())
    return weights


def count_rule_findings(tested: list[list[Any]], sided: dict[str, str]) -> list[list[str]]:
    """Findings of ``tested`` under the count rule (weighted Holm across, Holm within)."""
    from llm_council.stats.inference.report_multiplicity import family_holm_adjusted

    families = [row[0] for row in tested]
    p_values = [entered_p(row, sided) for row in tested]
    adjusted = family_holm_adjusted(p_values, families, count_rule_weights(families))
    return [row[:3] for row, q in zip(tested, adjusted, strict=True) if q < 0.05 and not row[4]]


def _ratio(found: int, found_before: int) -> str:
    return f"{found / found_before:.2f}" if found_before else "n/a"


def main() -> None:
    from llm_council.bias_audit.report.hypotheses import ALL_SLOTS_BIAS

    folder = Path(sys.argv[1])
    print(
        "| planted bias | stores | before: each family at 5% | main (ADR 0072) | "
        "this tree (ADR 0076) | ADR 0076 / before | count rule | count rule / before | "
        "replay = recorded |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for path in sorted(folder.glob("power-*.jsonl")):
        index = int(path.stem.split("-")[1])
        cell = POWER_CELLS[index]
        results = [json.loads(line) for line in path.read_text().splitlines()]
        before_path = path.with_name(path.name.replace("power-", "before-"))
        before = [json.loads(line) for line in before_path.read_text().splitlines()]
        n = len(results)
        found_before = sum(any(map(cell.found, r["before"])) for r in before)
        main_tree = this_tree = count_rule = same = 0
        for r in results:
            sided = _sided(r)
            without = [row for row in r["tested"] if row[2] != ALL_SLOTS_BIAS]
            main_tree += any(map(cell.found, replay_findings(without, "fwer", sided)))
            recorded = any(map(cell.found, r["fwer"]))
            this_tree += recorded
            same += recorded == any(map(cell.found, replay_findings(r["tested"], "fwer", sided)))
            count_rule += any(map(cell.found, count_rule_findings(r["tested"], sided)))
        print(
            f"| {cell.name} | {n} | {_rate(found_before, len(before))} | {_rate(main_tree, n)} | "
            f"{_rate(this_tree, n)} | {_ratio(this_tree, found_before)} | "
            f"{_rate(count_rule, n)} | {_ratio(count_rule, found_before)} | {same}/{n} |"
        )


if __name__ == "__main__":
    main()
