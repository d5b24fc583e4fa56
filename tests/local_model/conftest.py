"""The real local models (ADRs 0041, 0065): skipped without the ``local`` extra, required in CI.

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
    ready_timeout_s,
    require_server_package,
    shared_server,
    stop_shared_servers,
)

REQUIRE_ENV = "LLM_COUNCIL_REQUIRE_LOCAL_MODEL"
MODEL_NAME = "smollm2-135m"
#: the shipped local council's two model families (ADR 0065)
COUNCIL_MODELS = ("smollm2-135m", "gemma3-270m")
#: how long the fixture waits for each llama.cpp server to answer
SERVER_READY_S = 600.0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "local_model" in str(item.path):
            item.add_marker(pytest.mark.local_model)


@pytest.fixture(scope="session")
def local_servers() -> Iterator[dict[str, LocalServer]]:
    """The process's llama.cpp servers for the council's two model families, started once
    for every test here (Gemma's chunks are joined on the first run on a machine)."""
    try:
        require_server_package()
        servers = {name: shared_server(LOCAL_MODELS[name]) for name in COUNCIL_MODELS}
    except MissingDependencyError as missing:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"the local models are required here ({REQUIRE_ENV}=1) but: {missing}")
        pytest.skip(f"the local extra is not installed: {missing}")
    for server in servers.values():
        # the product's 60 s default is for a person waiting; here the wait only catches a
        # hang (two models loading while the rest of the suite runs on 2 cores)
        server.ensure_running(timeout_s=max(ready_timeout_s(), SERVER_READY_S))
    yield servers
    stop_shared_servers()


@pytest.fixture(scope="session")
def local_server(local_servers: dict[str, LocalServer]) -> LocalServer:
    """The SmolLM2-135M server (the pairwise judge of calibrate and probe)."""
    return local_servers[MODEL_NAME]
