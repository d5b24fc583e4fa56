"""The resume point (ADR 0081): it survives the sealed summary file exactly, a malformed
one is refused naming its field, and counts add and subtract counter by counter."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_council.bias_audit.records.summary_files import SummaryUnverifiable, summarised_store
from llm_council.bias_audit.records.summary_seal import sealed_json, unsealed_json
from llm_council.bias_audit.report.load.raw_records import RecordCounts
from llm_council.bias_audit.report.load.resume_point import (
    ZERO_COUNTS,
    PartFile,
    ResumePoint,
    add_counts,
)
from llm_council.bias_audit.report.load.session_summaries import (
    SEAL_KIND,
    SessionSummaries,
    decode_summaries,
    encode_summaries,
)

COUNTS = RecordCounts(
    n_rows=120,
    n_valid=117,
    n_unknown_version=1,
    n_incomplete_sessions=2,
    n_incomplete_records=9,
    n_records=100,
    n_sessions=7,
    n_check_records_ignored=0,
    n_bad_scores=3,
    n_duplicate_records=4,
    n_duplicate_sessions=1,
)
HOSTILE_IDS = np.asarray(sorted(["s\n1", "s\x002", "", "é'; --"]), dtype=str)


def _point(**changes: Any) -> ResumePoint:
    point = ResumePoint(
        kind="jsonl",
        counts=COUNTS,
        other_session_ids=HOSTILE_IDS,
        offset=4096,
        prefix_sha256="sha256:" + "ab" * 32,
    )
    return dataclasses.replace(point, **changes)


def _summaries(resume: ResumePoint | None) -> SessionSummaries:
    ids = np.asarray(["a", "b"], dtype=str)
    return SessionSummaries(
        {"kind": "jsonl"}, {"seed": 0}, ids, np.ones((2, 2), np.uint64), {}, resume
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    path = tmp_path / "store.jsonl"
    path.write_text("{}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "point",
    [
        _point(),
        _point(other_session_ids=np.asarray([], dtype=str)),
        _point(
            kind="parquet",
            offset=0,
            prefix_sha256="",
            files=(PartFile("date=2026-01-05/part-0.parquet", 10, 2**62, "sha256:00"),),
        ),
    ],
)
def test_a_resume_point_survives_the_file_exactly(store: Path, point: ResumePoint) -> None:
    content = encode_summaries(store, _summaries(point))
    assert content is not None
    back = decode_summaries(store, content).resume
    assert back is not None
    assert dataclasses.replace(back, other_session_ids=point.other_session_ids) == point
    assert back.other_session_ids.tolist() == point.other_session_ids.tolist()


def test_a_file_without_a_resume_point_reads_as_none(store: Path) -> None:
    content = encode_summaries(store, _summaries(None))
    assert content is not None
    assert decode_summaries(store, content).resume is None


def _resealed(store: Path, content: bytes, edit: Any) -> bytes:
    """``content`` with its JSON edited by ``edit`` and sealed again (a forger with the key:
    what the reader's own checks must still refuse)."""
    sealed, _, raw = content.partition(b"\n")
    body = unsealed_json(SEAL_KIND, str(summarised_store(store)), sealed, resolved=True)
    assert body is not None
    edit(body)
    again = sealed_json(SEAL_KIND, str(summarised_store(store)), body, resolved=True)
    assert again is not None
    return again + b"\n" + raw


MALFORMED: dict[str, tuple[Any, str]] = {
    "negative offset": (lambda body: body["resume"].update(offset=-1), "'offset'"),
    "boolean offset": (lambda body: body["resume"].update(offset=True), "'offset'"),
    "unknown kind": (lambda body: body["resume"].update(kind="csv"), "'kind'"),
    "a count missing": (lambda body: body["resume"]["counts"].pop("n_rows"), "RecordCounts"),
    "a count negative": (
        lambda body: body["resume"]["counts"].update(n_bad_scores=-2),
        "'n_bad_scores'",
    ),
    "a count a float": (lambda body: body["resume"]["counts"].update(n_rows=1.5), "'n_rows'"),
    "a file entry short": (
        lambda body: body["resume"].update(files=[{"path": "x", "size": 1}]),
        "file entry",
    ),
    "an older format": (lambda body: body.update(format=2), "format 2"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_a_malformed_resume_point_is_refused_naming_the_field(store: Path, case: str) -> None:
    content = encode_summaries(store, _summaries(_point()))
    assert content is not None
    edit, named = MALFORMED[case]
    with pytest.raises(SummaryUnverifiable, match=named.replace("'", "'")):
        decode_summaries(store, _resealed(store, content, edit))


def test_counts_add_and_subtract_counter_by_counter() -> None:
    doubled = add_counts(COUNTS, COUNTS)
    assert doubled.n_rows == 240 and doubled.n_duplicate_sessions == 2
    assert add_counts(doubled, COUNTS, -1) == COUNTS
    assert add_counts(COUNTS, ZERO_COUNTS) == COUNTS
    assert json.dumps(_point().to_json()["counts"], sort_keys=True).count(":") == len(
        dataclasses.fields(RecordCounts)
    )
