"""Import speed (``pytest -m benchmark tests/calibration/importers -s``): 10k FastChat rows.

MT-bench's released GPT-4 pairwise file holds a few thousand rows; 10k rows (several
judges, both turns) is a generous size for one file.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from llm_council.calibration.importers import import_file, records_to_pairs

MODELS = [f"model-{index:02d}" for index in range(8)]


@pytest.mark.benchmark
def test_fastchat_import_throughput(tmp_path: Path) -> None:
    path = tmp_path / "gpt-4_pair.jsonl"
    rows = []
    winners = ["model_1", "model_2", "tie", "error"]
    for judge in ("gpt-4", "claude-v1"):
        for question in range(80, 80 + 357):
            for turn in (1, 2):
                for first, second in ((0, 1), (2, 3), (4, 5), (6, 7), (1, 6), (3, 4), (0, 7)):
                    index = question * 7 + first
                    rows.append(
                        {
                            "question_id": question,
                            "model_1": MODELS[first],
                            "model_2": MODELS[second],
                            "g1_winner": winners[index % 4],
                            "g2_winner": winners[(index // 4) % 4],
                            "judge": [judge, "pair-v2" if turn == 1 else "pair-v2-multi-turn"],
                            "turn": turn,
                            "g1_judgment": "x" * 400,
                        }
                    )
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    started = time.perf_counter()
    result = import_file(path, "fastchat-pair")
    pairs = records_to_pairs(result, str(path))
    elapsed = time.perf_counter() - started
    print(f"import of {len(rows)} FastChat rows -> {len(pairs)} pairs: {elapsed:.2f} s")
    assert len(pairs) == len(rows) == 9996
    assert elapsed < 30.0
