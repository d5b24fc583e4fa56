"""Loading: a store (JSONL snapshot, Parquet, PostgreSQL, Spark) into the report's DuckDB tables.

Also the Parquet compaction (``bias-compact``), which reads through the same typed table.
"""
