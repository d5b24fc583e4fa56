"""Decide the hypotheses ``report_error_rate.py --dump`` saved with this tree's procedure.

    PYTHONPATH=src .venv/bin/python benchmarks/report_replay.py /tmp/dumps

The report-wide procedure is a pure function of each hypothesis's family, p-value and
section rule, so a store's report is built once and any procedure can decide it. Prints
the null table (reports with any finding) and the power table (reports that find the
planted bias) as markdown. Run with an older tree on ``PYTHONPATH`` to check the replay:
its verdicts must equal the ones recorded when the stores were built.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from report_error_rate import NULL_GENERATORS, POWER_CELLS, _rate  # noqa: E402


def one_sided_here() -> set[str]:
    """The families this tree enters one-sided: self-preference since ADR 0060, length
    (verbosity) since ADR 0072."""
    from llm_council.bias_audit.report import hypotheses

    families = set()
    if hasattr(hypotheses, "upper_one_sided_p"):
        families.add("self-preference")
    if hasattr(hypotheses, "LENGTH_BIAS"):
        families.add("length")
    return families


def entered_p(row: list[Any], sided: dict[str, str]) -> float:
    """The p a dumped hypothesis enters this tree's procedure with.

    ``sided`` says how the recording tree entered each family ("one" or "two"; a tree
    before ADR 0060 dumped self-preference's two-sided t p, one before ADR 0072 the length
    test's two-sided p). Where this tree enters a family one-sided and the dump is
    two-sided, the p becomes the upper one-sided p of the same test: exactly that p halved
    when the estimate is positive and 1 - p/2 otherwise (``upper_one_sided_p``). A row
    dumped without its estimate enters with p/2, never above its one-sided p, so a replayed
    null rate is then an upper bound (the table marks those cells). Replayed with a tree
    that enters the family two-sided, the p is left as it was dumped.
    """
    family, p = row[0], float(row[3])
    if family not in one_sided_here() or sided.get(family, "two") == "one":
        return p
    from llm_council.bias_audit.report.hypotheses import upper_one_sided_p

    if len(row) < 6:  # dumped without its estimate: p/2 <= the one-sided p either way
        return p / 2
    return upper_one_sided_p(p, float(row[5]))


def _nested_hypotheses(
    hypotheses: list[Any], tested: list[list[Any]], n_slots: int | None, n_sessions: int | None
) -> list[Any]:
    """The hypotheses with the council's all-slots test marked as implying its edge test and
    carrying the pair's min-p p (ADR 0082), where this tree tests the pair that way.

    A row dumped since ADR 0082 carries that p (its 7th field); an older row gets it from
    the two dumped p-values with ``n_slots`` slots and ``n_sessions`` clusters (the cell's
    members and sessions: every session of the generators has the modal size)."""
    import dataclasses
    import math

    from llm_council.bias_audit.report import hypotheses as module

    if not hasattr(module, "ALL_SLOTS_BIAS") or "implies" not in {
        f.name for f in dataclasses.fields(module.Hypothesis)
    }:
        return hypotheses
    council = [
        index
        for index, row in enumerate(tested)
        if row[0] == "council position" and row[1] == "council"
    ]
    full = [i for i in council if tested[i][2] == module.ALL_SLOTS_BIAS]
    sub = [i for i in council if tested[i][2] != module.ALL_SLOTS_BIAS]
    if len(full) != 1 or len(sub) != 1:
        return hypotheses
    row = tested[full[0]]
    combined = float(row[6]) if len(row) > 6 else float("nan")
    if not math.isfinite(combined) and n_slots and n_sessions and n_slots >= 4:
        from llm_council.stats.inference.nested_wald import nested_wald_min_p

        p_sub = float(tested[sub[0]][3])
        combined = nested_wald_min_p(p_sub, float(row[3]), 2, n_slots - 1, n_sessions)
    hypotheses[full[0]] = dataclasses.replace(
        hypotheses[full[0]], implies=hypotheses[sub[0]].locator, combined_p=combined
    )
    return hypotheses


def replay_findings(
    tested: list[list[Any]],
    error_rate: str,
    sided: dict[str, str] | None = None,
    n_slots: int | None = None,
    n_sessions: int | None = None,
) -> list[list[str]]:
    """The findings this tree's procedure makes of one report's dumped hypotheses.

    The procedure is a pure function of each hypothesis's (family, p, blocked) and, since
    ADR 0082, the council's nested position pair (:func:`_nested_hypotheses`); the
    favouritism spill-over rule is not replayed (it only removes a cell when a larger
    cell of the same matrix is a finding, so "any finding" is unchanged).
    """
    from llm_council.bias_audit.report.finding import Finding
    from llm_council.bias_audit.report.hypotheses import Hypothesis
    from llm_council.bias_audit.report.report_verdicts import adjusted_p_values

    nan = float("nan")
    hypotheses = [
        Hypothesis(
            Finding(
                row[1], row[2], row[0], nan, nan, nan, "", entered_p(row, sided or {}), nan, "", ""
            ),
            ("replay", index),
            "blocked" if row[4] else None,
        )
        for index, row in enumerate(tested)
    ]
    hypotheses = _nested_hypotheses(hypotheses, tested, n_slots, n_sessions)
    adjusted = adjusted_p_values(hypotheses, error_rate)
    return [
        [h.finding.family, h.finding.subject, h.finding.bias]
        for h, q in zip(hypotheses, adjusted, strict=True)
        if q < 0.05 and h.blocked_by is None
    ]


def _sided(result: dict[str, Any]) -> dict[str, str]:
    """How the recording tree entered each family that is one-sided in some tree."""
    return {
        "self-preference": str(result.get("self_preference_sided", "two")),
        "length": str(result.get("length_sided", "two")),
    }


def replay_tables(folder: Path) -> list[str]:
    """Null and power tables from dumped hypotheses, decided by this tree's procedure."""
    names = list(NULL_GENERATORS)
    lines = [
        "| generator | members | sessions | stores | reports with a finding, fwer | "
        "same, fdr | families of the fwer findings | any-finding verdict = the recording tree's |",
        "|---|---|---|---|---|---|---|---|",
    ]
    null_counts: dict[tuple[int, int, int], list[dict[str, Any]]] = {}
    for path in sorted(folder.glob("null-*.jsonl")):
        g, members, sessions = (int(v) for v in path.stem.split("-")[1:4])
        null_counts.setdefault((g, members, sessions), []).extend(
            json.loads(line) for line in path.read_text().splitlines()
        )
    for (g, members, sessions), results in sorted(null_counts.items()):
        bound = any(
            _sided(r)["self-preference"] == "two" and len(row) < 6
            for r in results
            for row in r["tested"]
            if row[0] == "self-preference"
        )
        fwer = [replay_findings(r["tested"], "fwer", _sided(r), members, sessions) for r in results]
        fdr = [replay_findings(r["tested"], "fdr", _sided(r), members, sessions) for r in results]
        same = sum(bool(f) == bool(r["fwer"]) for f, r in zip(fwer, results, strict=True))
        families = sorted({f[0] for found in fwer for f in found})
        name = names[g] + (" (upper bound: self-preference's sign not dumped)" if bound else "")
        lines.append(
            f"| {name} | {members} | {sessions} | {len(results)} | "
            f"{_rate(sum(map(bool, fwer)), len(results))} | "
            f"{_rate(sum(map(bool, fdr)), len(results))} | {', '.join(families) or '-'} | "
            f"{same}/{len(results)} |"
        )
    lines += [
        "",
        "| planted bias | sessions | stores | before | fwer | fdr | fwer / before |",
        "|---|---|---|---|---|---|---|",
    ]
    for path in sorted(folder.glob("power-*.jsonl")):
        index, sessions = (int(v) for v in path.stem.split("-")[1:3])
        cell = POWER_CELLS[index]
        results = [json.loads(line) for line in path.read_text().splitlines()]
        runs = len(results)
        fwer = sum(
            any(map(cell.found, replay_findings(r["tested"], "fwer", _sided(r), 5, sessions)))
            for r in results
        )
        fdr = sum(
            any(map(cell.found, replay_findings(r["tested"], "fdr", _sided(r), 5, sessions)))
            for r in results
        )
        before_path = path.with_name(path.name.replace("power-", "before-"))
        before = (
            [json.loads(line) for line in before_path.read_text().splitlines()]
            if before_path.exists()
            else []
        )
        found_before = sum(any(map(cell.found, r["before"])) for r in before)
        lines.append(
            f"| {cell.name} | {sessions} | {runs} | "
            f"{_rate(found_before, len(before)) if before else 'not run'} | "
            f"{_rate(fwer, runs)} | {_rate(fdr, runs)} | "
            f"{f'{fwer / found_before:.2f}' if found_before else 'n/a'} |"
        )
    return lines


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: report_replay.py DUMP_DIR")
    print("\n".join(replay_tables(Path(sys.argv[1]))))


if __name__ == "__main__":
    main()
