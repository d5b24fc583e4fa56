"""Cross-session bias analysis of the audit store: ``llm-council bias-report``.

Single sessions are indicators; this package pools every audited session. Records are read
and aggregated by DuckDB (:mod:`.loading`, :mod:`.tables`); numpy/scipy take over on the
aggregated arrays (:mod:`llm_council.stats`). :func:`build_report` returns a
:class:`BiasReport`, which the renderers turn into text, JSON, CSV or one HTML file.
"""

from __future__ import annotations

from llm_council.bias_audit.report.build import build_report
from llm_council.bias_audit.report.finding import ERROR_RATES, Finding
from llm_council.bias_audit.report.model import BiasReport, reliability_tier
from llm_council.bias_audit.report.render.render_html import render_html
from llm_council.bias_audit.report.render.render_tables import render_csv, render_json
from llm_council.bias_audit.report.render.render_text import render_text

RENDERERS = {"text": render_text, "json": render_json, "csv": render_csv, "html": render_html}

__all__ = [
    "ERROR_RATES",
    "RENDERERS",
    "BiasReport",
    "Finding",
    "build_report",
    "reliability_tier",
    "render_csv",
    "render_html",
    "render_json",
    "render_text",
]
