"""docs/performance.md states each settled metric with one value (issue 37 C.4).

Each release used to append its measurements beside the old ones, so the page said 1.064x
and 1.20x for the same concurrency ratio. The registry below names the metrics settled
then; each is found by a few phrasings (text patterns) and by its cell in a markdown table
(table patterns), and every statement of one metric must give the same value. The check
reads what the patterns match and nothing else: a new phrasing that no pattern matches is
not checked, which is why every metric must also be found at least once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PERFORMANCE = ROOT / "docs" / "performance.md"
README = ROOT / "README.md"

#: a number or a range of numbers as the docs write them: 0.03, 1.7-1.8, 21.5
VALUE = r"\d+(?:\.\d+)?(?:-\d+(?:\.\d+)?)?"


@dataclass(frozen=True)
class TableCell:
    """The cell in the column whose header matches `header`, of a row whose first cell fullmatches `row`."""

    header: str
    row: str
    value: str = r"(.+)"


@dataclass(frozen=True)
class Metric:
    """A named figure: text patterns (group 1 is its value) and table cells that state it."""

    name: str
    text: tuple[str, ...] = ()
    cells: tuple[TableCell, ...] = ()


METRICS: tuple[Metric, ...] = (
    Metric(
        "session wall over ideal, 5 members (council_concurrency.py)",
        text=(rf"\*{{0,2}}({VALUE})x\*{{0,2}} (?:the )?ideal(?: 0\.3 s)? with 5 members",),
        cells=(TableCell(r"session|wall", "5", rf"({VALUE})x"),),
    ),
    Metric(
        "session wall over ideal, 12 members (council_concurrency.py)",
        text=(rf"\*{{0,2}}({VALUE})x\*{{0,2}} with 12\b",),
        cells=(TableCell(r"session|wall", "12", rf"({VALUE})x"),),
    ),
    Metric(
        "`llm-council --help` time (startup.py)",
        text=(rf"`llm-council --help`[^.|]*?\b({VALUE}) s\b",),
        cells=(TableCell(r"[Mm]edian|time", r"`llm-council --help`", rf"({VALUE}) s"),),
    ),
    Metric(
        "`ask` process time, 5 members (council_concurrency.py)",
        text=(rf"`(?:llm-council )?ask` process[^.|()]*?\b({VALUE}) s\b",),
        cells=(TableCell(r"`(?:llm-council )?ask`", "5", rf"({VALUE}) s"),),
    ),
    Metric(
        "audited `ask` wall over a plain `ask`, simulated council (startup.py)",
        text=(rf"audited `ask` takes \*{{0,2}}({VALUE})x",),
        cells=(TableCell(r"audited / plain", r"wall, median", rf"\*{{0,2}}({VALUE})x"),),
    ),
    Metric(
        "audited `ask` peak RSS over a plain `ask`, simulated council (startup.py)",
        text=(rf"audited `ask`[^.|]*?\+({VALUE}) MiB",),
        cells=(TableCell(r"audited / plain", r"peak RSS, median", rf"\+({VALUE}) MiB"),),
    ),
    Metric(
        "bias-report at 1M records, JSONL (report_scale.py)",
        text=(rf"(?:`?bias-report`? takes|1M records take) ({VALUE}) s (?:on JSONL|\(JSONL\))",),
    ),
    Metric(
        "bias-report at 1M records, Parquet (report_scale.py)",
        text=(
            rf"(?:`?bias-report`? takes|1M records take) {VALUE} s (?:on JSONL|\(JSONL\)) "
            rf"and ({VALUE}) s (?:on Parquet|\(Parquet\))",
        ),
    ),
    Metric(
        "DuckDB floor at 1M records, JSONL (report_scale.py)",
        text=(rf"DuckDB (?:scan|floor)[^.|]*?\b({VALUE}) s\b",),
    ),
    Metric(
        "report peak memory at 1M records (report_scale.py)",
        text=(rf"\b({VALUE}) GB at 1M", rf"peaks at ({VALUE}) GB"),
    ),
    Metric(
        "CLI peak memory at 10M records, Parquet (ADR 0030)",
        text=(rf"\b({VALUE}) GiB",),
    ),
    Metric(
        "audit statistics with 30 sessions of history, 5 members (audit_power_history.py)",
        text=(rf"30 sessions of history \([^|]*\| ({VALUE}) ms",),
    ),
    *(
        Metric(
            f"per-session power, {bias}, {members} members (audit_power_history.py)",
            # members in rows (docs/performance.md) or in columns (the README's old table)
            cells=(
                TableCell(bias_pattern, members),
                TableCell(rf"^{members} members$", rf".*{bias_pattern}.*"),
            ),
        )
        for bias, bias_pattern in (
            ("a judge 2 points harsh", r"2 points harsh"),
            ("self-preference +1.5", r"self-preference \+1\.5"),
            ("slot A +2", r"slot A \+2"),
        )
        for members in ("3", "4", "5")
    ),
)


def flat(text: str) -> str:
    """The text with every run of whitespace made one space, so a phrase may wrap lines."""
    return re.sub(r"\s+", " ", text)


def table_rows(text: str) -> list[tuple[list[str], list[str]]]:
    """Every markdown table row as (header cells, row cells), cells stripped."""
    rows: list[tuple[list[str], list[str]]] = []
    header: list[str] | None = None
    for line in text.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(re.fullmatch(r":?-+:?", cell) for cell in cells):
            rows.append((header, cells))
    return rows


def stated_values(metric: Metric, text: str) -> list[str]:
    """Every value `text` states for `metric`, in order, with repeats."""
    values = [
        match.group(1) for pattern in metric.text for match in re.finditer(pattern, flat(text))
    ]
    for cell in metric.cells:
        for header, cells in table_rows(text):
            if not cells or not re.fullmatch(cell.row, cells[0]):
                continue
            for column, title in enumerate(header[: len(cells)]):
                if column and re.search(cell.header, title):
                    found = re.search(cell.value, cells[column])
                    if found:
                        values.append(found.group(1).strip())
    return values


def test_each_settled_metric_has_one_value_in_performance_md() -> None:
    text = PERFORMANCE.read_text(encoding="utf-8")
    for metric in METRICS:
        values = stated_values(metric, text)
        assert values, f"docs/performance.md: {metric.name} not found (reworded? update METRICS)"
        assert len(set(values)) == 1, (
            f"docs/performance.md: {metric.name} stated as {sorted(set(values))}"
        )


def other_pages() -> list[Path]:
    """README.md and every docs page but performance.md: they link to it, or agree with it."""
    docs = sorted((ROOT / "docs").glob("*.md"))
    return [README, *(page for page in docs if page != PERFORMANCE)]


def test_no_other_page_states_a_settled_metric_with_another_value() -> None:
    performance = PERFORMANCE.read_text(encoding="utf-8")
    for page in other_pages():
        text = page.read_text(encoding="utf-8")
        for metric in METRICS:
            elsewhere = set(stated_values(metric, text))
            assert elsewhere <= set(stated_values(metric, performance)), (
                f"{page.relative_to(ROOT)}: {metric.name} stated as {sorted(elsewhere)}, "
                "docs/performance.md differs"
            )


def by_name(prefix: str) -> Metric:
    """The registered metric whose name starts with `prefix`."""
    (metric,) = [metric for metric in METRICS if metric.name.startswith(prefix)]
    return metric


def test_the_check_fires_on_the_contradictions_the_page_used_to_hold() -> None:
    # Verbatim phrasings of the page before issue 37 C.4 (2026-11-23 beside 2026-11-25).
    old_page = """\
