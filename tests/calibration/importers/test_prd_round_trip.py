"""Real verdicts through the generic importer: the PRD Vicuna80 fixture (MIT, see its
README) flattened to the raw PRD shape (one row per review, ``score`` 1 = first shown wins,
2 = second shown wins, 3 = tie) as CSV, Parquet and a datasets directory, imported with
``--map``, must replay to exactly the report of the original file."""

from __future__ import annotations

import csv
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from llm_council.cli.app import _run, app

FIXTURE = Path(__file__).parents[2] / "data" / "prd_vicuna80" / "replay_gpt4_claude_q1-8.jsonl"
SPEC = (
    "id=pair,judge=reviewer,order=shown:original=ab:swapped=ba,"
    "winner=score:1=first:2=second:3=tie,prompt=question,response_a=answer_a,"
    "response_b=answer_b,model_a=model_a,model_b=model_b,human_label=human"
)
COLUMNS = ["pair", "reviewer", "shown", "score", "question", "answer_a", "answer_b",
           "model_a", "model_b", "human"]  # fmt: skip


def _prd_rows() -> list[dict[str, str]]:
    rows = []
    for line in FIXTURE.read_text().splitlines():
        record = json.loads(line)
        for judgment in record["judgments"]:
            first = "a" if judgment["order"] == "ab" else "b"
            score = (
                "3" if judgment["winner"] == "tie" else "1" if judgment["winner"] == first else "2"
            )
            rows.append(
                {
                    "pair": record["id"],
                    "reviewer": record["judge"],
                    "shown": "original" if judgment["order"] == "ab" else "swapped",
                    "score": score,
                    "question": record["prompt"],
                    "answer_a": record["response_a"],
                    "answer_b": record["response_b"],
                    "model_a": record["metadata"]["model_a"],
                    "model_b": record["metadata"]["model_b"],
                    "human": record.get("human_label") or "",
                }
            )
    return rows


def _write_csv(path: Path) -> Path:
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.DictWriter(stream, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(_prd_rows())
    return path


def _write_parquet(path: Path) -> Path:
    import duckdb

    source = _write_csv(path.with_suffix(".csv"))
    duckdb.sql(
        f"COPY (SELECT * FROM read_csv('{source}', header=true, all_varchar=true))"
        f" TO '{path}' (FORMAT parquet)"
    )
    return path


def _write_dataset(path: Path) -> Path:
    pa = pytest.importorskip("pyarrow")
    path.mkdir()
    table = pa.Table.from_pylist(_prd_rows())
    shard = str(path / "data-00000-of-00001.arrow")
    with pa.OSFile(shard, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    (path / "state.json").write_text(
        json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}]})
    )
    return path


def _report(args: list[str], output: Path) -> list[dict]:
    # human kappa of both PRD judges is below 0.6 (0.427 and 0.387): exit 3, report written
    assert _run([*args, "--output", str(output)], "llm-council", app) == 3
    return json.loads(output.read_text())["reports"]


@pytest.mark.parametrize(
    "write", [_write_csv, _write_parquet, _write_dataset], ids=["csv", "parquet", "datasets"]
)
def test_prd_verdicts_replay_identically_through_map(
    tmp_path: Path, write: Callable[[Path], Path]
) -> None:
    suffix = {"_write_csv": ".csv", "_write_parquet": ".parquet", "_write_dataset": ""}
    source = write(tmp_path / f"prd{suffix[write.__name__]}")
    original = _report(["calibrate", str(FIXTURE)], tmp_path / "original.json")
    mapped = _report(
        ["calibrate", "--input-format", "mapped", "--map", SPEC, str(source)],
        tmp_path / "mapped.json",
    )
    assert mapped == original
    gpt4 = next(report for report in mapped if report["judge"] == "gpt4")
    assert gpt4["consistency"]["kappa"] == pytest.approx(0.374, abs=5e-4)  # docs/calibration.md
