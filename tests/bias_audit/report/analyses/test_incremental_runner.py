"""A report built incrementally (the summary file merged with the new sessions) equals the
cold report of the final store, byte for byte in JSON, on JSONL and Parquet, and when the
file or the store is attacked (ADR 0073)."""

from __future__ import annotations

import json
import math
import os
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import structlog

from bias_audit.report.analyses.split_stores import (
    report_after_a_malformed_section,
    sections_summarized_again,
)
from generators.independent_council import CouncilSpec, generate_sessions, write_store
from generators.rank_council import RankCouncilSpec
from generators.rank_council import generate_sessions as rank_sessions
from generators.rank_council import write_store as write_rank_store
from generators.style_similarity import StyleSpec, add_similarity, write_styled_store
from llm_council.bias_audit.report import build_report
from llm_council.bias_audit.report.load.parquet_compaction import compact_store
from llm_council.bias_audit.report.load.session_summaries import (
    SavedSection,
    summaries_path,
)

REBUILT = "report_sessions_rebuilt"


def _report(store: Path, **options: object) -> str:
    """The report as canonical JSON (no time, no path): one summation order, so two runs
    of the same records give the same bytes."""
    report = build_report(store, n_resamples=20, seed=3, reproducible=True, **options).to_dict()
    report.pop("generated_at")
    report.pop("store")
    return json.dumps(report, sort_keys=True, allow_nan=True)


def _incremental(store: Path) -> tuple[str, list[str]]:
    """The report using the summary file, and why it was rebuilt (empty: it was merged)."""
    # an earlier report set the library's default (warnings only); capture every level
    structlog.reset_defaults()
    with structlog.testing.capture_logs() as logs:
        text = _report(store)
    return text, [str(entry.get("reason")) for entry in logs if entry["event"] == REBUILT]


def _cold(store: Path) -> str:
    return _report(store, session_summaries=False)


#: sections whose merged sums equal a full recompute up to rounding only (ADR 0077): their
#: numbers may differ from the cold report's in the last digits, nothing else may
_ROUNDED_SECTIONS = ("joint", "self_preference", "style_mimicry")
_ROUNDED_FAMILIES = ("self-preference", "style mimicry")
_ROUNDED_FIELDS = ("adjusted_mean_score",)  # the leaderboard's view of the joint model
ROUNDING = 1e-8


def _rounded(path: tuple[object, ...], holder: object) -> bool:
    return (
        any(key in _ROUNDED_SECTIONS for key in path)
        or (isinstance(holder, dict) and holder.get("family") in _ROUNDED_FAMILIES)
        or (bool(path) and path[-1] in _ROUNDED_FIELDS)
    )


def _differences(
    got: object, want: object, path: tuple[object, ...] = (), holder: object = None
) -> list[str]:
    """Where two reports differ beyond the documented rounding of :data:`_ROUNDED_SECTIONS`."""
    if isinstance(want, dict) and isinstance(got, dict):
        if got.keys() != want.keys():
            return [f"{path}: keys {sorted(got)} != {sorted(want)}"]
        return [d for key in want for d in _differences(got[key], want[key], (*path, key), want)]
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            return [f"{path}: {len(got)} items != {len(want)}"]
        return [
            d
            for i, (g, w) in enumerate(zip(got, want, strict=True))
            for d in _differences(g, w, (*path, i), holder)
        ]
    if got == want or (got != got and want != want):  # equal, or both NaN
        return []
    if (
        isinstance(got, float)
        and isinstance(want, float)
        and _rounded(path, holder)
        and math.isclose(got, want, rel_tol=ROUNDING, abs_tol=1e-12)
    ):
        return []
    return [f"{path}: {got!r} != {want!r}"]


def assert_same_report(incremental: str, cold: str) -> None:
    """Byte for byte, except the rounding of the sections summed in another order."""
    if incremental != cold:
        differences = _differences(json.loads(incremental), json.loads(cold))
        assert not differences, differences[:5]


def _independent_lines(tmp_path: Path, n_members: int, **spec: object) -> list[bytes]:
    path = tmp_path / "source.jsonl"
    write_store(path, generate_sessions(CouncilSpec(n_members=n_members, **spec), 48, 11))  # type: ignore[arg-type]
    return path.read_bytes().splitlines(keepends=True)


def _rank_lines(tmp_path: Path) -> list[bytes]:
    path = tmp_path / "source.jsonl"
    write_rank_store(path, rank_sessions(RankCouncilSpec(), 48, 12))
    return path.read_bytes().splitlines(keepends=True)


def _degenerate_lines(tmp_path: Path) -> list[bytes]:
    """judge-0 always gives 5 (the same score), judge-1 always puts the first slot on top."""
    lines = []
    for line in _independent_lines(tmp_path, 4, missing_score_rate=0.1):
        record = json.loads(line)
        if record["reviewer_id"] == "judge-0":
            record["score_value"] = 5.0
        if record["reviewer_id"] == "judge-1":
            record["score_value"] = 10.0 if record["position"] == 0 else 1.0
        lines.append((json.dumps(record) + "\n").encode())
    return lines


