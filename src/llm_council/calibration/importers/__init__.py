"""Importers: judgment logs in other tools' formats to our replay pairs.

Each importer is a pure function from numbered foreign rows to replay records (the dicts
:func:`llm_council.calibration.pairs.parse_pair` reads), so ``calibrate --input-format``
and ``convert`` share one path and ``convert``'s output replays to the same report.
Formats: ``ours`` (our pairs JSONL), ``fastchat-pair`` (FastChat MT-bench pairwise
judgments), ``mtbench-human`` (MT-bench human judgments), ``mapped`` (any JSONL, CSV,
Parquet or saved ``datasets`` directory through ``--map``). A ``--human`` file of MT-bench
human judgments attaches majority human labels to a ``fastchat-pair`` import.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from llm_council.calibration.importers.fastchat import fastchat_pair_records
from llm_council.calibration.importers.mapped import mapped_records, parse_map
from llm_council.calibration.importers.mtbench_human import (
    attach_human_judgments,
    human_pair_records,
    read_human_judgments,
)
from llm_council.calibration.importers.result import ImportResult, render_import_summary
from llm_council.calibration.importers.tables import read_rows
from llm_council.calibration.pairs import Pair, parse_pairs_lines, read_pairs
from llm_council.errors import ConfigError, InputError

INPUT_FORMATS = ("ours", "fastchat-pair", "mtbench-human", "mapped")


def import_file(
    path: Path,
    input_format: str,
    mapping: Sequence[str] = (),
    human_path: Path | None = None,
) -> ImportResult:
    """Read ``path`` in ``input_format`` into replay records (not for ``ours``)."""
    if input_format not in INPUT_FORMATS or input_format == "ours":
        raise ConfigError(
            f"unknown input format {input_format!r} (expected {', '.join(INPUT_FORMATS[1:])})"
        )
    if mapping and input_format != "mapped":
        raise ConfigError(f"--map is for --input-format mapped, not {input_format!r}")
    if human_path is not None and input_format != "fastchat-pair":
        raise ConfigError(f"--human is for --input-format fastchat-pair, not {input_format!r}")
    if input_format == "mapped":
        if not mapping:
            raise ConfigError(
                "--input-format mapped needs --map (e.g. id=COL,winner=COL,order=COL)"
            )
        result = mapped_records(read_rows(path), parse_map(mapping), str(path), path.stem)
    elif input_format == "mtbench-human":
        result = human_pair_records(read_human_judgments(read_rows(path), str(path)))
    else:
        result = fastchat_pair_records(read_rows(path), str(path))
        if human_path is not None:
            human = read_human_judgments(read_rows(human_path), str(human_path))
            result = attach_human_judgments(result, human)
    if not result.records:
        raise InputError("no pairs in file", path=str(path))
    return result


def records_to_pairs(result: ImportResult, source: str) -> list[Pair]:
    """Validate the records with the replay parser itself (what ``convert`` would write)."""
    lines = [json.dumps(record, ensure_ascii=False) for record in result.records]
    return parse_pairs_lines(lines, f"{source} (as converted)")


def load_pairs_any(
    path: Path,
    input_format: str = "ours",
    mapping: Sequence[str] = (),
    human_path: Path | None = None,
    *,
    live: bool = False,
) -> list[Pair]:
    """Pairs from ``path`` in any supported format; ``ours`` is :func:`read_pairs`.

    ``live`` (a judge will be called) refuses imported pairs without answer text: a judge
    shown two empty answers returns verdicts that mean nothing.
    """
    if input_format == "ours":
        if mapping or human_path is not None:
            raise ConfigError("--map and --human need --input-format other than 'ours'")
        return read_pairs(path)
    result = import_file(path, input_format, mapping, human_path)
    if live:
        textless = [r for r in result.records if not r["metadata"].get("answer_text")]
        if textless:
            raise ConfigError(
                f"{len(textless)} imported pairs have no answer text (first {textless[0]['id']!r}):"
                " they can be replayed but not judged live; drop --model"
            )
    return records_to_pairs(result, str(path))


__all__ = [
    "INPUT_FORMATS",
    "ImportResult",
    "import_file",
    "load_pairs_any",
    "records_to_pairs",
    "render_import_summary",
]
