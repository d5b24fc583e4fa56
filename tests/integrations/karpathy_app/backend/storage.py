"""Conversations as one JSON file each; an assistant message keeps stage 1-3, no metadata."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from typing import Any

from .config import DATA_DIR


def _path(conversation_id: str) -> str:
    return os.path.join(DATA_DIR, f"{conversation_id}.json")


def create_conversation(conversation_id: str) -> dict[str, Any]:
    os.makedirs(DATA_DIR, exist_ok=True)
    conversation = {
        "id": conversation_id,
        "created_at": datetime.now(UTC).isoformat(),
        "title": "New Conversation",
        "messages": [],
    }
    save_conversation(conversation)
    return conversation


def get_conversation(conversation_id: str) -> dict[str, Any] | None:
    if not os.path.exists(_path(conversation_id)):
        return None
    with open(_path(conversation_id), encoding="utf-8") as handle:
        return json.load(handle)


def save_conversation(conversation: dict[str, Any]) -> None:
    os.makedirs(DATA_DIR, exist_ok=True)
    with open(_path(conversation["id"]), "w", encoding="utf-8") as handle:
        json.dump(conversation, handle, indent=2)


def add_user_message(conversation_id: str, content: str) -> None:
    conversation = get_conversation(conversation_id)
    if conversation is None:
        raise ValueError(f"Conversation {conversation_id} not found")
    conversation["messages"].append({"role": "user", "content": content})
    save_conversation(conversation)


def add_assistant_message(
    conversation_id: str,
    stage1: list[dict[str, Any]],
    stage2: list[dict[str, Any]],
    stage3: dict[str, Any],
) -> None:
    conversation = get_conversation(conversation_id)
    if conversation is None:
        raise ValueError(f"Conversation {conversation_id} not found")
    conversation["messages"].append(
        {"role": "assistant", "stage1": stage1, "stage2": stage2, "stage3": stage3}
    )
    save_conversation(conversation)


def update_conversation_title(conversation_id: str, title: str) -> None:
    conversation = get_conversation(conversation_id)
    if conversation is None:
        raise ValueError(f"Conversation {conversation_id} not found")
    conversation["title"] = title
    save_conversation(conversation)
