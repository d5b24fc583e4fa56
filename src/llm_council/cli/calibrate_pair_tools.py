"""``label-ui`` and ``export-openai-evals``: a pairs file for people to label, or for OpenAI
Evals to grade."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from llm_council.calibration.pairs import read_pairs
from llm_council.errors import ConfigError
from llm_council.infra.atomic_files import writes_to_stdout


def label_ui_command(
    pairs_path: Annotated[Path, typer.Argument(help="pairs JSONL to label")],
    output: Annotated[Path, typer.Option("--output", help="labels are appended here (JSONL)")],
    port: Annotated[int, typer.Option(help="port on 127.0.0.1 (0 = any free port)")] = 8765,
    seed: Annotated[int, typer.Option(help="seed for randomizing which answer is shown left")] = 0,
    order: Annotated[
        Path | None,
        typer.Option("--order", help="show pairs in this label-plan order file's order first"),
    ] = None,
) -> None:
    """Serve a local page (127.0.0.1 only) to label pairs A / B / tie, saving each label."""
    from llm_council.calibration.label_plan_file import apply_label_order, read_label_order
    from llm_council.calibration.label_ui import serve_forever

    pairs = read_pairs(pairs_path)
    if order is not None:
        pairs = apply_label_order(pairs, read_label_order(order), str(order))
    serve_forever(pairs, output, port=port, seed=seed)


def export_openai_evals_command(
    pairs_path: Annotated[Path, typer.Argument(help="pairs JSONL")],
    out: Annotated[
        Path, typer.Option("--out", help="directory for samples.jsonl and the eval YAML")
    ],
    eval_name: Annotated[
        str, typer.Option(help="name of the eval in the registry YAML")
    ] = "llm-council-pairwise",
) -> None:
    """Write the pairs as an OpenAI Evals dataset with a model-graded eval spec."""
    from llm_council.calibration.evals_export import export_openai_evals

    if writes_to_stdout(out):  # '-' made a directory named '-'
        raise ConfigError("--out names a directory for several files; '-' (stdout) is not one")
    written = export_openai_evals(read_pairs(pairs_path), out, eval_name=eval_name)
    typer.echo("\n".join(f"wrote {path}" for path in written))
