"""The ``llm-council`` command line."""
