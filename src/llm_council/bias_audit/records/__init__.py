"""The audit's records at rest: schema, JSONL and PostgreSQL stores, lock, snapshots, import.

Also the query hash and store-URL redaction. Nothing here imports the per-session audit or
the report: both import this layer.
"""
