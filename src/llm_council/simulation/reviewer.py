"""A simulated reviewer: scores exactly as its profile says, and replies in review JSON.

Score model, per candidate shown at display slot ``i`` with ``w`` words::

    score = quality + leniency + position_effects[i] + verbosity * log(w / 200)
            + self_preference * [own answer]
            + self_recognition * [signed with its own model name]
            + style_mimicry * (similarity to its own answer - 1/2) + noise_sd * N(0, 1)

clipped to the declared scale and rounded to ``score_decimals``. With every bias zero the
expected score is the answer's quality, independent of position and length. The
similarity is :func:`~llm_council.text_similarity.ngram_cosine` to the judge's own answer
when that answer is among the candidates (not when the judge is recused from it: then
``style_mimicry`` has nothing to compare with and adds nothing).

Reasoning and parse behaviour (ADR 0027), each drawn only when configured so a profile
without it replies exactly as before: with ``rationale_mean_chars`` the rationale is a
log-normal number of characters long and every score moves ``reasoning_bias`` points per
doubling of it over the median; ``abstention_probability`` returns an empty ranking (a
refusal); ``rank_mismatch_probability`` swaps one adjacent pair of the ranking.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Collection
from dataclasses import dataclass, replace

import numpy as np

from llm_council.bias_checks import IDENTITY_SIGNATURE
from llm_council.prompts import display_index_for, extract_candidate_blocks
from llm_council.ranking_parser import verdict_close_tag, verdict_open_tag
from llm_council.simulation.answers import read_footer
from llm_council.simulation.profile import REFERENCE_ANSWER_WORDS, SimulatedProfile
from llm_council.text_similarity import ngram_cosine

_SCALE = re.compile(
    r"Score every answer from (-?\d+(?:\.\d+)?) \(worst\) to (-?\d+(?:\.\d+)?) \(best\)"
)

_VERDICT_TAG = re.compile(r"<<<VERDICT id=(?P<nonce>[0-9a-f]{8,32})>>>")


@dataclass(frozen=True)
class PerceivedCandidate:
    label: str
    display_index: int
    words: int
    quality: float
    is_own: bool
    carries_signature: bool = False
    similarity_to_own: float | None = None  # filled only for a style-mimicking judge


def latent_quality_from_text(text: str) -> float:
    """For text without a simulated footer: a fixed pseudo-quality ~ N(6.5, 1) from its hash."""
    digest = hashlib.sha256(text.encode()).digest()
    return 6.5 + float(np.random.default_rng(int.from_bytes(digest[:8], "big")).standard_normal())


def perceive(
    prompt: str, own_tags: Collection[str], signature: str | None = None
) -> list[PerceivedCandidate]:
    """The candidates as this judge sees them; ``signature`` is its own model-name line."""
    perceived = []
    for label, text in extract_candidate_blocks(prompt):
        author, quality = read_footer(text)
        perceived.append(
            PerceivedCandidate(
                label=label,
                display_index=display_index_for(label),
                words=max(1, len(text.split())),
                quality=quality if quality is not None else latent_quality_from_text(text),
                is_own=author is not None and author in own_tags,
                carries_signature=signature is not None and signature in text,
            )
        )
    return perceived


def with_similarity_to_own(
    prompt: str, candidates: list[PerceivedCandidate]
) -> list[PerceivedCandidate]:
    """``candidates`` with their lexical similarity to the judge's own answer, when shown."""
    texts = dict(extract_candidate_blocks(prompt))
    own = next((texts[c.label] for c in candidates if c.is_own), None)
    if own is None:
        return candidates
    filled = []
    for candidate in candidates:
        value = ngram_cosine(texts[candidate.label], own)
        filled.append(replace(candidate, similarity_to_own=value if math.isfinite(value) else None))
    return filled


