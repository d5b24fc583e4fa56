"""What one audited ``ask`` imports: the session path stays off the heavy modules (ADR 0063).

A module-set check, not a timing: ``scipy.stats`` alone cost the audited ``ask`` about a
second of CPU (issue 35), and a single ``import`` line added at a module's top can bring it
back. The child runs the real CLI on the simulated council with the audit on, then lists
``sys.modules``; the check is deterministic and runs in about the time of one ``ask``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

#: modules the audit of one session must not import, each with why it is heavy or off-path
FORBIDDEN_ON_SESSION_PATH: dict[str, str] = {
    "scipy": (
        "scipy.special alone costs about 0.29 s of CPU (its array-API layer loads numpy.f2py,"
        " numpy.testing, numpy.ma); the session's tails are stats/numerics/special_functions.py"
    ),
    "scipy.stats": "about 1 s of CPU to import; the session needs only a few tails",
    "scipy.optimize": "imports scipy.linalg and scipy.sparse; no fit on the session path",
    "scipy.sparse": "the report's sparse designs, not one session's dense ones",
    "scipy.linalg": "numpy.linalg serves the session's small systems",
    "duckdb": "the report's engine",
    "pyarrow": "Parquet stores, read by the report",
    "pandas": "never needed by the audit",
    "polars": "never needed by the audit",
    "sklearn": "never needed by the audit",
    "matplotlib": "the dashboard's screenshots only",
    "genai_prices": "prices real providers' calls; the simulated council is unpriced",
    "llm_council.bias_audit.report": "bias-report's layers, never one session's",
    "llm_council.calibration": "the calibrate command",
}

#: what would take the child off the simulated council or switch the audit by environment
_DROPPED_VARIABLES = (
    "LLM_COUNCIL_CONFIG",
    "LLM_COUNCIL_BIAS_AUDIT",
    "BIAS_AUDIT_ENABLED",
    "OTEL_TRACES_EXPORTER",
)

_CHILD = """\
import json, sys
from llm_council.cli.app import main
try:
    main(["ask", "Which test should a team write first?", "--seed", "3", "--bias-audit"])
except SystemExit as stop:
    if stop.code not in (0, None):
        raise
with open(sys.argv[1], "w", encoding="utf-8") as listing:
    json.dump(sorted(sys.modules), listing)
"""


def _imported_by_one_audited_ask(tmp_path: Path) -> list[str]:
    listing = tmp_path / "modules.json"
    environment = {
        key: value
        for key, value in os.environ.items()
        if key not in _DROPPED_VARIABLES and not key.endswith("_API_KEY")
    }
    environment["LLM_COUNCIL_BIAS_STORE"] = str(tmp_path / "store" / "records.jsonl")
    result = subprocess.run(
        [sys.executable, "-c", _CHILD, str(listing)],
        capture_output=True,
        text=True,
        env=environment,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    # the audit ran: it wrote this session's records
    assert (tmp_path / "store" / "records.jsonl").stat().st_size > 0
    return json.loads(listing.read_text(encoding="utf-8"))


def test_one_audited_session_imports_none_of_the_heavy_modules(tmp_path: Path) -> None:
    modules = _imported_by_one_audited_ask(tmp_path)
    # the audit's own modules are there, so the list is of an audited session
    assert "llm_council.bias_audit.session.session_audit" in modules
    # the tails it does need, in numpy (ADR 0063's amendment of 2026-11-27)
    assert "llm_council.stats.numerics.special_functions" in modules
    imported = set(modules)
    offending = {
        forbidden: why
        for forbidden, why in FORBIDDEN_ON_SESSION_PATH.items()
        if any(name == forbidden or name.startswith(forbidden + ".") for name in imported)
    }
    assert not offending, "the audited ask imported " + "; ".join(
        f"{name} ({why})" for name, why in sorted(offending.items())
    )
