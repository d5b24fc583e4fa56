"""``llm-council bias-compact``: placeholder replaced below."""
