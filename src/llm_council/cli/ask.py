"""``llm-council ask``: run one council session and show it (or print it as JSON).

Everything shown comes from models or the user's config (answers, reviews, member names,
provider errors), so it is hostile text: it reaches rich only as :class:`rich.text.Text`
built by :func:`shown` or :func:`shown_lines`, never as a string rich would parse as
markup (an answer holding ``arr[i]`` would lose ``[i]`` as an italic tag, and ``[/]``
crashed the command), and with control and bidi characters escaped
(:mod:`llm_council.infra.safe_text`; a multi-line text keeps its line feeds and tabs).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Annotated

import structlog
import typer
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from llm_council.config import CouncilConfig, load_council_config
from llm_council.council import run_full_council
from llm_council.infra.input_files import require_regular_file
from llm_council.infra.log_setup import configure_logging
from llm_council.infra.safe_text import terminal_safe, terminal_safe_lines
from llm_council.infra.tracing_setup import configure_tracing_from_env
from llm_council.providers.registry import split_spec
from llm_council.results import CouncilResult
from llm_council.simulation.answers import without_footer

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


def _aggregate_table(result: CouncilResult) -> tuple[Table, list[str]]:
    """The ranking table, and the tie notes it refers to: a note is a sentence, so the cell
    holds its number (``tie 1``) and the notes print once below the table (a full note in
    the cell wrapped into a seven-line row)."""
    table = Table(title="Aggregate ranking (self-votes excluded)")
    for column in ("place", "member", "mean rank", "Borda", "mean score", "votes", "note"):
        table.add_column(column)
    notes: list[str] = []
    for row in result.metadata["aggregate_rankings"]:
        mean_rank = "-" if row["mean_rank"] is None else f"{row['mean_rank']:.2f}"
        mean_score = "-" if row["mean_score"] is None else f"{row['mean_score']:.2f}"
        note = row["tie_note"] or ""
        if note:
            if note not in notes:
                notes.append(note)
            note = f"tie {notes.index(note) + 1}"
        table.add_row(
            str(row["place"]),
            shown(row["model"]),
            mean_rank,
            f"{row['borda_points']:g}",
            mean_score,
            str(row["rank_votes"]),
            note,
        )
    return table, notes


def render_result(result: CouncilResult, console: Console) -> None:
    console.rule("Stage 1: answers")
    for answer in result.stage1:
        if answer.ok:
            text = answer.text or ""
            if answer.spec.startswith("simulated:"):
                # the simulated judges' footer is a debug tag to a reader (issue 37 C.5);
                # --json keeps the answer as the judges saw it
                text = without_footer(text)
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
    table, tie_notes = _aggregate_table(result)
    console.print(table)
    for number, note in enumerate(tie_notes, start=1):
        console.print(Text.assemble(f"tie {number}: ", shown(note)))
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
        console.print(
            Text.assemble(
                "bias audit: overall risk ",
                shown(audit.get("overall_bias_risk"), "bold"),
                shown(records_note(audit, result)),
                " (full figures with --json)",
            )
        )


def records_note(audit: dict[str, object], result: CouncilResult) -> str:
    """``"; 16 records written to STORE"``, with why when none were or when they test
    nothing (issue 37 A.11: "0 records written" said nothing of the store error behind it;
    C.3: a session none of whose reviews could be read tests nothing, silently)."""
    written = audit.get("records_written")
    store = audit.get("record_store")
    note = f"; {written} records written to {store}" if written is not None and store else ""
    if audit.get("record_store_error"):
        note += f": the store failed: {audit['record_store_error']}"
    elif written == 0 and store:
        note += ": the store took none of this session's records"
    if not any(review.ok for review in result.stage2):
        statuses: list[str] = sorted({str(review.parse_status) for review in result.stage2})
        statuses = statuses or ["none given"]
        note += (
            f"; no review could be read ({len(result.stage2)}: {', '.join(statuses)}), "
            "so nothing was tested"
        )
    return note


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


#: the note on stderr when ``ask`` falls back to the simulated council (issue 37 C.2)
SIMULATED_NOTE = (
    "note: no --config, LLM_COUNCIL_CONFIG or provider API key: this is the SIMULATED "
    "council (config/council.toml), not real models"
)
BASE_URL_NOTE = (
    "OPENAI_BASE_URL is set, but its models come only from a council file: "
    "--config config/openai_compatible_council.toml (edit the model names)"
)


def _say_when_simulated(council: CouncilConfig, *, json_logs: bool) -> None:
    """Say on stderr that the council about to run is the simulated one: ``ask`` used to
    fall back to it silently, even with ``OPENAI_BASE_URL`` set for a local server."""
    specs = [member.spec for member in (*council.members, council.chairman)]
    if not all(split_spec(spec)[0] == "simulated" for spec in specs):
        return
    base_url_set = bool(os.environ.get("OPENAI_BASE_URL", "").strip())
    if json_logs:
        structlog.get_logger("llm_council.cli").warning(
            "simulated_council", reason=SIMULATED_NOTE, hint=BASE_URL_NOTE if base_url_set else None
        )
        return
    typer.echo(SIMULATED_NOTE + (f"; {BASE_URL_NOTE}" if base_url_set else ""), err=True)


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
            str,
            typer.Option(
                help="Log level on stderr: debug, info (the stages' timings), warning, error."
            ),
        ] = "warning",
    ) -> None:
        """Ask the council a question: answers, anonymized peer review, and a synthesis.

        With OTEL_TRACES_EXPORTER=console|otlp the session is traced (OpenTelemetry).
        """
        if log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise typer.BadParameter(f"unknown log level '{log_level}'", param_hint="--log-level")
        configure_logging(json_logs=log_json, level=log_level)
        if bias_audit:
            os.environ["LLM_COUNCIL_BIAS_AUDIT"] = "true"
        chosen = config or os.environ.get("LLM_COUNCIL_CONFIG")
        if chosen and Path(chosen).exists():
            # a FIFO hung the TOML reader, /dev/zero filled memory (issue 37 A.10); a missing
            # file is left to the config loader's own message
            require_regular_file(chosen)
        council_config = load_council_config(config)
        if config is None and not os.environ.get("LLM_COUNCIL_CONFIG"):
            _say_when_simulated(council_config, json_logs=log_json)
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
