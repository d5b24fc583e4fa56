"""A simulated judge scoring one answer of a canary set (calibration/canary.py).

score = pseudo-quality of the text (:func:`~llm_council.simulation.pairwise_judge.hashed_quality`:
fixed by its opening words) + ``leniency`` + ``noise_sd`` x N(0, 1), clipped to 1-10 and
rounded to ``score_decimals``. A model update is simulated by changing ``leniency`` (every
answer moves alike) between two runs; the hash keeps each answer's quality the same.
"""

from __future__ import annotations

import numpy as np

from llm_council.prompts import extract_candidate_blocks
from llm_council.simulation.pairwise_judge import hashed_quality
from llm_council.simulation.profile import SimulatedProfile


def score_canary_item(prompt: str, profile: SimulatedProfile, rng: np.random.Generator) -> str:
    """The reply to a canary prompt: a sentence and the ``SCORE: n`` line."""
    blocks = extract_candidate_blocks(prompt)
    text = blocks[0][1] if blocks else prompt
    raw = hashed_quality(text, profile) + profile.leniency + profile.noise_sd * rng.normal()
    score = round(float(np.clip(raw, 1.0, 10.0)), profile.score_decimals)
    shown = int(score) if profile.score_decimals == 0 else score
    return f"The response is graded on its content.\nSCORE: {shown}"