def _styled_lines(tmp_path: Path) -> list[bytes]:
    """5 members with a similarity column, judge-0 mimicking (style mimicry, ADR 0077)."""
    path = tmp_path / "source.jsonl"
    spec = CouncilSpec(n_members=5, missing_score_rate=0.05)
    styled = add_similarity(
        generate_sessions(spec, 48, 13), StyleSpec(mimicry=[3.0, 0, 0, 0, 0]), seed=14
    )
    write_styled_store(path, styled)
    return path.read_bytes().splitlines(keepends=True)


STORES: dict[str, Callable[[Path], list[bytes]]] = {
    "independent-4-missing": lambda p: _independent_lines(
        p, 4, missing_score_rate=0.1, missing_review_rate=0.1, slot_effects=[[0.8, 0, 0, 0]] * 4
    ),
    "independent-9-shared-order": lambda p: _independent_lines(p, 9, shared_order=True),
    "rank-points": _rank_lines,
    "degenerate-judges": _degenerate_lines,
    "independent-5-styled": _styled_lines,
}


def _append(store: Path, lines: list[bytes]) -> None:
    with store.open("ab") as stream:
        stream.write(b"".join(lines))


def _cuts(n_lines: int) -> list[int]:
    # not at session boundaries: a session straddles each cut
    return [int(n_lines * share) + 3 for share in (0.35, 0.6, 0.8)] + [n_lines]


@pytest.mark.parametrize("name", list(STORES))
def test_three_appends_to_jsonl_equal_the_cold_report(name: str, tmp_path: Path) -> None:
    lines = STORES[name](tmp_path)
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"")
    done = 0
    for step, cut in enumerate(_cuts(len(lines))):
        _append(store, lines[done:cut])
        done = cut
        incremental, rebuilt = _incremental(store)
        assert rebuilt == (["no verified summary file"] if step == 0 else [])
        assert_same_report(incremental, _cold(store))
    assert summaries_path(store).exists()


def test_three_compactions_into_parquet_equal_the_cold_report(tmp_path: Path) -> None:
    lines = STORES["independent-4-missing"](tmp_path)
    jsonl, parquet = tmp_path / "store.jsonl", tmp_path / "parquet"
    jsonl.write_bytes(b"")
    done = 0
    for step, cut in enumerate(_cuts(len(lines))):
        _append(jsonl, lines[done:cut])
        done = cut
        compact_store(jsonl, parquet)  # the new sessions: a new part file per day (ADR 0093)
        incremental, rebuilt = _incremental(parquet)
        assert rebuilt == (["no verified summary file"] if step == 0 else [])
        assert_same_report(incremental, _cold(parquet))
    assert summaries_path(parquet).name == "parquet.report-sessions"


@pytest.fixture
def grown_store(tmp_path: Path) -> tuple[Path, list[bytes]]:
    """A store summarized at 70% of its lines, and the remaining lines (not yet written)."""
    lines = STORES["independent-4-missing"](tmp_path)
    store = tmp_path / "store.jsonl"
    cut = int(len(lines) * 0.7) + 2  # mid-session
    store.write_bytes(b"".join(lines[:cut]))
    _report(store)
    return store, lines[cut:]


def _flip_a_byte(path: Path, at: int) -> None:
    raw = bytearray(path.read_bytes())
    raw[at] ^= 0x01
    path.write_bytes(bytes(raw))


ATTACKS: dict[str, tuple[Callable[[Path, Path], None], str]] = {
    "summary-edited": (
        lambda store, tmp: _flip_a_byte(summaries_path(store), 40),
        "no verified summary file",
    ),
    "summary-arrays-edited": (
        lambda store, tmp: _flip_a_byte(summaries_path(store), -5),
        "no verified summary file",
    ),
    "summary-truncated": (
        lambda store, tmp: summaries_path(store).write_bytes(
            summaries_path(store).read_bytes()[:-100]
        ),
        "no verified summary file",
    ),
    "summary-symlinked": (
        lambda store, tmp: (
            shutil.move(summaries_path(store), tmp / "moved"),
            summaries_path(store).symlink_to(tmp / "moved"),
        ),
        "no verified summary file",
    ),
    "summary-of-another-store": (
        lambda store, tmp: (
            shutil.copy(store, tmp / "other.jsonl"),
            _report(tmp / "other.jsonl"),
            shutil.copy(summaries_path(tmp / "other.jsonl"), summaries_path(store)),
        ),
        "no verified summary file",
    ),
    "store-shrunk": (
        lambda store, tmp: store.write_bytes(
            b"".join(store.read_bytes().splitlines(keepends=True)[:-30])
        ),
        "the store no longer extends what was summarized (replaced, shrunk or rewritten)",
    ),
    "store-replaced": (
        lambda store, tmp: (
            (tmp / "copy").write_bytes(store.read_bytes()),
            os.replace(tmp / "copy", store),
        ),
        "the store no longer extends what was summarized (replaced, shrunk or rewritten)",
    ),
    "folded-score-edited-in-place": (
        # the same length, the first line's score changed: outside the hashed tail
        lambda store, tmp: store.write_bytes(
            store.read_bytes().replace(b'"score_value": 7.0', b'"score_value": 8.0', 1)
        ),
        # the tail load's prefix hash, checked in the plan (ADR 0094), abandons the attempt
        # before the full load's per-session digests would see it
        "the tail load was abandoned: the prefix's bytes changed (SHA-256 differs)",
    ),
    # version-1 lines carry no line count: the session now has two more records
    "folded-session-partly-appended-again": (
        lambda store, tmp: _append(store, store.read_bytes().splitlines(keepends=True)[:2]),
        "a summarized session's records changed (count or content)",
    ),
}


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attacked_file_or_store_is_rebuilt_and_equals_the_cold_report(
    attack: str, grown_store: tuple[Path, list[bytes]], tmp_path: Path
) -> None:
    store, rest = grown_store
    damage, reason = ATTACKS[attack]
    damage(store, tmp_path)
    _append(store, rest)
    incremental, rebuilt = _incremental(store)
    assert rebuilt == [reason]
    assert_same_report(incremental, _cold(store))
    assert not summaries_path(store).is_symlink()
    # rebuilt and saved: the next run merges again
    _append(store, [])
    assert _incremental(store) == (incremental, [])


