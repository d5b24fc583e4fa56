"""``llm-council bias-report``: analyse the bias-audit store across sessions."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from llm_council.errors import ConfigError
from llm_council.infra.atomic_files import write_text_atomically
from llm_council.infra.safe_text import terminal_safe, terminal_safe_lines

if TYPE_CHECKING:
    from llm_council.bias_audit.report.model import BiasReport


class Engine(StrEnum):
    duckdb = "duckdb"
    spark = "spark"


class ErrorRate(StrEnum):
    """The report-wide error rate (ADR 0054); the values are report/finding.py's ERROR_RATES."""

    fwer = "fwer"
    fdr = "fdr"


class ReportFormat(StrEnum):
    text = "text"
    json = "json"
    csv = "csv"
    html = "html"


def _progress_enabled() -> bool:
    """A progress bar only for a person watching: stderr is a TTY and not CI."""
    return sys.stderr.isatty() and os.environ.get("CI", "").lower() not in ("true", "1")


@contextmanager
def _step_progress() -> Iterator[Callable[[str], None] | None]:
    """A rich progress bar advanced by ``build_report``'s ``on_step`` (None when off)."""
    if not _progress_enabled():
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from llm_council.bias_audit.report.build import REPORT_STEPS

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as progress:
        task = progress.add_task("bias report", total=REPORT_STEPS)
        started = [False]

        def on_step(name: str) -> None:
            if started[0]:
                progress.advance(task)
            started[0] = True
            progress.update(task, description=name)

        yield on_step


FormatOption = Annotated[
    ReportFormat, typer.Option("--format", "-f", help="text, json, csv or html.")
]
OutOption = Annotated[
    Path | None, typer.Option("--out", "-o", help="Write here instead of stdout.")
]
StoreOption = Annotated[
    str | None,
    typer.Option(
        "--store",
        "--input",
        help="JSONL store, Parquet directory (bias-compact) or postgresql:// URL "
        "(default: LLM_COUNCIL_BIAS_STORE, else the user data directory).",
    ),
]
EngineOption = Annotated[
    Engine,
    typer.Option(
        "--engine",
        help="duckdb, or spark (a Parquet directory; needs the spark extra, pyspark).",
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option("--since", help="Only sessions since: 7d, 24h, 30m, 2w or an ISO date."),
]
UntilOption = Annotated[
    str | None,
    typer.Option("--until", help="Only sessions before: 7d (ago), 24h, or an ISO date."),
]
BootstrapOption = Annotated[
    int, typer.Option("--bootstrap", min=20, help="Session resamples for the leaderboard.")
]
SeedOption = Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")]
ReproducibleOption = Annotated[
    bool,
    typer.Option(
        "--reproducible",
        help="The same figures to the last digit on every run (one summation order; "
        "slower: about 5-10% at 1M records, a third at 10M). Without it, "
        "full-precision JSON/CSV figures may differ run to run around the 13th "
        "significant digit.",
    ),
]
DaysOption = Annotated[
    int | None, typer.Option("--days", "--max-days", help="The reference's option: --since Nd.")
]
SessionsOption = Annotated[
    int | None,
    typer.Option("--sessions", "--max-sessions", help="Only the last N sessions (JSONL store)."),
]
VerboseOption = Annotated[
    bool, typer.Option("--verbose", help="Accepted (the reference's); profiles always show.")
]
AmplificationOption = Annotated[
    bool,
    typer.Option("--amplification", help="Append the report-only amplification screen."),
]
ErrorRateOption = Annotated[
    ErrorRate,
    typer.Option(
        "--error-rate",
        help="The one promise every finding is made under: fwer (at most a 5% chance "
        "of any false finding in the whole report) or fdr (Benjamini-Yekutieli: at "
        "most 5% of the findings false, on average). See docs/bias-report.md.",
    ),
]


def _pooled_report(
    path: str,
    *,
    since: str | None,
    until: str | None,
    days: int | None,
    sessions: int | None,
    bootstrap: int,
    seed: int,
    engine: Engine,
    reproducible: bool,
    error_rate: ErrorRate,
) -> BiasReport:
    """The report of the store at ``path``, read as the reference council reads it (ADR 0058)."""
    from llm_council.bias_audit.report import build_report
    from llm_council.integrations.reference_cli import as_given, reference_report_input

    with reference_report_input(path, since, days, sessions) as chosen, _step_progress() as on_step:
        for note in chosen.notes:
            print(f"note: {terminal_safe(note)}", file=sys.stderr)
        report = build_report(
            chosen.store,
            since=chosen.since,
            until=until,
            n_resamples=bootstrap,
            seed=seed,
            engine=engine.value,
            on_step=on_step,
            reproducible=reproducible,
            error_rate=error_rate.value,
        )
        return as_given(report, chosen, path)


def _write_report(text: str, output_format: ReportFormat, out: Path | None) -> None:
    """The rendered report to ``out``, else to stdout (CSV made terminal-safe there)."""
    if out is None:
        if output_format is ReportFormat.csv:
            # ids are written as they are into a file (a spreadsheet reads them there); on
            # stdout they reach a terminal: ESC, BEL, bidi controls shown as \uXXXX escapes
            # (text and JSON escape them themselves; issue 26 item 2)
            text = terminal_safe_lines(text)
        sys.stdout.write(text)
        return
    write_text_atomically(out, text)  # an unwritable path is one InputError
    print(f"wrote {output_format.value} report to {out}", file=sys.stderr)


def bias_report(
    output_format: FormatOption = ReportFormat.text,
    out: OutOption = None,
    store: StoreOption = None,
    engine: EngineOption = Engine.duckdb,
    since: SinceOption = None,
    until: UntilOption = None,
    bootstrap: BootstrapOption = 200,
    seed: SeedOption = 0,
    reproducible: ReproducibleOption = False,
    days: DaysOption = None,
    sessions: SessionsOption = None,
    verbose: VerboseOption = False,
    amplification: AmplificationOption = False,
    error_rate: ErrorRateOption = ErrorRate.fwer,
) -> None:
    """Pool the bias-audit records of every session: reviewer profiles, biases, leaderboard."""
    from llm_council.bias_audit.report import RENDERERS
    from llm_council.bias_audit.report.load.record_sources import default_store_location

    path = store if store is not None else default_store_location()
    if output_format is ReportFormat.html and out is None and sys.stdout.isatty():
        raise ConfigError("--format html writes a file: add --out report.html")
    report = _pooled_report(
        path,
        since=since,
        until=until,
        days=days,
        sessions=sessions,
        bootstrap=bootstrap,
        seed=seed,
        engine=engine,
        reproducible=reproducible,
        error_rate=error_rate,
    )
    for warning in report.warnings:
        print(f"warning: {terminal_safe(warning)}", file=sys.stderr)
    text = RENDERERS[output_format.value](report)
    if amplification:
        from llm_council.integrations.reference_cli import amplification_section

        text = amplification_section(path, output_format.value, text)
    _write_report(text, output_format, out)


def register(app: typer.Typer) -> None:
    app.command("bias-report")(bias_report)
