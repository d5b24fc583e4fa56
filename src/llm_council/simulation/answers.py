"""Synthetic answers whose length and latent quality are drawn independently.

The text is filler about the query; what matters is its length and the footer
``[simulated author=TAG quality=Q]``, which simulated judges read the way a real model
perceives quality and recognises its own style.
"""

from __future__ import annotations

import hashlib
import math
import re

import numpy as np

from llm_council.simulation.profile import SimulatedProfile

_FOOTER = re.compile(r"\[simulated author=(?P<author>\S+) quality=(?P<quality>-?\d+(?:\.\d+)?)\]")

_SENTENCES = (
    "Start by measuring {topic} so that every later change can be judged against a baseline.",
    "The most common mistake with {topic} is optimising before the bottleneck is known.",
    "A small, reversible experiment tells you more about {topic} than a long debate.",
    "Write down the trade-offs, because {topic} rarely has a single right answer.",
    "Automate the checks around {topic} so regressions are caught early.",
    "Consider the failure modes first; {topic} tends to break at the edges.",
    "Document what you learn about {topic} so the next person starts further ahead.",
    "Prefer simple mechanisms for {topic} until the data show they are not enough.",
    "Look at the distribution, not just the average, when reasoning about {topic}.",
    "Ask who is affected by {topic} and how they will notice a change.",
    "Budget time to revisit {topic} after the first results are in.",
    "Compare at least two approaches to {topic} before committing to one.",
)

_STOPWORDS = {
    "how",
    "do",
    "i",
    "a",
    "the",
    "to",
    "in",
    "of",
    "what",
    "is",
    "are",
    "can",
    "my",
    "for",
    "and",
    "an",
    "why",
}


def topic_of(query: str) -> str:
    words = [w for w in re.findall(r"[A-Za-z][A-Za-z-]+", query.lower()) if w not in _STOPWORDS]
    return " ".join(words[-4:]) or "the question"


def sentence_weights(author_tag: str, strength: float) -> np.ndarray | None:
    """The author's preference over :data:`_SENTENCES`: ``exp(strength * z)`` normalised,
    ``z`` standard normal fixed by the member name (the tag before ``:``); None at 0.

    A fixed preference per member gives each member a lexical style of its own, so the
    similarity of two answers depends on who wrote them (style mimicry needs that).
    """
    if strength <= 0:
        return None
    member = author_tag.partition(":")[0]
    seed = int.from_bytes(hashlib.sha256(member.encode()).digest()[:8], "big")
    preference = np.exp(strength * np.random.default_rng(seed).standard_normal(len(_SENTENCES)))
    return np.asarray(preference / preference.sum())


def draw_answer(
    query: str, profile: SimulatedProfile, author_tag: str, rng: np.random.Generator
) -> str:
    """One synthetic answer: length ~ lognormal, quality ~ normal, independent of each other.

    Sentences are drawn uniformly, or with the author's :func:`sentence_weights` when the
    profile's ``answer_style`` is above 0 (the default draws exactly as before it existed).
    """
    target_words = max(
        20,
        round(
            math.exp(
                math.log(profile.answer_mean_words)
                + profile.answer_length_sigma * rng.standard_normal()
            )
        ),
    )
    quality = profile.quality_mean + profile.quality_sd * rng.standard_normal()
    topic = topic_of(query)
    weights = sentence_weights(author_tag, profile.answer_style)
    sentences: list[str] = []
    words = 0
    while words < target_words:
        pick = (
            int(rng.integers(len(_SENTENCES)))
            if weights is None
            else int(rng.choice(len(_SENTENCES), p=weights))
        )
        sentence = _SENTENCES[pick].format(topic=topic)
        sentences.append(sentence)
        words += len(sentence.split())
    return " ".join(sentences) + f"\n\n[simulated author={author_tag} quality={quality:.3f}]"


def without_footer(text: str) -> str:
    """``text`` without its last ``[simulated author=... quality=...]`` footer: what a person
    reading the answer is shown (issue 37 C.5); the judges and the records keep it."""
    matches = list(_FOOTER.finditer(text))
    if not matches:
        return text
    last = matches[-1]
    return (text[: last.start()] + text[last.end() :]).rstrip()


def read_footer(text: str) -> tuple[str | None, float | None]:
    """``(author_tag, quality)`` from an answer's footer, or ``(None, None)``."""
    matches = list(_FOOTER.finditer(text))
    if not matches:
        return None, None
    match = matches[-1]  # the genuine footer is the last line
    return match.group("author"), float(match.group("quality"))
