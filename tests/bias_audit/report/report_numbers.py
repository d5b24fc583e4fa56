"""Compare two JSON reports number by number (engines and formats must agree to 1e-9)."""

from __future__ import annotations

import math
from typing import Any

# Not estimates: when the report was made, where from, and the scatter plot's display
# sample (a reservoir sample of rows, which depends on the engine's row order). Nor the
# anytime monitor's section: it reads the store itself (its sealed state, or the records
# of a JSONL or PostgreSQL store), not the report's tables, so it differs by store kind by
# design (a Parquet directory answers "unavailable"); tests/bias_audit/report/
# analyses/test_monitor_section.py checks it against the monitor of the same store.
IGNORED_KEYS = frozenset({"generated_at", "store", "sample_words", "sample_scores", "monitor"})


def assert_same_numbers(left: Any, right: Any, path: str = "report") -> int:
    """Assert equal structure, equal strings and numbers within 1e-9; returns numbers compared."""
    if isinstance(left, dict):
        assert isinstance(right, dict) and left.keys() == right.keys(), path
        return sum(
            assert_same_numbers(left[key], right[key], f"{path}.{key}")
            for key in left
            if key not in IGNORED_KEYS
        )
    if isinstance(left, list):
        assert isinstance(right, list) and len(left) == len(right), path
        return sum(
            assert_same_numbers(a, b, f"{path}[{index}]")
            for index, (a, b) in enumerate(zip(left, right, strict=True))
        )
    if isinstance(left, float) or isinstance(right, float):
        assert isinstance(left, int | float) and isinstance(right, int | float), path
        assert math.isclose(left, right, rel_tol=0.0, abs_tol=1e-9), (path, left, right)
        return 1
    assert left == right, (path, left, right)
    return 1 if isinstance(left, int) and not isinstance(left, bool) else 0