100 ms (`benchmarks/council_concurrency.py`): a session takes **1.064x** the ideal 0.3 s
with 5 members (target 1.10x: met) and **1.117x** with 12 (not met; it was 1.186x). The
`ask` process, start-up included, is
1.7-1.8 s, most of it `import openai` (0.68 s) and the session.
`llm-council --help` is printed from the command table without importing typer or rich:
0.03 s median against 0.01 s for `python -c pass` (`benchmarks/startup.py`).

| members | session, median of sessions 2-10 | raw-socket floor on the same server | `llm-council ask` process, start-up included |
|---|---|---|---|
| 5 | 0.361 s, **1.20x** ideal (was 2.9-3.6x) | 1.02x | 2.9 s |
| 12 | 0.437 s, **1.46x** ideal (was 6.5-8.2x) | 1.03x | 3.6 s |

event loop. `llm-council --help` takes 0.24 s.

| members | a judge 2 points harsh, named | self-preference +1.5, all judges | slot A +2, all judges |
|---|---|---|---|
| 5 | 2.2% [40%] | 0.7% [26%] | 19% [19%] |

| members | a judge 2 points harsh, named | self-preference +1.5 | slot A +2 | largest false-flag rate |
|---|---|---|---|---|
| 5 | 5 → 37.5 → 96% | 1.5 → 65 → 86% | 23 → 23 → 59.5% | 5.0% (history) |
"""
    assert stated_values(by_name("session wall over ideal, 5"), old_page) == ["1.064", "1.20"]
    assert stated_values(by_name("session wall over ideal, 12"), old_page) == ["1.117", "1.46"]
    assert stated_values(by_name("`llm-council --help`"), old_page) == ["0.03", "0.24"]
    assert stated_values(by_name("`ask` process"), old_page) == ["1.7-1.8", "2.9"]
    harsh_at_5 = by_name("per-session power, a judge 2 points harsh, 5")
    assert stated_values(harsh_at_5, old_page) == ["2.2% [40%]", "5 → 37.5 → 96%"]
    # the README's table before issue 37 C.4 (members in columns), rounded differently
    old_readme = """\