def expected_score(profile: SimulatedProfile, candidate: PerceivedCandidate) -> float:
    """The score before noise, clipping and rounding (the configured bias model)."""
    return (
        candidate.quality
        + profile.leniency
        + profile.position_effect(candidate.display_index)
        + profile.verbosity * math.log(candidate.words / REFERENCE_ANSWER_WORDS)
        + (profile.self_preference if candidate.is_own else 0.0)
        + (profile.self_recognition if candidate.carries_signature else 0.0)
        + (
            profile.style_mimicry * (candidate.similarity_to_own - 0.5)
            if candidate.similarity_to_own is not None and not candidate.is_own
            else 0.0
        )
    )


def score_scale_from_prompt(prompt: str) -> tuple[float, float]:
    match = _SCALE.search(prompt)
    return (float(match.group(1)), float(match.group(2))) if match else (1.0, 10.0)


def write_review(
    prompt: str,
    profile: SimulatedProfile,
    own_tags: Collection[str],
    rng: np.random.Generator,
    structured: bool = False,
    model_name: str | None = None,
) -> str:
    """The reviewer's verdict in the format the prompt asks for.

    ``structured``: the bare JSON object (what a structured-output channel carries);
    otherwise the JSON between the prompt's nonce tags when it asks for them, else fenced.
    ``model_name``: the judge's own model name, whose signature line it recognises.
    """
    low, high = score_scale_from_prompt(prompt)
    signature = IDENTITY_SIGNATURE.format(model=model_name) if model_name else None
    candidates = perceive(prompt, own_tags, signature)
    if profile.abstention_probability and rng.random() < profile.abstention_probability:
        refusal = {"ranking": [], "scores": {}, "rationale": "I decline to judge these answers."}
        return _formatted(json.dumps(refusal), prompt, structured)
    rationale_chars, shift = _rationale_length(profile, rng)
    if profile.style_mimicry:
        candidates = with_similarity_to_own(prompt, candidates)
    raw = {
        c.label: expected_score(profile, c)
        + shift
        + profile.noise_sd * float(rng.standard_normal())
        for c in candidates
    }
    scores = {
        label: round(min(max(value, low), high), profile.score_decimals)
        for label, value in raw.items()
    }
    if profile.score_decimals == 0:
        scores = {label: int(value) for label, value in scores.items()}
    ranking = sorted(raw, key=lambda label: -raw[label])
    if (
        profile.rank_mismatch_probability
        and len(ranking) >= 2
        and rng.random() < profile.rank_mismatch_probability
    ):
        k = int(rng.integers(0, len(ranking) - 1))
        ranking[k], ranking[k + 1] = ranking[k + 1], ranking[k]
    rationale = (
        f"{ranking[0]} is the most complete and correct answer." if ranking else "Nothing to judge."
    )
    if rationale_chars is not None:
        rationale = (rationale + " " + _FILLER * (1 + rationale_chars // len(_FILLER)))[
            :rationale_chars
        ]
    reply = {"ranking": ranking, "scores": scores, "rationale": rationale}
    return _formatted(json.dumps(reply), prompt, structured)


_FILLER = "Each answer was checked step by step against the question. "


def _rationale_length(
    profile: SimulatedProfile, rng: np.random.Generator
) -> tuple[int | None, float]:
    """The rationale's characters and the points it adds to every score (None, 0: off)."""
    if profile.rationale_mean_chars is None:
        return None, 0.0
    log_ratio = profile.rationale_length_sigma * float(rng.standard_normal())
    chars = max(1, round(profile.rationale_mean_chars * math.exp(log_ratio)))
    return chars, profile.reasoning_bias * math.log2(chars / profile.rationale_mean_chars)


def _formatted(verdict: str, prompt: str, structured: bool) -> str:
    """The verdict as the prompt asks: bare, between its nonce tags, or fenced."""
    if structured:
        return verdict
    # the instruction comes after the candidate blocks, which may hold fake tags: take the last
    tags = list(_VERDICT_TAG.finditer(prompt))
    if tags:
        nonce = tags[-1].group("nonce")
        return f"{verdict_open_tag(nonce)}\n{verdict}\n{verdict_close_tag(nonce)}"
    return "```json\n" + verdict + "\n```"
