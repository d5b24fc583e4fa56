"""The generic --map importer: syntax, long and wide layouts, every table kind."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from llm_council.calibration.importers import import_file, load_pairs_any
from llm_council.calibration.importers.mapped import ColumnMap, mapped_records, parse_map
from llm_council.errors import ConfigError, InputError, MissingDependencyError

LOGS = Path(__file__).parents[2] / "data" / "judgment_logs"
LONG_MAP = (
    "id=pair_id,judge=grader,order=shown_first:original=ab:swapped=ba,"
    "winner=verdict:A=first:B=second:tie=tie:ERR=error,"
    "prompt=question,response_a=answer_1,response_b=answer_2,human_label=gold:A=a:B=b:tie=tie"
)


def test_value_map_entries_are_colon_separated_fields_comma_separated() -> None:
    mapping = parse_map(["id=pid,winner=v:A=a:B=b:tie=tie,order=o", "judge=grader"])
    assert mapping["winner"] == ColumnMap("v", {"A": "a", "B": "b", "tie": "tie"})
    assert mapping["order"] == ColumnMap("o") and mapping["judge"] == ColumnMap("grader")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("id=p,winner=w", "--map: winner= needs order="),
        ("winner=w,order=o", "--map needs id=COLUMN"),
        ("id=p,wiener=w", "--map: unknown field 'wiener'"),
        ("id=p,winner=w,order=o,winner_ab=x", "--map: use winner+order or winner_ab/winner_ba"),
        ("id=p,winner_ab=w:A=left", "--map: winner_ab value 'left' is not one of a, b, tie"),
        ("id=p,winner_ab=w,id=q", "--map: field 'id' mapped twice"),
        ("id=p,prompt=q:x=y,winner_ab=w", "--map: field 'prompt' takes no value map"),
        ("id=p,winner_ab=", "--map item 'winner_ab=': empty column name"),
        ("id=p,justtext", "--map item 'justtext' must be FIELD=COLUMN"),
        ("id=p", "--map needs verdicts"),
        ("id=p,winner_ab=w:A=a:B", "--map item 'winner_ab=w:A=a:B': value map entry 'B' must be"),
    ],
)
def test_bad_map_is_a_config_error(spec: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_map([spec])
    assert str(caught.value).startswith(message)


def test_long_csv_with_display_slots_and_multiline_cells() -> None:
    result = import_file(LOGS / "mapped_verdicts.csv", "mapped", [LONG_MAP])
    by_id = {record["id"]: record for record in result.records}
    # p2: "A" (first) in order ab is a; "A" in order ba is b (ba shows b first)
    assert by_id["p2"]["judgments"] == [
        {"order": "ab", "winner": "a"}, {"order": "ba", "winner": "b"}
    ]  # fmt: skip
    assert by_id["p3"]["judgments"] == [{"order": "ab", "winner": "tie"}]
    assert "human_label" not in by_id["p3"]
    assert by_id["p4"]["prompt"] == "Write two lines:\none, two"
    assert by_id["p4"]["response_b"] == "one\ntwo" and by_id["p4"]["metadata"]["answer_text"]
    assert result.counts == {
        "rows": 8, "games": 7, "error_games_dropped": 1, "pairs": 4, "judges": 1,
        "pairs_without_text": 0,
    }  # fmt: skip


def test_csv_error_names_the_line_a_multiline_record_starts_on(tmp_path: Path) -> None:
    text = (
        (LOGS / "mapped_verdicts.csv")
        .read_text()
        .replace("p4,judge-x,swapped,A", "p4,judge-x,swapped,Q")
    )
    path = tmp_path / "log.csv"
    path.write_text(text)
    # header 1, p1-p3 on lines 2-7, p4 original on 8-10, p4 swapped on 11-13: the start
    with pytest.raises(InputError, match=rf"^{path}:11: column 'verdict': value 'Q'"):
        import_file(path, "mapped", [LONG_MAP])


def test_wide_jsonl_one_row_per_pair_default_judge_is_the_file_stem(tmp_path: Path) -> None:
    path = tmp_path / "arena.jsonl"
    rows = [
        {"qid": 1, "ab": "model_a", "ba": "model_a", "m1": "x", "m2": "y"},
        {"qid": 2, "ab": "tie", "ba": None, "m1": "x", "m2": "z"},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    spec = "id=qid,winner_ab=ab:model_a=a:model_b=b:tie=tie,winner_ba=ba:model_a=a:model_b=b:tie=tie,model_a=m1,model_b=m2"
    pairs = load_pairs_any(path, "mapped", [spec])
    assert [(p.pair_id, p.judge, p.model_b) for p in pairs] == [
        ("1", "arena", "y"),
        ("2", "arena", "z"),
    ]
    assert [(j.order, j.winner) for j in pairs[1].judgments] == [
        ("ab", "tie")
    ]  # empty = no verdict
    assert pairs[0].response_a == "" and pairs[0].metadata["answer_text"] is False


def test_missing_column_names_it_and_the_columns_there() -> None:
    rows = [(2, {"pid": "p", "w": "a"})]
    mapping = parse_map(["id=pid,winner=w,order=shown"])
    with pytest.raises(InputError) as caught:
        mapped_records(rows, mapping, "log.csv", "j")
    assert str(caught.value) == (
        "log.csv:2: column 'shown' (--map order=shown) not found; columns: pid, w"
    )


def test_rows_of_one_pair_must_agree_on_its_text() -> None:
    mapping = parse_map(["id=pid,winner=w,order=o,prompt=q"])
    rows = [(2, {"pid": "p", "w": "a", "o": "ab", "q": "one"}),
            (3, {"pid": "p", "w": "a", "o": "ba", "q": "two"})]  # fmt: skip
    with pytest.raises(
        InputError, match=r"^log:3: column 'q' \(prompt\) is 'two' here but 'one' on line 2"
    ):
        mapped_records(rows, mapping, "log", "j")


def test_boolean_and_integer_cells_and_repetitions() -> None:
    mapping = parse_map(["id=pid,winner=w,order=swapped:false=ab:true=ba,repetition=rep"])
    rows = [(1, {"pid": 5, "w": "A", "swapped": False, "rep": 1}),
            (2, {"pid": 5, "w": "b", "swapped": True, "rep": 2})]  # fmt: skip
    (record,) = mapped_records(rows, mapping, "t", "j").records
    assert record["id"] == "5"
    assert record["judgments"] == [
        {"order": "ab", "winner": "a", "repetition": 1},
        {"order": "ba", "winner": "b", "repetition": 2},
    ]
    bad = [(1, {"pid": 5, "w": "a", "swapped": False, "rep": "\u00b2"})]
    with pytest.raises(
        InputError,
        match=r"^t:1: column 'rep' \(repetition\): expected an integer >= 1; got '\u00b2'",
    ):
        mapped_records(bad, mapping, "t", "j")


def test_parquet_is_read_through_duckdb(tmp_path: Path) -> None:
    import duckdb

    parquet = tmp_path / "verdicts.parquet"
    source = str(LOGS / "mapped_verdicts.csv").replace("'", "''")
    duckdb.sql(
        f"COPY (SELECT * FROM read_csv('{source}', header=true, all_varchar=true))"
        f" TO '{parquet}' (FORMAT parquet)"
    )
    from_parquet = import_file(parquet, "mapped", [LONG_MAP])
    from_csv = import_file(LOGS / "mapped_verdicts.csv", "mapped", [LONG_MAP])
    assert from_parquet.records == from_csv.records


def test_saved_datasets_directory_is_read_with_pyarrow(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    rows = [
        {"pair_id": "p1", "grader": "g", "shown_first": "original", "verdict": "A"},
        {"pair_id": "p1", "grader": "g", "shown_first": "swapped", "verdict": "A"},
    ]
    directory = tmp_path / "train"
    directory.mkdir()
    table = pa.Table.from_pylist(rows)
    # what datasets' save_to_disk writes: Arrow stream shards listed in state.json
    shard = str(directory / "data-00000-of-00001.arrow")
    with pa.OSFile(shard, "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    (directory / "state.json").write_text(
        json.dumps({"_data_files": [{"filename": "data-00000-of-00001.arrow"}], "_split": None})
    )
    spec = "id=pair_id,judge=grader,order=shown_first:original=ab:swapped=ba,winner=verdict:A=first:B=second"
    (pair,) = load_pairs_any(directory, "mapped", [spec])
    assert [(j.order, j.winner) for j in pair.judgments] == [("ab", "a"), ("ba", "b")]


def test_dataset_dict_and_escaping_shards_are_refused(tmp_path: Path) -> None:
    (tmp_path / "dataset_dict.json").write_text('{"splits": ["train"]}')
    with pytest.raises(InputError, match="this is a DatasetDict; give one split's directory"):
        import_file(tmp_path, "mapped", ["id=a,winner_ab=b"])
    split = tmp_path / "train"
    split.mkdir()
    (split / "state.json").write_text(json.dumps({"_data_files": [{"filename": "../x.arrow"}]}))
    with pytest.raises(InputError, match="data file '../x.arrow' not found"):
        import_file(split, "mapped", ["id=a,winner_ab=b"])


def test_datasets_directory_without_pyarrow_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "state.json").write_text(json.dumps({"_data_files": [{"filename": "d.arrow"}]}))
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what an install without the extra sees
    with pytest.raises(
        MissingDependencyError,
        match=re.escape("pip install -e '.[arrow]' (in the llm-council checkout)"),
    ):
        import_file(tmp_path, "mapped", ["id=a,winner_ab=b"])
    (tmp_path / "state.json").write_text(json.dumps({"_data_files": [{"filename": 3}]}))
    with pytest.raises(InputError, match="field '_data_files' missing or malformed"):
        import_file(tmp_path, "mapped", ["id=a,winner_ab=b"])
