"""``llm-council convert``: a foreign judgment log to our replay pairs JSONL, all or nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from llm_council.calibration.importers import (
    INPUT_FORMATS,
    import_file,
    records_to_pairs,
    render_import_summary,
)
from llm_council.errors import InputError
from llm_council.infra.atomic_files import atomic_writer, writes_to_stdout

InputFormatOption = Annotated[
    str,
    typer.Option(
        "--input-format",
        help=f"format of the input: {', '.join(INPUT_FORMATS)} ('ours' is our pairs JSONL,"
        " for calibrate; see docs/calibration.md)",
    ),
]
MapOption = Annotated[
    list[str] | None,
    typer.Option(
        "--map",
        help="mapped format: FIELD=COLUMN[:VALUE=OURS...] items, e.g."
        " id=pair,order=shown,winner=verdict:A=a:B=b:tie=tie (repeatable)",
    ),
]
HumanOption = Annotated[
    Path | None,
    typer.Option("--human", help="MT-bench human judgments giving human labels (fastchat-pair)"),
]


def convert_command(
    source: Annotated[Path, typer.Argument(help="judgment log: JSONL, CSV, Parquet or directory")],
    input_format: InputFormatOption,
    out: Annotated[Path, typer.Option("--out", help="pairs JSONL to write (replaced whole)")],
    mapping: MapOption = None,
    human: HumanOption = None,
) -> None:
    """Convert a judgment log to our replay pairs JSONL (then: llm-council calibrate OUT)."""
    result = import_file(source, input_format, mapping or [], human)
    records_to_pairs(
        result, str(source)
    )  # the replay parser accepts every line, or nothing is written
    try:
        with atomic_writer(out) as stream:
            for record in result.records:
                stream.write(json.dumps(record, ensure_ascii=False) + "\n")
    except OSError as error:  # a directory, a full disk, no permission: nothing was replaced
        raise InputError(f"cannot write: {error.strerror or error}", path=str(out)) from None
    to_stderr = writes_to_stdout(out)  # `--out -`: the pairs own stdout
    typer.echo(render_import_summary(result, str(source)), err=to_stderr)
    typer.echo(f"wrote {len(result.records)} pairs to {out}", err=to_stderr)


def register(app: typer.Typer) -> None:
    app.command("convert")(convert_command)
