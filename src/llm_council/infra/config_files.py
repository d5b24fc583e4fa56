"""Where the embedded default configuration lives: ``config/`` of the repository, in the package.

Below the config loader and everything that reads a packaged TOML file (the simulated
members, the audit thresholds), so none of them imports the config loader for a path.
"""

from __future__ import annotations

from importlib import resources


def default_config_file(name: str) -> resources.abc.Traversable:
    """A file of the embedded default configuration (``config/`` in the repository)."""
    return resources.files("llm_council").joinpath("default_config", name)
