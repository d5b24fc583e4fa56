"""Favouritism from merged per-session summaries (ADR 0078): merged parts finish to the
whole store's matrix bit for bit (each session's residuals are its own product, rows are
concatenated in session-id order), payloads round-trip, malformed payloads are refused by
field, and a store that outgrows the length-control cap loses the control as a cold run
does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bias_audit.report.analyses.split_stores import (
    connection_of,
    independent_sessions,
    json_lines,
    ranked_sessions,
    report_after_a_malformed_section,
    sections_summarized_again,
    write_parts,
)
from golden_compare import golden_differences
from llm_council.bias_audit.report.analyses import favouritism_summary
from llm_council.bias_audit.report.analyses.favouritism import (
    Favouritism,
    FavouritismSection,
    favouritism,
)
from llm_council.bias_audit.report.analyses.favouritism_summary import FavouritismSummary
from llm_council.bias_audit.report.analyses.incremental_section import SummaryNotMergeable

SECTION = FavouritismSection(0.05)


STORES = {
    "independent-3-missing": lambda: independent_sessions(
        3, 45, 1, missing_score_rate=0.1, missing_review_rate=0.1, leniency=[-1.0, 0.0, 0.5]
    ),
    "independent-5-biased": lambda: independent_sessions(
        5,
        40,
        2,
        self_bias=[1.5, 0, 0, 0, 0],
        slot_effects=[[1.0, 0, 0, 0, 0]] * 5,
        verbosity=[0.8, 0, 0, 0, 0],
        quality_length_correlation=0.3,
    ),
    "independent-9-shared-order": lambda: independent_sessions(
        9, 24, 3, shared_order=True, missing_review_rate=0.2, self_review=False
    ),
    "rank-4-integer-scores": lambda: ranked_sessions(4, 45, 4, scores=True, order="reviewer"),
    "independent-4-constant-judge": lambda: [
        [r | {"score_value": 5.0} if r["reviewer_id"] == "judge-0" else r for r in session]
        for session in independent_sessions(4, 40, 21, missing_score_rate=0.05)
    ],
}


def _summaries(name: str, directory: Path) -> tuple[list[FavouritismSummary], FavouritismSummary]:
    sessions = STORES[name]()
    n = len(sessions)
    # interleaved parts: session ids of one part sort between those of another
    paths = write_parts(sessions, [range(0, n, 3), range(1, n, 3), range(2, n, 3)], directory)
    summaries = [SECTION.summarize(connection_of(path)) for path in paths]
    return summaries[:-1], summaries[-1]


def _same(a: Favouritism | None, b: Favouritism | None) -> bool:
    """Equal field for field, NaN equal to NaN (bit for bit otherwise)."""
    return repr(a) == repr(b)


@pytest.mark.parametrize("name", sorted(STORES))
def test_merged_parts_finish_to_the_whole_store_bit_for_bit(name: str, tmp_path: Path) -> None:
    (a, b, c), whole = _summaries(name, tmp_path)
    cold = SECTION.finish(whole)
    assert isinstance(cold, Favouritism) and cold.cells
    for merged in (
        SECTION.merge(SECTION.merge(a, b), c),
        SECTION.merge(a, SECTION.merge(b, c)),
        SECTION.merge(c, SECTION.merge(b, a)),
    ):
        np.testing.assert_array_equal(merged.session_id, whole.session_id)
        np.testing.assert_array_equal(merged.scores, whole.scores)
        np.testing.assert_array_equal(merged.log_words, whole.log_words)
        assert _same(SECTION.finish(merged), cold)


def test_the_planted_biases_are_found_from_merged_parts(tmp_path: Path) -> None:
    (a, b, c), _ = _summaries("independent-5-biased", tmp_path)
    result = SECTION.finish(SECTION.merge(SECTION.merge(a, b), c))
    assert result is not None and result.length_controlled
    own = next(cell for cell in result.cells if cell.reviewer == "judge-0" and cell.is_self)
    assert own.effect.estimate > 0.5  # self_bias 1.5 on judge-0's own answers


def test_the_connection_entry_point_is_summarize_then_finish(tmp_path: Path) -> None:
    _, whole = _summaries("independent-3-missing", tmp_path)
    path = tmp_path / "part-3.jsonl"  # the whole store, written last
    assert _same(favouritism(connection_of(path)), SECTION.finish(whole))


def test_the_payload_round_trips(tmp_path: Path) -> None:
    (a, b, _), _ = _summaries("independent-3-missing", tmp_path)
    merged = SECTION.merge(a, b)
    meta, arrays = SECTION.to_payload(merged)
    back = SECTION.from_payload(meta, arrays)
    again_meta, again_arrays = SECTION.to_payload(back)
    assert again_meta == meta and again_arrays.keys() == arrays.keys()
    for key, value in arrays.items():
        np.testing.assert_array_equal(again_arrays[key], value)
    assert _same(SECTION.finish(back), SECTION.finish(merged))


def _broken(meta: dict[str, Any], arrays: dict[str, np.ndarray], how: str) -> None:
    if how == "missing array":
        del arrays["log_words"]
    elif how == "unsorted names":
        meta["reviewers"] = list(reversed(meta["reviewers"]))
    elif how == "infinite score":
        arrays["scores"] = np.where(np.isfinite(arrays["scores"]), np.inf, np.nan)
    elif how == "nan length":
        arrays["log_words"] = np.full_like(arrays["log_words"], np.nan)
    elif how == "wrong table shape":
        arrays["scores"] = arrays["scores"][:, :-1]
    elif how == "integer scores":
        arrays["scores"] = np.nan_to_num(arrays["scores"]).astype(np.int64)
    elif how == "unsorted sessions":
        arrays["session_id"] = arrays["session_id"][::-1]
    elif how == "numeric sessions":
        arrays["session_id"] = np.arange(arrays["session_id"].size)
    elif how == "negative count":
        arrays["slot_sessions"] = arrays["slot_sessions"] - 100
    elif how == "wrong pair shape":
        arrays["self_pairs"] = arrays["self_pairs"][:, :-1]


_FIELDS = {
    "missing array": "log_words",
    "unsorted names": "reviewers",
    "infinite score": "scores",
    "nan length": "log_words",
    "wrong table shape": "scores",
    "integer scores": "scores",
    "unsorted sessions": "session_id",
    "numeric sessions": "session_id",
    "negative count": "slot_sessions",
    "wrong pair shape": "self_pairs",
}


@pytest.mark.parametrize("how", sorted(_FIELDS))
def test_a_malformed_payload_raises_naming_the_field(how: str, tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("independent-3-missing", tmp_path)
    meta, arrays = SECTION.to_payload(a)
    meta, arrays = dict(meta), dict(arrays)
    _broken(meta, arrays, how)
    with pytest.raises(ValueError, match=f"favouritism summary: field '{_FIELDS[how]}'"):
        SECTION.from_payload(meta, arrays)


def test_summaries_sharing_a_session_do_not_merge(tmp_path: Path) -> None:
    (a, _, _), _ = _summaries("independent-3-missing", tmp_path)
    with pytest.raises(SummaryNotMergeable, match="in both summaries"):
        SECTION.merge(a, a)


def test_a_new_reviewer_and_model_widen_the_saved_summary(tmp_path: Path) -> None:
    """Sessions of a 3-member council, then sessions where a fourth member joins: the saved
    summary is widened (unobserved cells), and the matrix is the whole store's."""
    three = independent_sessions(3, 24, 5)
    four = [
        [r | {"session_id": f"z-{r['session_id']}"} for r in session]
        for session in independent_sessions(4, 24, 6)
    ]
    paths = write_parts([*three, *four], [range(24), range(24, 48)], tmp_path)
    first, second, whole = (SECTION.summarize(connection_of(path)) for path in paths)
    assert len(first.reviewers) == 3 and len(whole.reviewers) == 4
    for merged in (SECTION.merge(first, second), SECTION.merge(second, first)):
        assert merged.reviewers == whole.reviewers and merged.models == whole.models
        np.testing.assert_array_equal(merged.scores, whole.scores)
        np.testing.assert_array_equal(merged.log_words, whole.log_words)
        np.testing.assert_array_equal(merged.slot_low, whole.slot_low)
        np.testing.assert_array_equal(merged.self_pairs, whole.self_pairs)
        assert _same(SECTION.finish(merged), SECTION.finish(whole))


