"""Pairs files for calibration tests: simulated answers whose latent quality is known."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

WORDS = ("measure", "compare", "document", "test", "review", "simplify", "automate", "explain")


def simulated_text(rng: np.random.Generator, author: str, quality: float, words: int) -> str:
    body = " ".join(WORDS[int(i)] for i in rng.integers(len(WORDS), size=words))
    return f"{body}.\n\n[simulated author={author}:{int(rng.integers(1 << 31)):08x} quality={quality:.3f}]"


def simulated_pair_records(
    n: int,
    *,
    seed: int = 0,
    model_a: str = "alpha",
    model_b: str = "beta",
    human: str = "truth",
    words: tuple[int, int] = (60, 400),
) -> list[dict[str, Any]]:
    """``n`` pairs; ``human="truth"`` labels the higher latent quality, ``"random"`` flips coins."""
    rng = np.random.default_rng(seed)
    records = []
    for index in range(n):
        quality_a, quality_b = 6.5 + 1.5 * rng.standard_normal(2)
        record: dict[str, Any] = {
            "id": f"pair-{index}",
            "prompt": f"Question {index}: how should I plan the work?",
            "response_a": simulated_text(rng, model_a, quality_a, int(rng.integers(*words))),
            "response_b": simulated_text(rng, model_b, quality_b, int(rng.integers(*words))),
            "metadata": {"model_a": model_a, "model_b": model_b},
        }
        if human == "truth":
            record["human_label"] = "a" if quality_a > quality_b else "b"
        elif human == "random":
            record["human_label"] = str(rng.choice(["a", "b"]))
        records.append(record)
    return records


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture
def pairs_file(tmp_path: Path) -> Callable[..., Path]:
    """``pairs_file(n, **kwargs)`` writes simulated pairs and returns the path."""

    def make(n: int = 30, name: str = "pairs.jsonl", **kwargs: Any) -> Path:
        return write_jsonl(tmp_path / name, simulated_pair_records(n, **kwargs))

    return make
