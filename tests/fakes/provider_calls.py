"""Drive one provider call synchronously from a test, closing the SDK client after it."""

from __future__ import annotations

import asyncio

from llm_council.providers.base import Completion, CompletionRequest, Provider


def complete_once(provider: Provider, request: CompletionRequest) -> Completion:
    async def run() -> Completion:
        try:
            return await provider.complete(request)
        finally:
            await provider.aclose()

    return asyncio.run(run())
