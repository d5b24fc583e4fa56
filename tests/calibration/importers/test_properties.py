"""Whatever a row holds, an importer returns records the replay parser accepts or one InputError."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_council.calibration.importers import ImportResult, records_to_pairs
from llm_council.calibration.importers.fastchat import fastchat_pair_records
from llm_council.calibration.importers.mtbench_human import human_pair_records, read_human_judgments
from llm_council.errors import InputError

names = st.sampled_from(["alpha", "beta", "gamma", 'x"\n\u2028', "", " "]) | st.text(max_size=8)
cells = st.one_of(names, st.none(), st.integers(-2, 3), st.booleans(), st.lists(names, max_size=3))
fastchat_rows = st.fixed_dictionaries(
    {
        "question_id": cells,
        "model_1": names,
        "model_2": names,
        "g1_winner": st.sampled_from(["model_1", "model_2", "tie", "error", "A"]),
        "g2_winner": st.sampled_from(["model_1", "model_2", "tie", "error", None]),
        "judge": st.sampled_from([["gpt-4", "pair-v2"], ["gpt-4", "pair-v1"], "gpt-4", ["x"]]),
        "turn": cells,
    }
)
human_rows = st.fixed_dictionaries(
    {
        "question_id": cells,
        "model_a": names,
        "model_b": names,
        "winner": st.sampled_from(["model_a", "model_b", "tie", "tie (bothbad)", "both"]),
        "judge": cells,
        "turn": cells,
    }
)


def _check(result_of: Any, rows: list[dict[str, Any]]) -> None:
    try:
        result: ImportResult = result_of(list(enumerate(rows, start=1)))
    except InputError as error:
        assert "\n" not in str(error) and str(error).startswith("f:")
        return
    pairs = records_to_pairs(result, "f")
    assert len(pairs) == result.counts["pairs"]


@settings(max_examples=150, deadline=None)
@given(st.lists(fastchat_rows, max_size=6))
def test_fastchat_rows_import_or_fail_with_one_line(rows: list[dict[str, Any]]) -> None:
    _check(lambda numbered: fastchat_pair_records(numbered, "f"), rows)


@settings(max_examples=150, deadline=None)
@given(st.lists(human_rows, max_size=6))
def test_human_rows_import_or_fail_with_one_line(rows: list[dict[str, Any]]) -> None:
    _check(lambda numbered: human_pair_records(read_human_judgments(numbered, "f")), rows)
