"""Which pairs get the bias-probe checklist: ``LLM_COUNCIL_BIAS_CHECK_PROBABILITY`` per pair."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Mapping, Sequence

from llm_council.calibration.pairs import Pair
from llm_council.errors import ConfigError

BIAS_CHECK_ENV = "LLM_COUNCIL_BIAS_CHECK_PROBABILITY"


def bias_check_probability(environ: Mapping[str, str] | None = None) -> float:
    """The probability (0..1) from the environment; unset or empty means 0 (off)."""
    raw = (os.environ if environ is None else environ).get(BIAS_CHECK_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(f"{BIAS_CHECK_ENV} must be a number from 0 to 1, got '{raw}'") from None
    if math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ConfigError(f"{BIAS_CHECK_ENV} must be a number from 0 to 1, got '{raw}'")
    return value


def select_pairs_for_bias_check(pairs: Sequence[Pair], probability: float, seed: int) -> list[Pair]:
    """Each pair independently with ``probability``, decided by a hash of (seed, id).

    Hash-based rather than a shared random stream so that the same pairs are chosen
    again when an interrupted run resumes (and their probe calls come from the cache).
    """
    chosen = []
    for pair in pairs:
        digest = hashlib.sha256(f"{seed}\x00{pair.pair_id}".encode()).digest()
        uniform = int.from_bytes(digest[:8], "big") / 2.0**64
        if uniform < probability:
            chosen.append(pair)
    return chosen