| named in one session | 3 members | 4 members | 5 members |
|---|---|---|---|
| a judge 2 points harsh | 0 → 2 → 22% | 0 → 15 → 70% | 5 → 38 → 96% |
"""
    harsh_at_3 = by_name("per-session power, a judge 2 points harsh, 3")
    assert stated_values(harsh_at_3, old_readme) == ["0 → 2 → 22%"]
    assert stated_values(harsh_at_5, old_readme) == ["5 → 38 → 96%"]
    # docs/production.md's start-up table of 2026-11-23
    old_production = """\
| Command | Median | vs `python -c pass` |
|---|---|---|
| `llm-council --help` | 0.045 s (target <= 0.4 s: met) | 2.6x |
"""
    assert stated_values(by_name("`llm-council --help`"), old_production) == ["0.045"]
    # a figure beside `ask` but inside a parenthesis is another measurement (providers.md)
    providers = "The `ask` process adds start-up: plus `import openai` (~0.8 s CPU)."
    assert stated_values(by_name("`ask` process"), providers) == []


def test_the_same_value_stated_twice_passes() -> None:
    page = "a session takes **1.064x** the ideal 0.3 s with 5 members; again: 1.064x ideal with 5 members"
    assert stated_values(by_name("session wall over ideal, 5"), page) == ["1.064", "1.064"]


def test_the_audited_ask_figures_are_read_from_text_and_table() -> None:
    # issue 35's figure in prose beside a later run's table: two values, so the check fires
    page = """\
Offline, the audited `ask` takes **2.6x** a plain one.

| simulated council | plain `ask` | `ask --bias-audit` | audited / plain |
|---|---|---|---|
| wall, median | 2.404 s | 3.581 s | **1.49x** |
| peak RSS, median | 58.6 MiB | 81.2 MiB | +22.6 MiB |
"""
    assert stated_values(by_name("audited `ask` wall"), page) == ["2.6", "1.49"]
    assert stated_values(by_name("audited `ask` peak RSS"), page) == ["22.6"]