def test_outgrowing_the_length_cap_drops_the_control_as_a_cold_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (a, b, c), whole = _summaries("independent-3-missing", tmp_path)
    n_reviewers, n_models = len(a.reviewers), len(a.models)
    # the cap passed by the three parts together, not by any two of them
    monkeypatch.setattr(
        favouritism_summary,
        "LENGTH_CONTROL_MAX_FLOATS",
        (a.session_id.size + b.session_id.size) * n_reviewers**2 * n_models,
    )
    assert SECTION.merge(a, b).length_controlled
    merged = SECTION.merge(SECTION.merge(a, b), c)
    assert not merged.length_controlled and not whole.length_controlled
    result = SECTION.finish(merged)
    assert result is not None and not result.length_controlled
    assert _same(result, SECTION.finish(whole))


def test_a_store_without_scores_gives_none(tmp_path: Path) -> None:
    sessions = [
        [r | {"score_value": None} for r in session] for session in independent_sessions(3, 4, 9)
    ]
    path = write_parts(sessions, [], tmp_path)[-1]
    assert SECTION.finish(SECTION.summarize(connection_of(path))) is None


@pytest.mark.parametrize("section", ["favouritism", "reasoning", "anchoring"])
def test_a_malformed_saved_summary_is_recomputed_by_the_report(
    section: str, tmp_path: Path
) -> None:
    """A sealed file whose section payload does not read (a bug, or another format) is
    never trusted: the report logs it, computes the section from every record, and equals
    the cold report."""
    import json as json_module

    from llm_council.bias_audit.report import build_report
    from llm_council.bias_audit.report.load.session_summaries import SavedSection

    sessions = STORES["independent-3-missing"]()
    store = tmp_path / "store.jsonl"

    def report(**options: Any) -> str:
        built = build_report(store, n_resamples=10, seed=1, reproducible=True, **options)
        data = built.to_dict()
        data.pop("generated_at")
        return json_module.dumps(data, sort_keys=True, allow_nan=True)

    def malform(payload: SavedSection) -> SavedSection:
        broken = dict(payload.arrays)
        broken.pop(next(iter(broken)))  # one array gone
        return SavedSection(1, payload.meta, broken)

    incremental, logs = report_after_a_malformed_section(
        store, json_lines(sessions), section, malform, report
    )
    recomputed = sections_summarized_again(logs)
    assert [entry["section"] for entry in recomputed] == [section]
    # equal to the report without the file up to the joint model's rounding (ADR 0077)
    cold = json_module.loads(report(session_summaries=False))
    assert golden_differences(cold, json_module.loads(incremental), "report", 1e-8) == []


