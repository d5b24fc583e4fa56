"""The favouritism matrix on the default simulated council: length taste is not favouritism.

The default ``verbose`` member likes long answers and writes them; before the matrix was
length-controlled its self cell read +0.84 points (Holm p < 1e-4) while the joint model's
self-preference term, which has a reviewer x ln(words) slope, read about zero.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from llm_council.bias_audit.report.analyses import favouritism_summary as favouritism_module
from llm_council.bias_audit.report.analyses.families import BiasFamilies
from llm_council.bias_audit.report.analyses.favouritism import (
    Favouritism,
    FavouritismCell,
    favouritism,
)
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables
from llm_council.bias_audit.report.render.render_families import (
    families_html_sections,
    families_text_lines,
)
from llm_council.simulation.simulated_records import load_simulated_profiles, write_record_store


def _matrix(path: Path) -> Favouritism:
    store = load_store(path)
    try:
        create_analysis_tables(store.connection)
        found = favouritism(store.connection)
    finally:
        store.connection.close()
    assert found is not None
    return found


def _cell(matrix: Favouritism, reviewer: str, model: str) -> FavouritismCell:
    return next(c for c in matrix.cells if (c.reviewer, c.model) == (reviewer, model))


def test_default_council_flags_the_narcissist_not_the_verbose_judge(tmp_path: Path) -> None:
    members = load_simulated_profiles()
    assert {"verbose", "narcissist"} <= {name for name, _ in members}
    path = tmp_path / "default.jsonl"
    write_record_store(path, members, 250, seed=21)
    matrix = _matrix(path)
    assert matrix.length_controlled
    verbose = _cell(matrix, "verbose", "verbose")
    assert verbose.is_self and not verbose.flagged
    assert verbose.effect.ci_low < 0.0 < verbose.effect.ci_high
    narcissist = _cell(matrix, "narcissist", "narcissist")
    assert narcissist.is_self and narcissist.flagged
    assert narcissist.effect.ci_low < 1.5 < narcissist.effect.ci_high  # its self_preference
    assert not any(c.flagged and not c.spillover for c in matrix.cells if c is not narcissist)


def test_a_planted_favour_for_the_verbose_model_is_still_flagged(tmp_path: Path) -> None:
    members = dict(load_simulated_profiles())
    members["balanced"] = members["balanced"].model_copy(update={"favours": {"verbose": 1.0}})
    path = tmp_path / "favour.jsonl"
    write_record_store(path, list(members.items()), 250, seed=22)
    cell = _cell(_matrix(path), "balanced", "verbose")
    assert cell.flagged and not cell.spillover
    assert cell.effect.ci_low < 1.0 < cell.effect.ci_high


def test_past_the_size_cap_the_matrix_says_it_is_not_length_controlled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "capped.jsonl"
    write_record_store(path, load_simulated_profiles(), 120, seed=23)
    controlled = BiasFamilies(favouritism=_matrix(path))
    assert "length-controlled" in "\n".join(families_text_lines(controlled))
    assert "length-controlled" in "\n".join(families_html_sections(controlled))
    monkeypatch.setattr(favouritism_module, "LENGTH_CONTROL_MAX_FLOATS", 10)
    matrix = _matrix(path)
    assert not matrix.length_controlled
    families = BiasFamilies(favouritism=matrix)
    assert "length-controlled" not in "\n".join(families_text_lines(families))
    assert "length-controlled" not in "\n".join(families_html_sections(families))
