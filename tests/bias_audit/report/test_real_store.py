"""The report on a store written by real ``llm-council ask --bias-audit`` runs.

The council is the embedded simulated one (offline); the records go through the real
middleware and store, so this is the path a user's store takes.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from llm_council.cli.app import _run, app


@pytest.fixture(scope="module")
def real_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("real") / "bias_records.jsonl"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LLM_COUNCIL_BIAS_STORE", str(store))
        patch.delenv("LLM_COUNCIL_CONFIG", raising=False)
        for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
            patch.delenv(variable, raising=False)
        for seed in range(4):
            code = _run(
                [
                    "ask",
                    f"question number {seed}",
                    "--bias-audit",
                    "--seed",
                    str(seed),
                    "--json",
                    "--log-level",
                    "error",
                ],
                "llm-council",
                app,
            )
            assert code == 0
    return store


@pytest.mark.parametrize("fmt", ["text", "json", "csv", "html"])
def test_every_format_works_on_a_real_store(
    real_store: Path, fmt: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    assert (
        _run(
            ["bias-report", "--store", str(real_store), "--format", fmt, "--bootstrap", "20"],
            "llm-council",
            app,
        )
        == 0
    )
    out = capsys.readouterr().out
    if fmt == "json":
        payload = json.loads(out)
        assert payload["n_sessions"] == 4
        assert all(p["reliability"] == "insufficient" for p in payload["profiles"])
        assert payload["joint"]["n_sessions"] == 4
    elif fmt == "csv":
        rows = list(csv.reader(io.StringIO(out)))
        assert rows[0][0] == "section" and len(rows) > 20
    elif fmt == "html":
        # six plots, the reviewer x slot grid, the heat map, and the style-mimicry plot
        # (ask's audit writes similarity_to_own by default); then one slot strip per card
        assert out.count('<svg id="plot-') == 9
        assert '<svg id="plot-style-mimicry"' in out
        assert 'id="findings"' in out and out.count('<section class="card"') >= 2
    else:
        assert "=== Reviewer Profiles (4 sessions) ===" in out
