"""The real local model (ADR 0041): skipped without the ``local`` extra, required in CI.

.ci/run installs the extra and sets ``LLM_COUNCIL_REQUIRE_LOCAL_MODEL=1``, so these tests
can never pass CI by being skipped (the pattern of ``LLM_COUNCIL_REQUIRE_BROWSER``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from llm_council.errors import MissingDependencyError
from llm_council.providers.local_server import (
    LOCAL_MODELS,
    LocalServer,
    require_server_package,
    shared_server,
    stop_shared_servers,
)

REQUIRE_ENV = "LLM_COUNCIL_REQUIRE_LOCAL_MODEL"
MODEL_NAME = "smollm2-135m"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "local_model" in str(item.path):
            item.add_marker(pytest.mark.local_model)


@pytest.fixture(scope="session")
def local_server() -> Iterator[LocalServer]:
    """The process's llama.cpp server for SmolLM2-135M, started once for every test here."""
    try:
        require_server_package()
        server = shared_server(LOCAL_MODELS[MODEL_NAME])
    except MissingDependencyError as missing:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"the local model is required here ({REQUIRE_ENV}=1) but: {missing}")
        pytest.skip(f"the local extra is not installed: {missing}")
    server.ensure_running()
    yield server
    stop_shared_servers()
