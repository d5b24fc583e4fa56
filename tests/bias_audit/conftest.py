"""The audit's tests never see the developer's threshold overrides."""

from __future__ import annotations

import pytest

from llm_council.bias_audit.thresholds import ENV_VARIABLES


@pytest.fixture(autouse=True)
def _default_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    for variable in ENV_VARIABLES.values():
        monkeypatch.delenv(variable, raising=False)
