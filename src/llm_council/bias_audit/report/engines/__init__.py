"""Engines other than DuckDB that can scan the store for the report (ADR 0010, ADR 0021)."""
