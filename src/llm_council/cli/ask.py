"""``llm-council ask``: run one council session and show it (or print it as JSON).

Everything shown comes from models or the user's config (answers, reviews, member names,
provider errors), so it is hostile text: it reaches rich only as :class:`rich.text.Text`
built by :func:`shown` or :func:`shown_lines`, never as a string rich would parse as
markup (an answer holding ``arr[i]`` would lose ``[i]`` as an italic tag, and ``[/]``
crashed the command), and with control and bidi characters escaped
(:mod:`llm_council.safe_text`; a multi-line text keeps its line feeds and tabs).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from llm_council.config import load_council_config
from llm_council.council import run_full_council
from llm_council.log_setup import configure_logging
from llm_council.results import CouncilResult
from llm_council.safe_text import terminal_safe, terminal_safe_lines
from llm_council.tracing_setup import configure_tracing_from_env

ANSWER_PREVIEW_CHARS = 600


def shown(text: object, style: str = "") -> Text:
    """One-line ``text`` as rich shows it literally: no markup, control characters escaped."""
    return Text(terminal_safe(str(text)), style=style)


def shown_lines(text: object) -> Text:
    """Multi-line ``text`` (an answer, an error) shown literally, its line breaks kept."""
    return Text(terminal_safe_lines(str(text)))


def _rankings_table(result: CouncilResult) -> Table:
    table = Table(title="Stage 2: peer reviews (each reviewer saw its own shuffled order)")
    table.add_column("reviewer")
    table.add_column("ranking, best first (label -> member: score)")
    table.add_column("parsed")
    for review in result.stage2:
        by_model = {c.candidate: c for c in review.candidates}
        cells = []
        for model in review.ranking:
            verdict = by_model[model]
            score = "-" if verdict.score is None else f"{verdict.score:g}"
            own = " (self)" if verdict.is_self_review else ""
            cells.append(f"{verdict.label[-1]}->{model}{own}: {score}")
        status = (
            review.parse_status
            if review.ok
            else f"{review.parse_status}: {review.error or review.parse_error}"
        )
        ranking = Text("\n").join(shown(cell) for cell in cells) if cells else Text("-")
        table.add_row(shown(review.reviewer), ranking, shown_lines(status))
    return table


def _aggregate_table(result: CouncilResult) -> Table:
    table = Table(title="Aggregate ranking (self-votes excluded)")
    for column in ("place", "member", "mean rank", "Borda", "mean score", "votes", "note"):
        table.add_column(column)
    for row in result.metadata["aggregate_rankings"]:
        mean_rank = "-" if row["mean_rank"] is None else f"{row['mean_rank']:.2f}"
        mean_score = "-" if row["mean_score"] is None else f"{row['mean_score']:.2f}"
        table.add_row(
            str(row["place"]),
            shown(row["model"]),
            mean_rank,
            f"{row['borda_points']:g}",
            mean_score,
            str(row["rank_votes"]),
            shown(row["tie_note"] or ""),
        )
    return table


def render_result(result: CouncilResult, console: Console) -> None:
    console.rule("Stage 1: answers")
    for answer in result.stage1:
        if answer.ok:
            text = answer.text or ""
            preview = (
                text
                if len(text) <= ANSWER_PREVIEW_CHARS
                else text[:ANSWER_PREVIEW_CHARS] + " [...]"
            )
            console.print(
                Panel(
                    shown_lines(preview),
                    title=shown(f"{answer.member} ({answer.spec})"),
                    title_align="left",
                )
            )
        else:
            failed = Text.assemble(("failed: ", "red"), shown_lines(answer.error))
            console.print(Panel(failed, title=shown(answer.member), title_align="left"))
    console.print(_rankings_table(result))
    console.print(_aggregate_table(result))
    synthesis = result.stage3
    title = f"Stage 3: synthesis by {synthesis.chairman}" + (
        " (FALLBACK: chairman failed)" if synthesis.is_fallback else ""
    )
    console.print(Panel(shown_lines(synthesis.text), title=shown(title), title_align="left"))
    labels = chairman_labels(result.metadata.get("chairman_label_to_model"))
    if labels:
        console.print(Text.assemble("the chairman's labels: ", shown(labels)))
    for failure in result.metadata["degraded"]:
        console.print(
            Text.assemble(
                ("degraded: ", "yellow"),
                shown_lines(f"{failure['stage']} by {failure['member']}: {failure['error']}"),
            )
        )
    for failure in result.metadata.get("middleware_errors", []):
        console.print(
            Text.assemble(
                ("middleware error: ", "yellow"),
                shown_lines(f"{failure['middleware']}.{failure['hook']}: {failure['error']}"),
            )
        )
    audit = result.metadata.get("bias_audit")
    if isinstance(audit, dict):
        written = audit.get("records_written")
        where = (
            f"; {written} records written to {audit['record_store']}"
            if written is not None and audit.get("record_store")
            else ""
        )
        console.print(
            Text.assemble(
                "bias audit: overall risk ",
                shown(audit.get("overall_bias_risk"), "bold"),
                shown(where),
                " (full figures with --json)",
            )
        )


def chairman_labels(label_map: object) -> str:
    """``"Response A = primacy, Response B = balanced, ..."`` in display order: the labels
    the chairman's synthesis uses ("led by Response E"), while the tables use names."""
    if not isinstance(label_map, dict):
        return ""
    entries = sorted(
        (entry.get("display_index", 0), label, entry.get("model"))
        for label, entry in label_map.items()
        if isinstance(entry, dict)
    )
    return ", ".join(f"{label} = {model}" for _, label, model in entries)


def register(app: typer.Typer) -> None:
    @app.command()
    def ask(
        query: Annotated[str, typer.Argument(help="The question for the council.")],
        config: Annotated[
            Path | None,
            typer.Option(
                help="Council TOML (default: LLM_COUNCIL_CONFIG, real keys, else simulated)."
            ),
        ] = None,
        seed: Annotated[
            int | None,
            typer.Option(
                help="Seed for the shuffles and the simulated members (reproducible runs)."
            ),
        ] = None,
        as_json: Annotated[
            bool, typer.Option("--json", help="Print the whole result, metadata included, as JSON.")
        ] = False,
        bias_audit: Annotated[
            bool,
            typer.Option(
                "--bias-audit", help="Turn the bias audit on (same as LLM_COUNCIL_BIAS_AUDIT=true)."
            ),
        ] = False,
        log_json: Annotated[
            bool, typer.Option("--log-json", help="Log as JSON lines on stderr.")
        ] = False,
        log_level: Annotated[
            str, typer.Option(help="Log level on stderr: debug, info, warning, error.")
        ] = "info",
    ) -> None:
        """Ask the council a question: answers, anonymized peer review, and a synthesis.

        With OTEL_TRACES_EXPORTER=console|otlp the session is traced (OpenTelemetry).
        """
        if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise typer.BadParameter(f"unknown log level '{log_level}'", param_hint="--log-level")
        configure_logging(json_logs=log_json, level=log_level)
        if bias_audit:
            os.environ["LLM_COUNCIL_BIAS_AUDIT"] = "true"
        council_config = load_council_config(config)
        shutdown_tracing = configure_tracing_from_env(os.environ)
        try:
            result = asyncio.run(run_full_council(query, config=council_config, seed=seed))
        finally:
            if shutdown_tracing is not None:
                shutdown_tracing()  # flush the spans, also after a failed session
        if as_json:
            typer.echo(json.dumps(result.to_json_dict(), indent=2, ensure_ascii=False))
        else:
            render_result(result, Console())
