"""Null rate and power of the CALM and injection probe flags on simulated judges (slow).

Run: ``CALM_REPLICATES=200 pytest tests/calibration/test_calm_probes_slow.py -m slow -s``
(defaults to 40 replicates). Each replicate draws 40 (``CALM_PAIRS``) fresh simulated pairs and judges
every probe with :class:`~.calm_probe_harness.IndependentNoise` (fresh noise per prompt,
the realistic null; see the harness). Rows:

- ``unbiased``: noise_sd 1.0, no susceptibility (the null);
- ``primacy``: position effect +1.0 on the first slot, noise_sd 0.8, no susceptibility
  (a null with another bias present);
- ``susceptible d``: ``unbiased`` plus ``d`` points of susceptibility to every cue.

The flag's nominal rate is 5% (two-sided sign test at 0.05) and at most 2.5% for the
one-sided flags; the null assertion allows the Monte Carlo error (two binomial SEs).
"""

from __future__ import annotations

import math
import os

import pytest

from llm_council.calibration.calm_probes import CALM_PROBE_NAMES

from .calm_probe_harness import probe_summaries

REPLICATES = int(os.environ.get("CALM_REPLICATES", "40"))
#: a subset of the probes, e.g. CALM_PROBES=injection
PROBES = tuple(os.environ.get("CALM_PROBES", ",".join(CALM_PROBE_NAMES)).split(","))
PAIRS = int(os.environ.get("CALM_PAIRS", "40"))

ROWS = {
    "unbiased": ("unbiased", {}),
    "primacy": ("primacy", {}),
    "susceptible 0.5": (
        "unbiased",
        dict.fromkeys(
            (
                "bandwagon",
                "sentiment",
                "compassion",
                "fallacy_oversight",
                "refinement",
                "injection",
            ),
            0.5,
        ),
    ),
    "susceptible 1.0": (
        "unbiased",
        dict.fromkeys(
            (
                "bandwagon",
                "sentiment",
                "compassion",
                "fallacy_oversight",
                "refinement",
                "injection",
            ),
            1.0,
        ),
    ),
}


def flag_rates(profile: str, options: dict[str, float]) -> dict[str, float]:
    fired = dict.fromkeys(PROBES, 0)
    for replicate in range(REPLICATES):
        summaries = probe_summaries(
            options,
            n_pairs=PAIRS,
            seed=10_000 + replicate,
            probes=PROBES,
            profile=profile,
        )
        for probe, summary in summaries.items():
            fired[probe] += summary["failed"]
    return {probe: count / REPLICATES for probe, count in fired.items()}


@pytest.mark.slow
def test_null_rate_and_power_of_the_probe_flags() -> None:
    print(f"\n{REPLICATES} replicates of {PAIRS} pairs")
    print("| judge | " + " | ".join(PROBES) + " |")
    print("|---|" + "---|" * len(PROBES))
    table = {}
    for row, spec in ROWS.items():
        rates = table[row] = flag_rates(*spec)
        line = " | ".join(f"{rates[p]:.3f}" for p in PROBES)
        print(f"| {row} | {line} |", flush=True)
    slack = 2 * math.sqrt(0.05 * 0.95 / REPLICATES)
    for row in ("unbiased", "primacy"):
        for probe, rate in table[row].items():
            assert rate <= 0.05 + slack, (row, probe, rate)
    # power grows with the susceptibility and is well above the null at 1 point; measured
    # at 100 replicates of 40 pairs: 0.70-0.74 for the cues on a hashed side, 0.45 for
    # fallacy, 0.56 for injection (both target the weaker answer; docs/calibration.md)
    for probe in PROBES:
        assert table["susceptible 1.0"][probe] >= max(0.3, table["susceptible 0.5"][probe])
        assert table["susceptible 0.5"][probe] >= table["unbiased"][probe]
