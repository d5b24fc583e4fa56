"""What importing the report costs: not the per-session audit, and not scipy.stats from the
modules the report owns (issue 12: scipy.stats alone is about a second of CPU)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import llm_council.bias_audit as bias_audit

SOURCE = Path(bias_audit.__file__).resolve().parents[1]

#: modules that still import scipy.stats at module level, owned elsewhere this round
#: (shared: stats/inference/pooling.py; style mimicry: stats/bias_effects/style_mimicry.py)
_NOT_OURS = {
    "stats/inference/pooling.py",
    "stats/bias_effects/style_mimicry.py",
    "stats/bias_effects/favouritism.py",
}


def test_importing_the_report_does_not_load_the_per_session_audit() -> None:
    code = (
        "import sys\n"
        "import llm_council.bias_audit.report.build\n"
        "print(sorted(m for m in sys.modules if m in {"
        "'llm_council.bias_audit.session.audit', 'llm_council.anonymize', 'llm_council.config',"
        " 'llm_council.prompts', 'llm_council.bias_audit.session.thresholds'}))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_the_facade_still_exports_every_public_name() -> None:
    for name in bias_audit.__all__:
        assert getattr(bias_audit, name) is not None, name
    assert set(bias_audit.__all__) <= set(dir(bias_audit))


def _imports_scipy_stats_at_module_level(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:  # module level only: a deferred import inside a function is fine
        if (
            isinstance(node, ast.ImportFrom)
            and node.module == "scipy"
            and any(alias.name == "stats" for alias in node.names)
        ):
            return True
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("scipy.stats"):
            return True
        if isinstance(node, ast.Import) and any(
            alias.name.startswith("scipy.stats") for alias in node.names
        ):
            return True
    return False


def test_report_modules_do_not_import_scipy_stats_at_module_level() -> None:
    report_modules = sorted((SOURCE / "bias_audit" / "report").rglob("*.py"))
    stats_used = {
        line.split()[1].removeprefix("llm_council.").replace(".", "/") + ".py"
        for module in report_modules
        for line in module.read_text(encoding="utf-8").splitlines()
        if line.startswith("from llm_council.stats.")
    }
    offenders = [
        name
        for name in sorted(stats_used - _NOT_OURS)
        if _imports_scipy_stats_at_module_level(SOURCE / name)
    ] + [
        module.relative_to(SOURCE).as_posix()
        for module in report_modules
        if _imports_scipy_stats_at_module_level(module)
    ]
    assert offenders == []
    assert stats_used - _NOT_OURS  # the scan found the stats modules the report uses
