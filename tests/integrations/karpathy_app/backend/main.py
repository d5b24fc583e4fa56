"""The app's FastAPI server: the blocking ``/message`` and the streaming ``/message/stream``.

The streaming endpoint (the one the app's web frontend calls) runs the stages itself and
never calls ``run_full_council``.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, HTTPException
from fastapi.responses import StreamingResponse
from pydantic import BaseModel

from . import storage
from .council import (
    calculate_aggregate_rankings,
    generate_conversation_title,
    run_full_council,
    stage1_collect_responses,
    stage2_collect_rankings,
    stage3_synthesize_final,
)

app = FastAPI(title="karpathy-shaped council")


class SendMessageRequest(BaseModel):
    content: str


def _event(kind: str, **fields: Any) -> str:
    return f"data: {json.dumps({'type': kind, **fields})}\n\n"


@app.post("/api/conversations")
async def create_conversation() -> dict[str, Any]:
    return storage.create_conversation(str(uuid.uuid4()))


@app.get("/api/conversations/{conversation_id}")
async def get_conversation(conversation_id: str) -> dict[str, Any]:
    conversation = storage.get_conversation(conversation_id)
    if conversation is None:
        raise HTTPException(status_code=404, detail="Conversation not found")
    return conversation


@app.post("/api/conversations/{conversation_id}/message")
async def send_message(conversation_id: str, request: SendMessageRequest) -> dict[str, Any]:
    conversation = storage.get_conversation(conversation_id)
    if conversation is None:
        raise HTTPException(status_code=404, detail="Conversation not found")
    first = not conversation["messages"]
    storage.add_user_message(conversation_id, request.content)
    if first:
        storage.update_conversation_title(
            conversation_id, await generate_conversation_title(request.content)
        )
    stage1, stage2, stage3, metadata = await run_full_council(request.content)
    storage.add_assistant_message(conversation_id, stage1, stage2, stage3)
    return {"stage1": stage1, "stage2": stage2, "stage3": stage3, "metadata": metadata}


@app.post("/api/conversations/{conversation_id}/message/stream")
async def send_message_stream(conversation_id: str, request: SendMessageRequest) -> Any:
    conversation = storage.get_conversation(conversation_id)
    if conversation is None:
        raise HTTPException(status_code=404, detail="Conversation not found")

    async def events() -> AsyncIterator[str]:
        try:
            storage.add_user_message(conversation_id, request.content)
            yield _event("stage1_start")
            stage1 = await stage1_collect_responses(request.content)
            yield _event("stage1_complete", data=stage1)
            yield _event("stage2_start")
            stage2, label_to_model = await stage2_collect_rankings(request.content, stage1)
            aggregate = calculate_aggregate_rankings(stage2, label_to_model)
            yield _event(
                "stage2_complete",
                data=stage2,
                metadata={"label_to_model": label_to_model, "aggregate_rankings": aggregate},
            )
            yield _event("stage3_start")
            stage3 = await stage3_synthesize_final(request.content, stage1, stage2)
            yield _event("stage3_complete", data=stage3)
            storage.add_assistant_message(conversation_id, stage1, stage2, stage3)
            yield _event("complete")
        except Exception as error:
            yield _event("error", message=str(error))

    return StreamingResponse(events(), media_type="text/event-stream")
