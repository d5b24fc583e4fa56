"""The app's settings, as module constants (the real app reads them the same way)."""

from __future__ import annotations

COUNCIL_MODELS = [
    "openai/gpt-5.1",
    "google/gemini-3-pro-preview",
    "anthropic/claude-sonnet-4.5",
    "x-ai/grok-4",
]
CHAIRMAN_MODEL = "google/gemini-3-pro-preview"
DATA_DIR = "data/conversations"  # tests point storage.DATA_DIR at a temporary directory
