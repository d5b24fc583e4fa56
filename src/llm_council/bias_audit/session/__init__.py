"""The per-session audit: one finished session's score table, statistics, thresholds and result.

Run after each session by :mod:`llm_council.bias_audit.middleware` (the plug-in point); its
records go to :mod:`llm_council.bias_audit.records`.
"""
