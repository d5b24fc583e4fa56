"""The audit without its repeated work computes exactly what it computed before (ADR 0075).

The golden file (``cost_golden_cases.py``) was written by main's code before the change;
each session's numbers must agree to 1e-12 relative and everything else (flags, names,
notes, counts, None-ness) must be equal. The default run checks every eighth session of
each of the 60 cells (300 sessions), the slow run all 2,400.
"""

from __future__ import annotations

import gzip
import json
import math
from collections import Counter
from functools import cache
from typing import Any

import pytest

from bias_audit.session.cost_golden_cases import (
    FLOAT_MARK,
    GOLDEN_PATH,
    QUICK_STRIDE,
    SESSIONS_PER_CELL,
    audit_json,
    cell_sessions,
    cells,
    split_floats,
)

TOLERANCE = 1e-12


@cache
def _golden() -> dict[tuple[str, int], dict[str, Any]]:
    entries = json.loads(gzip.decompress(GOLDEN_PATH.read_bytes()))
    return {(entry["case"], entry["index"]): entry for entry in entries}


def _float_paths(skeleton: Any, where: str = "") -> list[str]:
    """The JSON path of each float marker, in :func:`split_floats`'s order."""
    if isinstance(skeleton, dict):
        return [
            path
            for key in sorted(skeleton)
            for path in _float_paths(skeleton[key], f"{where}.{key}")
        ]
    if isinstance(skeleton, list):
        return [
            path for i, item in enumerate(skeleton) for path in _float_paths(item, f"{where}[{i}]")
        ]
    return [where] if skeleton == FLOAT_MARK else []


def _differences(name: str, saved: dict[str, Any], result: dict[str, Any]) -> list[str]:
    floats: list[float] = []
    skeleton = split_floats(result, floats)
    if skeleton != saved["skeleton"]:
        changed = sorted(
            key
            for key in set(skeleton) | set(saved["skeleton"])
            if skeleton.get(key) != saved["skeleton"].get(key)
        )
        return [f"{name}: fields other than numbers differ: {changed}"]
    problems = []
    for path, expected, actual in zip(_float_paths(skeleton), saved["floats"], floats, strict=True):
        same_nan = math.isnan(expected) and math.isnan(actual)
        if not same_nan and not math.isclose(
            expected, actual, rel_tol=TOLERANCE, abs_tol=TOLERANCE
        ):
            problems.append(f"{name}{path}: {expected!r} != {actual!r}")
    return problems


def _check(stride: int) -> int:
    golden = _golden()
    problems: list[str] = []
    checked = 0
    for cell in cells():
        for index, table, history in cell_sessions(cell):
            if index % stride:
                continue
            saved = golden[(cell.name, index)]
            problems += _differences(
                f"{cell.name}#{index}", saved, audit_json(table, history, index)
            )
            checked += 1
    assert not problems, "\n".join(problems[:20])
    return checked


def test_every_eighth_golden_session_is_unchanged_to_1e_12() -> None:
    assert _check(QUICK_STRIDE) == len(cells()) * SESSIONS_PER_CELL // QUICK_STRIDE == 300


@pytest.mark.slow
def test_every_golden_session_is_unchanged_to_1e_12() -> None:
    assert _check(1) == len(cells()) * SESSIONS_PER_CELL == 2400


def test_the_golden_sessions_exercise_every_flag_path_and_note() -> None:
    """A comparison that never meets a flag, the history check or a refusal proves little."""
    golden = _golden()
    assert len(golden) == 2400
    flags = Counter(flag for entry in golden.values() for flag in entry["skeleton"]["flags_raised"])
    assert set(flags) == {
        "length_bias_detected",
        "position_bias_detected",
        "harsh_or_generous_reviewers",
        "self_preference_detected",
    }
    notes = Counter(
        note for entry in golden.values() for note in entry["skeleton"]["indicator_only"]
    )
    assert {"history_check", "reviewers"} <= set(notes)
    risks = Counter(entry["skeleton"]["overall_bias_risk"] for entry in golden.values())
    assert {"not_tested", "low"} <= set(risks) and len(risks) >= 3
    # ADR 0071's session-only check runs in every history session at 5 and 9 members, and
    # never without history (at 3 members a degenerate fit can leave nothing to check)
    for (name, _), entry in golden.items():
        checked = "history_check" in entry["skeleton"]["indicator_only"]
        if "-no-history-" in name:
            assert not checked, name
        elif name.split("-")[1] != "3":
            assert checked, name
    assert notes["history_check"] > 1000


def test_audits_in_threads_equal_the_golden_ones() -> None:
    """The memos are shared by every thread (ADR 0075): four threads auditing sessions of
    two cells at once, interleaved, each still gets the saved result."""
    from concurrent.futures import ThreadPoolExecutor

    golden = _golden()
    chosen = [
        cell
        for cell in cells()
        if cell.name in ("independent-5-history-biased", "simulator-9-history-missing")
    ]
    jobs = [
        (cell.name, index, table, history)
        for cell in chosen
        for index, table, history in cell_sessions(cell)
        if index < 12
    ]
    with ThreadPoolExecutor(4) as pool:
        results = list(
            pool.map(lambda job: audit_json(job[2], job[3], job[1]), jobs[::2] + jobs[1::2])
        )
    problems: list[str] = []
    for (name, index, _, _), result in zip(jobs[::2] + jobs[1::2], results, strict=True):
        problems += _differences(f"{name}#{index}", golden[(name, index)], result)
    assert len(results) == 24
    assert not problems, "\n".join(problems[:20])
