"""``bias-report`` with the reference council's options, on the reference's own store."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from llm_council.bias_persistence import BiasMetricRecord, append_bias_records
from llm_council.cli.app import main
from llm_council.integrations.reference_cli import is_reference_store


def _reference_store(path: Path, n_sessions: int = 12) -> Path:
    """Reference-format lines: 3 reviewers x 4 answers, own shuffled order, one a day."""
    rng = np.random.default_rng(11)
    now = datetime.now(UTC)
    records = []
    for s in range(n_sessions):
        stamp = (now - timedelta(days=n_sessions - s, hours=1)).isoformat()
        for reviewer in ("r/a", "r/b", "r/c"):
            order = rng.permutation(4)
            for slot, answer in enumerate(order):
                records.append(
                    BiasMetricRecord(
                        session_id=f"s{s:02d}",
                        timestamp=stamp,
                        reviewer_id=reviewer,
                        model_id=f"m/{answer}",
                        position=slot,
                        response_length_chars=int(rng.integers(50, 900)),
                        score_value=float(rng.integers(3, 10)),
                    )
                )
    append_bias_records(records, path)
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["bias-report", *args])
    captured = capsys.readouterr()
    return int(exit_info.value.code or 0), captured.out, captured.err


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    code, out, err = _run([*args, "--format", "json"], capsys)
    assert code == 0, err
    return json.loads(out), err


def test_a_reference_store_is_read_with_a_note_not_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _reference_store(tmp_path / "bias_metrics.jsonl")
    assert is_reference_store(str(store))
    report, err = _json(["--input", str(store)], capsys)
    assert report["n_sessions"] == 12 and report["n_records"] == 144
    assert report["store"] == f"{store} (reference records, converted)"
    assert "reference council's records" in err and "144 of 144 converted" in err
    assert f"llm-council bias-import --from reference {store}" in err
    assert not list(tmp_path.glob("llm-council-reference-*"))  # nothing left behind


def test_days_and_sessions_select_the_last_sessions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _reference_store(tmp_path / "bias_metrics.jsonl")
    # s11 is 1 day 1 hour old, s10 2 days 1 hour, s09 3 days 1 hour: --days 3 keeps two
    by_days, _ = _json(["--input", str(store), "--days", "3"], capsys)
    by_since, _ = _json(["--store", str(store), "--since", "3d"], capsys)
    assert by_days["n_sessions"] == by_since["n_sessions"] == 2
    by_sessions, _ = _json(["--input", str(store), "--sessions", "5", "--verbose"], capsys)
    assert by_sessions["n_sessions"] == 5
    # the spelling in the reference's README table
    by_max, _ = _json(["--input", str(store), "--max-sessions", "5", "--max-days", "30"], capsys)
    assert by_max["n_sessions"] == 5
    # both, as the reference: the last 5 sessions of the last 3 days are the 2 there are
    both, _ = _json(["--input", str(store), "--sessions", "5", "--days", "3"], capsys)
    assert both["n_sessions"] == 2


def test_conflicting_or_bad_reference_options_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _reference_store(tmp_path / "bias_metrics.jsonl")
    code, _, err = _run(["--input", str(store), "--since", "2d", "--days", "2"], capsys)
    assert code == 2 and "give --since, or the reference's --days / --sessions, not both" in err
    code, _, err = _run(["--input", str(store), "--sessions", "0"], capsys)
    assert code == 2 and "--sessions must be at least 1" in err
    code, _, err = _run(["--input", str(store), "--amplification", "--format", "csv"], capsys)
    assert code == 2 and "--amplification works with --format text or json" in err
    code, _, err = _run(["--input", str(tmp_path / "none"), "--sessions", "3"], capsys)
    assert code == 2 and "needs a JSONL store file" in err


def test_amplification_is_appended(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _reference_store(tmp_path / "bias_metrics.jsonl")
    report, _ = _json(["--input", str(store), "--amplification"], capsys)
    assert report["amplification"]["sessions_analyzed"] == 12
    assert report["amplification"]["report_only"] is True
    code, out, _ = _run(["--input", str(store), "--amplification"], capsys)
    assert code == 0 and "Amplification (report-only, never gates a session)" in out


def test_our_store_is_not_mistaken_for_the_references(tmp_path: Path) -> None:
    ours = tmp_path / "ours.jsonl"
    ours.write_text(json.dumps({"schema_version": 3, "session_id": "s"}) + "\n")
    assert not is_reference_store(str(ours))
    assert not is_reference_store(str(tmp_path))  # a directory
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b'\xff\xfe not json\n{"schema_version": "1.2.0"}\n')
    assert is_reference_store(str(garbage))
