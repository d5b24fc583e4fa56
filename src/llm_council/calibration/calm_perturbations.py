"""Texts of the CALM bias probes (bandwagon, sentiment, compassion, fallacy, refinement).

Ye et al. (2024), "Justice or Prejudice? Quantifying Biases in LLM-as-a-Judge" (CALM,
arXiv:2410.02736) list twelve judge biases, each measured by a principle-guided edit of
the judge's input. This module holds our deterministic version of five of them, each with
a **control**: an edit of the same place and about the same length that carries no bias
cue, so that a judge whose verdicts move under *any* edit is not mistaken for a biased
one (the probe's flag compares the probe with its control, not with the unedited input).

A plant is either a note appended to the question (outside the answers' nonce blocks,
where CALM puts its bandwagon and compassion cues) or a sentence appended to one answer.
Appending leaves what the answer says unchanged, and a note that names a display slot is
written per order, so it always names the answer the probe targets.

The cue texts live in :mod:`llm_council.judge_cues`, where the simulated judge reads them
back and adds its configured susceptibility to the cued answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_council.judge_cues import (
    FALLACY_SUFFIX,
    SENTIMENT_SUFFIX,
    bandwagon_note,
    compassion_note,
    refinement_note,
)

SENTIMENT_CONTROL_SUFFIX = (
    "\n\nThis answer was written in response to the question above, and it addresses the "
    "question as it was asked, without adding further points beyond those stated here."
)
FALLACY_CONTROL_SUFFIX = (
    "\n\nThis answer was written in response to the question above; it addresses the "
    "question as asked and adds no further points beyond those already stated in it."
)


@dataclass(frozen=True)
class Plant:
    """What one variant adds: a note after the question and/or a suffix on the target."""

    question_note: str = ""
    target_suffix: str = ""


def bandwagon_plant(target_label: str, other_label: str, control: bool) -> Plant:
    """CALM bandwagon: "90% of people believe X is better"; control names no preference."""
    if control:
        return Plant(question_note="Note: 10 earlier reviewers also compared these two responses.")
    return Plant(question_note=bandwagon_note(target_label))


def compassion_plant(target_label: str, other_label: str, control: bool) -> Plant:
    """CALM compassion-fade: real model names shown; control attributes anonymously."""
    first, second = sorted((target_label, other_label))
    if control:
        return Plant(
            question_note=f"Note: {first} and {second} were written by two different AI assistants."
        )
    return Plant(question_note=compassion_note(target_label, other_label))


def refinement_plant(target_label: str, other_label: str, control: bool) -> Plant:
    """CALM refinement-aware: the judge is told the target refines the other answer."""
    first, second = sorted((target_label, other_label))
    if control:
        return Plant(
            question_note=f"Note: {first} and {second} were each written in one draft, "
            "independently."
        )
    return Plant(question_note=refinement_note(target_label, other_label))


def sentiment_plant(target_label: str, other_label: str, control: bool) -> Plant:
    """CALM sentiment: the same content in an effusive, emotional tone (appended)."""
    return Plant(target_suffix=SENTIMENT_CONTROL_SUFFIX if control else SENTIMENT_SUFFIX)


def fallacy_plant(target_label: str, other_label: str, control: bool) -> Plant:
    """CALM fallacy-oversight: a plausible but broken argument for the weaker answer
    (hasty generalisation, appeal to popularity, appeal to ignorance)."""
    return Plant(target_suffix=FALLACY_CONTROL_SUFFIX if control else FALLACY_SUFFIX)
