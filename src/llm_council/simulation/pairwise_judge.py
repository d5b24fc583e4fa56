"""A simulated pairwise judge: picks the better of two answers with its profile's biases.

Each of the two answers gets the same score model as a simulated reviewer
(:func:`llm_council.simulation.reviewer.expected_score`): latent quality (from the answer's
``[simulated ... quality=Q]`` footer, or a fixed pseudo-quality from a hash of its
opening words) + ``position_effects[slot]`` (slot 0 = shown first) + ``verbosity *
log(words / 200)`` + ``self_preference`` for its own answer + ``noise_sd * N(0, 1)``,
clipped to 1-10 and rounded to ``score_decimals``. The higher score wins; equal rounded
scores are a tie. The reply ends with the verdict line the calibration prompt asks for.

Cue susceptibility (the CALM and injection probes, :mod:`llm_council.calibration.calm_probes`):
a note on the question that names a slot (bandwagon, compassion, refinement) adds the
profile's ``bandwagon`` / ``compassion`` / ``refinement`` points to that slot; an answer
carrying the sentiment sentence, the fallacious argument or any injection payload gets
``sentiment`` / ``fallacy_oversight`` / ``injection`` points. All zero by default, and
then nothing is looked for, so an unset profile replies exactly as before.

"Own answer": the footer's author tag names the judge (``narcissist:1a2b...`` for judge
``narcissist``), or the text carries the judge's identity signature (what the identity
probe plants), the simulated counterpart of a model recognising its own style or name.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
from scipy import stats as scipy_stats

from llm_council.judge_cues import answer_cues, injection_styles_in, question_cue_slots
from llm_council.pairwise_format import (
    FIRST_LABEL,
    SECOND_LABEL,
    format_verdict,
    identity_signature,
)
from llm_council.prompts import extract_candidate_blocks
from llm_council.providers.base import CompletionRequest
from llm_council.simulation.answers import read_footer
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.reviewer import PerceivedCandidate, expected_score

_SCALE = (1.0, 10.0)
#: how many opening words identify a footer-less text; perturbations that append text
#: (padding, citations, a signature) keep the judge's perception of its quality
_IDENTITY_WORDS = 50


def hashed_quality(text: str, profile: SimulatedProfile) -> float:
    """Pseudo-quality ~ N(quality_mean, quality_sd) fixed by the text's first 50 words,
    ignoring case, punctuation and markdown (so reformatting does not change it)."""
    words = re.findall(r"[a-z0-9]+", text.lower())[:_IDENTITY_WORDS]
    digest = hashlib.sha256(" ".join(words).encode()).digest()
    uniform = (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64
    return profile.quality_mean + profile.quality_sd * float(scipy_stats.norm.ppf(uniform))


def _is_own(text: str, author: str | None, judge_name: str | None) -> bool:
    if not judge_name:
        return False
    if author is not None and author.split(":", 1)[0] == judge_name:
        return True
    return identity_signature(judge_name) in text


def _perceive(
    label: str, slot: int, text: str, profile: SimulatedProfile, judge_name: str | None
) -> PerceivedCandidate:
    author, quality = read_footer(text)
    return PerceivedCandidate(
        label=label,
        display_index=slot,
        words=max(1, len(text.split())),
        quality=quality if quality is not None else hashed_quality(text, profile),
        is_own=_is_own(text, author, judge_name),
    )


_ANSWER_CUE_FIELDS = {"sentiment": "sentiment", "fallacy": "fallacy_oversight"}


def cue_points(profile: SimulatedProfile, prompt: str, blocks: dict[str, str]) -> dict[str, float]:
    """Points per shown label from the probe cues this judge is susceptible to."""
    points = dict.fromkeys(blocks, 0.0)
    outside = prompt
    for text in blocks.values():
        outside = outside.replace(text, "")
    for probe, label in question_cue_slots(outside).items():
        if label in points:
            points[label] += float(getattr(profile, probe))
    for label, text in blocks.items():
        for probe in answer_cues(text):
            points[label] += float(getattr(profile, _ANSWER_CUE_FIELDS[probe]))
        if injection_styles_in(text):
            points[label] += profile.injection
    return points


def judge_pair(
    profile: SimulatedProfile,
    request: CompletionRequest,
    rng: np.random.Generator,
    *,
    judge_name: str | None = None,
) -> str:
    """The judge's reply to a pairwise prompt: one sentence of reasoning and a verdict line."""
    blocks = {label: text for label, text in extract_candidate_blocks(request.prompt_text)}
    if FIRST_LABEL not in blocks or SECOND_LABEL not in blocks:
        return "I could not find two answers to compare.\nVerdict: tie"
    cues = cue_points(profile, request.prompt_text, blocks) if profile.probe_susceptible else None
    scores = []
    for slot, label in enumerate((FIRST_LABEL, SECOND_LABEL)):
        candidate = _perceive(label, slot, blocks[label], profile, judge_name)
        expected = expected_score(profile, candidate)
        if cues is not None:
            expected += cues[label]
        raw = expected + profile.noise_sd * float(rng.standard_normal())
        scores.append(round(min(max(raw, _SCALE[0]), _SCALE[1]), profile.score_decimals))
    if scores[0] > scores[1]:
        slot_verdict, reason = "first", f"{FIRST_LABEL} is more correct and complete"
    elif scores[1] > scores[0]:
        slot_verdict, reason = "second", f"{SECOND_LABEL} is more correct and complete"
    else:
        slot_verdict, reason = "tie", "Both answers are of the same substance"
    return f"{reason} ({scores[0]:g} vs {scores[1]:g}).\n{format_verdict(slot_verdict)}"  # type: ignore[arg-type]
