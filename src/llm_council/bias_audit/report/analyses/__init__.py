"""Analyses: one estimator family a module, from the shared DuckDB tables to frozen results.

Nothing here renders; the renderers read the results from :mod:`..model` and :mod:`..estimates`.
"""