def test_hostile_session_reviewer_and_model_names_merge_to_the_whole_store(
    tmp_path: Path,
) -> None:
    """Quotes, newlines, non-ASCII, SQL and long names: sorted the same way by every part,
    so favouritism and anchoring merged from two parts are the whole store's."""
    from llm_council.bias_audit.report.analyses.anchoring import AnchoringSection

    hostile = ['a"b', "line\nbreak", "ü-ß", "💥", "'; DROP TABLE records; --", "x" * 300]
    renamed = [
        [
            r
            | {
                "session_id": f"{hostile[index % len(hostile)]}|{index}",
                "reviewer_id": hostile[int(r["reviewer_id"][-1])],
                "model_id": hostile[int(r["model_id"][-1])],
            }
            for r in session
        ]
        for index, session in enumerate(STORES["independent-5-biased"]())
    ]
    n = len(renamed)
    paths = write_parts(renamed, [range(0, n, 2), range(1, n, 2)], tmp_path)
    connections = [connection_of(path) for path in paths]
    for section in (SECTION, AnchoringSection(0.05)):
        first, second, whole = (section.summarize(connection) for connection in connections)
        meta, arrays = section.to_payload(section.merge(first, second))
        merged = section.from_payload(meta, arrays)
        assert repr(section.finish(merged)) == repr(section.finish(whole))
        assert set(merged.reviewers) == set(hostile[:5])
