"""Placeholder: replaced by the module that owns this command."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    return None