def test_a_whole_session_appended_again_is_pooled_once_and_merged(
    grown_store: tuple[Path, list[bytes]],
) -> None:
    store, rest = grown_store
    first_session = json.loads(store.read_bytes().splitlines()[0])["session_id"]
    again = [
        line for line in store.read_bytes().splitlines(keepends=True)
        if json.loads(line)["session_id"] == first_session
    ]  # fmt: skip
    _append(store, [*rest, *again])
    incremental, rebuilt = _incremental(store)
    assert rebuilt == []
    assert_same_report(incremental, _cold(store))


def test_opting_out_and_since_leave_the_file_alone(tmp_path: Path) -> None:
    lines = STORES["independent-4-missing"](tmp_path)
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(lines))
    _report(store, session_summaries=False)
    _report(store, since="2000-01-01")
    assert not summaries_path(store).exists()


def test_a_counted_session_partly_appended_again_is_dropped_and_rebuilt(tmp_path: Path) -> None:
    """Version-2 lines carry ``session_n_records``: the session is now incomplete."""
    lines = STORES["rank-points"](tmp_path)
    store = tmp_path / "store.jsonl"
    store.write_bytes(b"".join(lines[: len(lines) // 2]))
    _report(store)
    _append(store, [*lines[len(lines) // 2 :], lines[0]])
    incremental, rebuilt = _incremental(store)
    assert rebuilt == ["a summarized session is no longer in the store's records"]
    assert_same_report(incremental, _cold(store))


def test_the_report_comparison_allows_rounding_only_where_documented() -> None:
    cold = {"joint": {"residual_sd": 1.0}, "length": {"r": 0.5}, "hypotheses": []}
    cold["hypotheses"] = [{"family": "self-preference", "p_value": 0.25, "finding": False}]
    same = json.dumps(cold)

    def changed(section: str, field: str, value: object) -> str:
        report = json.loads(same)
        if section == "hypotheses":
            report["hypotheses"][0][field] = value
        else:
            report[section][field] = value
        return json.dumps(report)

    assert_same_report(changed("joint", "residual_sd", 1.0 + 1e-12), same)
    assert_same_report(changed("hypotheses", "p_value", 0.25 * (1 + 1e-12)), same)
    for report in (
        changed("joint", "residual_sd", 1.0 + 1e-6),  # beyond rounding
        changed("length", "r", 0.5 + 1e-15),  # an exact section
        changed("hypotheses", "finding", True),  # a flipped label
    ):
        with pytest.raises(AssertionError):
            assert_same_report(report, same)


@pytest.mark.parametrize(
    ("section", "field"),
    [("joint_model", "gram"), ("self_preference", "moments"), ("style_mimicry", "products")],
)
def test_a_malformed_saved_section_is_recomputed_and_equals_the_cold_report(
    section: str, field: str, tmp_path: Path
) -> None:
    """A sealed file whose payload of one section is not one (ADR 0077): that section is
    summarized again over every session, the others merge, the report is the cold one."""
    lines = STORES["independent-5-styled"](tmp_path)
    store = tmp_path / "store.jsonl"

    def malform(payload: SavedSection) -> SavedSection:
        return replace(payload, arrays={**payload.arrays, field: payload.arrays[field][:, :-1]})

    incremental, logs = report_after_a_malformed_section(
        store, lines, section, malform, lambda: _report(store)
    )
    recomputed = sections_summarized_again(logs)
    assert [entry["section"] for entry in recomputed] == [section]
    assert repr(field) in recomputed[0]["reason"]
    assert_same_report(incremental, _cold(store))
