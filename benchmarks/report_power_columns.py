"""The power table of ADR 0082 from one set of dumped stores: before, main (ADR 0076) and
this tree, every column deciding the same stores' hypotheses.

    PYTHONPATH=src .venv/bin/python benchmarks/report_power_columns.py DUMP_DIR

``DUMP_DIR`` holds ``report_error_rate.py --power --dump`` output of this tree (``power-*``)
and of the before tree (``before-*``: each family at its own 5%). Columns:

- **ADR 0076 (Holm within the council position family)**: the same hypotheses and p-values
  decided by the weighted Holm shortcut with the council's two position tests as ordinary
  members of their family (the procedure before ADR 0082: its p-values are unchanged, only
  the decision differs, so this is exactly that tree's verdict);
- **this tree (ADR 0082)**: the recorded findings (and the replay, which must agree): the
  council's nested pair tested by its min-p test at the family's whole share.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_error_rate import POWER_CELLS, _rate  # noqa: E402
from report_replay import _sided, entered_p, replay_findings  # noqa: E402


def holm_within_findings(tested: list[list[Any]], sided: dict[str, str]) -> list[list[str]]:
    """Findings of ``tested`` under ADR 0076's procedure (weighted Holm across families,
    Holm within each, no nested pair)."""
    from llm_council.bias_audit.report.finding import FAMILY_WEIGHTS
    from llm_council.stats.inference.report_multiplicity import family_holm_adjusted

    families = [row[0] for row in tested]
    p_values = [entered_p(row, sided) for row in tested]
    adjusted = family_holm_adjusted(p_values, families, FAMILY_WEIGHTS)
    return [row[:3] for row, q in zip(tested, adjusted, strict=True) if q < 0.05 and not row[4]]


def _ratio(found: int, found_before: int) -> str:
    return f"{found / found_before:.2f}" if found_before else "n/a"


def main() -> None:
    folder = Path(sys.argv[1])
    print(
        "| planted bias | stores | before: each family at 5% | ADR 0076 (Holm within) | "
        "ADR 0076 / before | this tree (ADR 0082) | ADR 0082 / before | replay = recorded |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for path in sorted(folder.glob("power-*.jsonl")):
        index, sessions = (int(v) for v in path.stem.split("-")[1:3])
        cell = POWER_CELLS[index]
        results = [json.loads(line) for line in path.read_text().splitlines()]
        before_path = path.with_name(path.name.replace("power-", "before-"))
        before = [json.loads(line) for line in before_path.read_text().splitlines()]
        n = len(results)
        found_before = sum(any(map(cell.found, r["before"])) for r in before)
        holm_within = this_tree = same = 0
        for r in results:
            sided = _sided(r)
            holm_within += any(map(cell.found, holm_within_findings(r["tested"], sided)))
            recorded = any(map(cell.found, r["fwer"]))
            this_tree += recorded
            replayed = replay_findings(r["tested"], "fwer", sided, 5, sessions)
            same += recorded == any(map(cell.found, replayed))
        print(
            f"| {cell.name} | {n} | {_rate(found_before, len(before))} | "
            f"{_rate(holm_within, n)} | {_ratio(holm_within, found_before)} | "
            f"{_rate(this_tree, n)} | {_ratio(this_tree, found_before)} | {same}/{n} |"
        )


if __name__ == "__main__":
    main()
