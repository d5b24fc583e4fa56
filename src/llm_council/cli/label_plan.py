"""``label-plan``: how many more human labels reach a target interval width, and in
which order to label the pairs (written for ``label-ui --order``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from llm_council.calibration.label_plan import METRICS, ORDERS
from llm_council.calibration.label_plan_file import plan_document, render_plan
from llm_council.calibration.pairs import read_pairs
from llm_council.errors import ConfigError
from llm_council.infra.atomic_files import write_json_atomically, writes_to_stdout
from llm_council.infra.safe_text import terminal_safe

MAX_CONFIDENCE = 0.9999
"""The highest ``--confidence`` accepted: a z of 3.9, already a wider interval than labels buy."""


def label_plan_command(
    pairs_path: Annotated[
        Path, typer.Argument(help="pairs JSONL (labelled or not, with or without verdicts)")
    ],
    target_halfwidth: Annotated[
        float,
        typer.Option("--target-halfwidth", help="wanted half-width of the interval, in (0, 0.5)"),
    ] = 0.05,
    metric: Annotated[
        str, typer.Option(help=f"the judge-vs-human figure to plan for: {' or '.join(METRICS)}")
    ] = "agreement",
    confidence: Annotated[float, typer.Option(help="interval confidence level")] = 0.95,
    judge: Annotated[str | None, typer.Option(help="plan for this judge's verdicts")] = None,
    order: Annotated[
        str, typer.Option(help="informative (judges disagree or flip first) or random")
    ] = "informative",
    out: Annotated[
        Path | None,
        typer.Option("--out", help="order file to write (default: PAIRS.label-order.json)"),
    ] = None,
    seed: Annotated[int, typer.Option(help="seed for tie-breaking and the bootstrap")] = 0,
) -> None:
    """How many more human labels reach a target interval width; the order to label in."""
    if metric not in METRICS:
        raise ConfigError(f"unknown --metric '{metric}'; known: {', '.join(METRICS)}")
    if order not in ORDERS:
        raise ConfigError(f"unknown --order '{order}'; known: {', '.join(ORDERS)}")
    if not (0.0 < target_halfwidth < 0.5):
        raise ConfigError(f"--target-halfwidth must be in (0, 0.5), got {target_halfwidth}")
    if not (0.0 < confidence <= MAX_CONFIDENCE):
        # past this the normal quantile of 1 - (1 - c) / 2 rounds to 1.0 and raised a
        # StatisticsError traceback (issue 37 A.11)
        raise ConfigError(f"--confidence must be in (0, {MAX_CONFIDENCE}], got {confidence}")
    document = plan_document(
        read_pairs(pairs_path),
        path=str(pairs_path),
        metric=metric,
        halfwidth=target_halfwidth,
        confidence=confidence,
        judge=judge,
        order=order,
        seed=seed,
    )
    order_path = out or pairs_path.with_name(pairs_path.name + ".label-order.json")
    write_json_atomically(order_path, document)
    text = render_plan(document, str(order_path))
    typer.echo(
        "\n".join(terminal_safe(line) for line in text.splitlines()),
        err=writes_to_stdout(order_path),  # `--out -`: the order file owns stdout
    )


def register(app: typer.Typer) -> None:
    app.command("label-plan")(label_plan_command)
