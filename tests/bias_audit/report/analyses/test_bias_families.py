"""Anchoring, favouritism and drift on two generators: false alarms and power.

Quick regressions run by default. The calibration table in docs/bias-report.md comes from
``.venv/bin/pytest tests/bias_audit/report/analyses/test_bias_families.py -m slow -s`` (set
``FAMILIES_REPLICATES`` for more runs). Every store is fresh; a "false alarm" is any flag
of that family anywhere in the report (each family is Holm-corrected, so the promise is
<= 5% per report), and "power" is the share of runs that flag the injected target.

The second generator (tests/generators/independent_council.py) knows none of these
biases; they are injected here by post-processing its integer scores: a favour adds
points to one (reviewer, model) cell, anchoring pulls each score toward the mean of the
reviewer's earlier scores in display order, drift adds a per-week leniency slope (with
stochastic rounding so small shifts survive the integer scale). Its sessions are spread
evenly over ``_WEEKS`` weeks.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from generators.independent_council import CouncilSpec, generate_sessions, write_store
from llm_council.bias_audit.report.analyses.families import BiasFamilies, bias_families
from llm_council.bias_audit.report.load.loading import load_store
from llm_council.bias_audit.report.load.tables import create_analysis_tables
from llm_council.errors import ConfigError
from llm_council.simulation.profile import SimulatedProfile
from llm_council.simulation.simulated_records import write_record_store

_WEEKS = 8
_START = datetime(2026, 1, 5, tzinfo=UTC)


@dataclass(frozen=True)
class Injection:
    """Biases injected into members 0 (favours member 1), 1 (anchoring) and 2 (drift).

    ``primacy`` adds points to the answer in display slot 0 for every reviewer, so the
    council's consensus follows display order (the amplification target).
    """

    favour_points: float = 0.0
    anchoring: float = 0.0
    drift_per_week: float = 0.0
    primacy: float = 0.0


def simulator_store(
    path: Path, n_members: int, n_sessions: int, seed: int, bias: Injection
) -> Path:
    names = [f"judge{i}" for i in range(n_members)]
    profiles = [
        SimulatedProfile(
            noise_sd=1.0,
            favours={names[1]: bias.favour_points} if i == 0 else {},
            anchoring=bias.anchoring if i == 1 else 0.0,
            leniency_drift_per_week=bias.drift_per_week if i == 2 else 0.0,
            position_effects=(bias.primacy,) if bias.primacy else (),
        )
        for i in range(n_members)
    ]
    spacing = timedelta(weeks=_WEEKS) / n_sessions
    write_record_store(
        path,
        list(zip(names, profiles, strict=True)),
        n_sessions,
        seed=seed,
        end_time=_START + timedelta(weeks=_WEEKS),
        session_spacing=spacing,
    )
    return path


def independent_store(
    path: Path, n_members: int, n_sessions: int, seed: int, bias: Injection
) -> Path:
    spec = CouncilSpec(n_members=n_members, missing_score_rate=0.05)
    rng = np.random.default_rng(seed + 1)
    names = spec.members()
    lines = []
    for index, session in enumerate(generate_sessions(spec, n_sessions, seed)):
        weeks = _WEEKS * index / n_sessions
        timestamp = (_START + timedelta(weeks=weeks)).isoformat().replace("+00:00", "Z")
        records = session.records()
        by_reviewer: dict[str, list[dict[str, object]]] = {}
        for record in records:
            record["timestamp"] = timestamp
            by_reviewer.setdefault(str(record["reviewer_id"]), []).append(record)
        for reviewer, shown in by_reviewer.items():
            shown.sort(key=lambda record: int(str(record["position"])))
            earlier: list[float] = []
            for record in shown:
                score = record["score_value"]
                if score is None:
                    continue
                value = float(str(score))
                if reviewer == names[0] and record["model_id"] == names[1]:
                    value += bias.favour_points
                if reviewer == names[1] and earlier:
                    value += bias.anchoring * (float(np.mean(earlier)) - value)
                if reviewer == names[2]:
                    value += bias.drift_per_week * weeks
                if record["position"] == 0:
                    value += bias.primacy
                # stochastic rounding keeps the injected shift's expectation on integer scores
                value = float(np.floor(value) + (rng.random() < value - np.floor(value)))
                record["score_value"] = float(np.clip(value, 1.0, 10.0))
                earlier.append(float(record["score_value"]))  # type: ignore[arg-type]
        lines.extend(json.dumps(record) for record in records)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def analyse(path: Path, seed: int = 0) -> BiasFamilies:
    store = load_store(path)
    try:
        create_analysis_tables(store.connection)
        return bias_families(store.connection, seed=seed)
    finally:
        store.connection.close()


def alarms(families: BiasFamilies) -> dict[str, bool]:
    """Whether each family flags anything at all (a false alarm on a null council)."""
    matrix = families.favouritism
    return {
        "favouritism": bool(matrix and any(cell.flagged for cell in matrix.cells)),
        "anchoring": any(item.detected for item in families.anchoring),
        "drift": bool(families.drift and any(s.detected for s in families.drift.series)),
        "amplification": _amplified(families),
    }


def _amplified(families: BiasFamilies) -> bool:
    """The report-level amplification finding: more suspect sessions than chance (p < .05)."""
    found = families.amplification
    return bool(found and found.excess_p_value < 0.05)


def hits(families: BiasFamilies, n_members: int) -> dict[str, bool]:
    """Whether each family flags its injected target (see :class:`Injection`)."""
    matrix = families.favouritism
    favour = bool(
        matrix
        and any(
            c.flagged and c.reviewer == "judge0" and c.model == "judge1" and c.effect.estimate > 0
            for c in matrix.cells
        )
    )
    anchored = any(item.detected and item.reviewer == "judge1" for item in families.anchoring)
    drifted = bool(
        families.drift
        and any(
            s.detected and s.reviewer == "judge2" and s.quantity == "leniency"
            for s in families.drift.series
        )
    )
    return {
        "favouritism": favour,
        "anchoring": anchored,
        "drift": drifted,
        "amplification": _amplified(families),
    }


def _renamed(path: Path) -> Path:
    """Independent-generator members are judge-0..; rename to judge0.. like the simulator."""
    text = path.read_text(encoding="utf-8").replace('"judge-', '"judge')
    path.write_text(text, encoding="utf-8")
    return path


STORES = {
    "simulator": simulator_store,
    "independent": lambda *args: _renamed(independent_store(*args)),
}
EFFECT = Injection(favour_points=1.0, anchoring=0.3, drift_per_week=0.1, primacy=2.0)


@pytest.mark.parametrize("generator", sorted(STORES))
def test_null_council_raises_no_flag(tmp_path: Path, generator: str) -> None:
    path = STORES[generator](tmp_path / "null.jsonl", 5, 300, 11, Injection())
    families = analyse(path)
    assert families.drift is not None and families.drift.n_weeks == _WEEKS
    assert alarms(families) == dict.fromkeys(
        ("favouritism", "anchoring", "drift", "amplification"), False
    )


@pytest.mark.parametrize("generator", sorted(STORES))
def test_injected_biases_are_found_on_their_targets(tmp_path: Path, generator: str) -> None:
    path = STORES[generator](tmp_path / "biased.jsonl", 5, 300, 12, EFFECT)
    families = analyse(path)
    found = hits(families, 5)
    assert (found["favouritism"], found["anchoring"], found["drift"]) == (True, True, True)
    matrix = families.favouritism
    assert matrix is not None
    cell = next(c for c in matrix.cells if (c.reviewer, c.model) == ("judge0", "judge1"))
    assert cell.effect.ci_low < EFFECT.favour_points < cell.effect.ci_high


@pytest.mark.parametrize("generator", sorted(STORES))
def test_strong_primacy_makes_more_suspect_sessions_than_chance(
    tmp_path: Path, generator: str
) -> None:
    path = STORES[generator](tmp_path / "primacy.jsonl", 5, 300, 13, Injection(primacy=3.0))
    found = analyse(path).amplification
    assert found is not None and found.excess_p_value < 0.01
    assert found.n_suspect > 2 * found.expected_by_chance


def test_shared_order_is_recognised_and_its_null_raises_no_alarm(tmp_path: Path) -> None:
    spec = CouncilSpec(n_members=4, shared_order=True)
    path = tmp_path / "shared.jsonl"
    write_store(path, generate_sessions(spec, 300, seed=14))
    found = analyse(path).amplification
    assert found is not None and found.shared_order
    assert found.excess_p_value > 0.05 and found.n_suspect <= 2 * found.expected_by_chance


def test_simulator_defaults_leave_the_stream_unchanged(tmp_path: Path) -> None:
    names = ["a", "b", "c"]
    plain = [SimulatedProfile(noise_sd=1.0) for _ in names]
    explicit = [
        SimulatedProfile(noise_sd=1.0, favours={}, anchoring=0.0, leniency_drift_per_week=0.0)
        for _ in names
    ]
    first = write_record_store(
        tmp_path / "a.jsonl", list(zip(names, plain, strict=True)), 20, seed=3
    )
    second = write_record_store(
        tmp_path / "b.jsonl", list(zip(names, explicit, strict=True)), 20, seed=3
    )
    assert first == second
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()


def test_simulator_favour_names_an_unknown_member(tmp_path: Path) -> None:
    profiles = [SimulatedProfile(favours={"nobody": 1.0}), SimulatedProfile()]
    with pytest.raises(ConfigError, match="unknown member 'nobody'"):
        write_record_store(
            tmp_path / "x.jsonl", list(zip(["a", "b"], profiles, strict=True)), 5, seed=0
        )
    assert not (tmp_path / "x.jsonl").exists()


def _rates(
    generator: str, n_members: int, bias: Injection, runs: int, tmp: Path
) -> dict[str, float]:
    counts = {"favouritism": 0, "anchoring": 0, "drift": 0, "amplification": 0}
    null = bias == Injection()
    for run in range(runs):
        path = STORES[generator](
            tmp / f"{generator}-{n_members}-{run}.jsonl", n_members, 200, 1000 + run, bias
        )
        families = analyse(path, seed=run)
        found = alarms(families) if null else hits(families, n_members)
        for key, value in found.items():
            counts[key] += int(value)
        path.unlink()
    return {key: value / runs for key, value in counts.items()}


@pytest.mark.slow
@pytest.mark.parametrize("generator", sorted(STORES))
@pytest.mark.parametrize("n_members", [3, 5, 9])
def test_false_alarm_rate_and_power(tmp_path: Path, generator: str, n_members: int) -> None:
    runs = int(os.environ.get("FAMILIES_REPLICATES", "100"))
    null = _rates(generator, n_members, Injection(), runs, tmp_path)
    power = _rates(generator, n_members, EFFECT, runs, tmp_path)
    for family in null:
        print(
            f"{generator:11s} k={n_members} {family:11s} false alarm {null[family]:.3f} "
            f"power {power[family]:.3f} ({runs} runs of 200 sessions over {_WEEKS} weeks)"
        )
    # <= 5% promised; 99% binomial upper bound at 100 runs is about 11%
    assert all(rate <= 0.05 + 3 * np.sqrt(0.05 * 0.95 / runs) for rate in null.values())
