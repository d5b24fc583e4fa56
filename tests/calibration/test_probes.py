"""Perturbations keep substance, probes summarise robustness against the stated thresholds."""

from __future__ import annotations

import json

import pytest

from llm_council.calibration.bias_check import bias_check_probability, select_pairs_for_bias_check
from llm_council.calibration.pairs import parse_pairs_lines
from llm_council.calibration.perturbations import (
    add_authority,
    add_identity,
    add_markdown,
    add_padding,
    identity_signature,
    strip_markdown,
)
from llm_council.calibration.probes import parse_probe_names
from llm_council.calibration.session import LiveSettings, run_live
from llm_council.errors import ConfigError
from llm_council.simulation.answers import read_footer

from .conftest import simulated_pair_records

TEXT = "First point. Second point!\nThird point?\n\n[simulated author=m:0000abcd quality=7.250]"


def test_markdown_round_trip_keeps_words_and_footer() -> None:
    marked = add_markdown(TEXT)
    assert marked.startswith("**First point.**") and "- Second point!" in marked
    assert read_footer(marked) == ("m:0000abcd", 7.25)
    assert strip_markdown(marked).split() == strip_markdown(TEXT).split()


def test_appending_perturbations_keep_the_original_and_its_footer() -> None:
    for perturbed in (add_authority(TEXT), add_padding(TEXT), add_identity(TEXT, "gpt-4o")):
        assert perturbed.startswith(TEXT)
        assert read_footer(perturbed) == ("m:0000abcd", 7.25)
    assert identity_signature("gpt-4o") in add_identity(TEXT, "gpt-4o")


def test_probe_names_are_validated() -> None:
    assert parse_probe_names("authority, format") == ("authority", "format")
    with pytest.raises(ConfigError, match="unknown probe 'vibes'"):
        parse_probe_names("authority,vibes")


def test_bias_check_probability_environment() -> None:
    assert bias_check_probability({}) == 0.0
    assert bias_check_probability({"LLM_COUNCIL_BIAS_CHECK_PROBABILITY": " 0.25 "}) == 0.25
    for bad in ("2", "-1", "x", "nan"):
        with pytest.raises(ConfigError, match=f"got '{bad}'"):
            bias_check_probability({"LLM_COUNCIL_BIAS_CHECK_PROBABILITY": bad})


def test_bias_check_selection_is_stable_and_proportional() -> None:
    pairs = parse_pairs_lines([json.dumps(r) for r in simulated_pair_records(400, seed=1)], "x")
    chosen = select_pairs_for_bias_check(pairs, 0.25, seed=3)
    assert chosen == select_pairs_for_bias_check(pairs, 0.25, seed=3)  # same pairs again on resume
    # Binomial(400, 0.25): mean 100, sd 8.7; 70..130 is +-3.5 sd
    assert 70 <= len(chosen) <= 130
    assert (
        select_pairs_for_bias_check(pairs, 0.0, 3) == []
        and len(select_pairs_for_bias_check(pairs, 1.0, 3)) == 400
    )


def test_unbiased_judge_passes_every_probe_and_verbose_fails_padding() -> None:
    pairs = parse_pairs_lines([json.dumps(r) for r in simulated_pair_records(60, seed=2)], "x")
    clean = run_live(pairs, LiveSettings(spec="simulated:unbiased"), bias_check_probability=1.0)[
        "probes"
    ]
    assert not any(probe["failed"] for probe in clean.values())
    # common random numbers: with no bias the perturbed verdicts equal the baseline ones
    assert all(probe["robustness"]["rate"] == 1.0 for probe in clean.values())
    verbose = run_live(
        pairs,
        LiveSettings(spec="simulated:verbose", options={"verbosity": 3.0}),
        bias_check_probability=1.0,
        probes=("padding",),
    )["probes"]
    assert verbose["padding"]["failed"] is True
    assert verbose["padding"]["robustness"]["ci_high"] < 0.95
