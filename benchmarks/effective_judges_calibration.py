"""Coverage, false-alarm rate and power of calibrate's effective number of judges.

For each scenario and seed: simulate judges' error indicators against the truth, apply
calibrate's too-few rule, and run
:func:`llm_council.stats.reliability.effective_judges.effective_judges`
(95% percentile bootstrap over pairs). Per scenario it prints

- coverage: the share of runs whose interval contains the TRUE n_eff (hand-derived in
  ``tests/generators/shared_error_judges.py``, or from scipy's bivariate normal for the
  latent generator);
- detected: the share whose interval lies below k (the report's "fail together" line);
  with independent judges this is the false-alarm rate (nominal 2.5%, one side of a 95%
  interval); with shared errors it is the power;
- too few: the share refused an interval by the too-few rule (not counted in the others).

Generators: ``mix`` (common-mode failure with probability q, else independent errors at
rate p) and ``latent`` (thresholded Gaussian with a shared share s); ``label_noise`` flips
the human label, which the report's caveat says lowers n_eff.

    .venv/bin/python benchmarks/effective_judges_calibration.py [--seeds 400] [--resamples 1000]
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parents[1] / "tests"))

from generators.shared_error_judges import (  # noqa: E402
    error_matrix,
    latent_error_matrix,
    latent_true_error_correlation,
    true_error_correlation,
)
from llm_council.calibration.judge_independence import too_few_reason  # noqa: E402
from llm_council.stats.reliability.effective_judges import effective_judges  # noqa: E402


@dataclass(frozen=True)
class Scenario:
    generator: str  # "mix" or "latent"
    judges: int
    pairs: int
    error: float
    shared: float  # q for mix, s for latent
    label_noise: float = 0.0

    def true_rho(self) -> float:
        if self.generator == "mix":
            return true_error_correlation(self.shared, self.error)
        return latent_true_error_correlation(self.shared, self.error)

    def true_n_eff(self) -> float:
        return self.judges / (1 + (self.judges - 1) * self.true_rho())

    def errors(self, rng: np.random.Generator) -> np.ndarray:
        if self.generator == "mix":
            wrong = error_matrix(
                self.pairs, self.judges, shared=self.shared, error=self.error, rng=rng
            )
        else:
            wrong = latent_error_matrix(
                self.pairs, self.judges, shared_share=self.shared, error=self.error, rng=rng
            )
        # a wrong human label turns every judge's right verdict into an error and back
        flipped = rng.random(self.pairs) < self.label_noise
        return np.where(flipped[:, None], 1.0 - wrong, wrong)


SCENARIOS = (
    # independent judges: coverage of k and the false-alarm rate of "fail together"
    Scenario("mix", 3, 100, 0.3, 0.0),
    Scenario("mix", 5, 100, 0.3, 0.0),
    Scenario("mix", 5, 100, 0.2, 0.0),  # 4 expected joint errors: mostly "too few"
    Scenario("mix", 5, 300, 0.2, 0.0),
    Scenario("mix", 7, 300, 0.3, 0.0),
    Scenario("latent", 5, 100, 0.25, 0.0),
    Scenario("latent", 3, 200, 0.15, 0.0),
    # a shared-error component: power
    Scenario("mix", 5, 100, 0.3, 0.05),
    Scenario("mix", 5, 100, 0.3, 0.1),
    Scenario("mix", 5, 300, 0.2, 0.05),
    Scenario("mix", 3, 100, 0.3, 0.1),
    Scenario("latent", 5, 100, 0.25, 0.2),
    Scenario("latent", 5, 300, 0.25, 0.1),
    # independent judges, 10% of human labels wrong: the caveat, measured
    Scenario("mix", 5, 300, 0.2, 0.0, label_noise=0.1),
)


def run(scenario: Scenario, seeds: int, resamples: int) -> dict[str, float]:
    names = [f"j{j}" for j in range(scenario.judges)]
    truth = scenario.true_n_eff()
    covered = detected = too_few = 0
    estimates = []
    for seed in range(seeds):
        rng = np.random.default_rng([seed, scenario.judges, scenario.pairs])
        errors = scenario.errors(rng)
        if too_few_reason(names, errors) is not None:
            too_few += 1
            continue
        result = effective_judges(errors, resamples=resamples, seed=seed)
        if math.isnan(result.ci_low):
            too_few += 1
            continue
        estimates.append(result.effective_judges)
        covered += result.ci_low <= truth <= result.ci_high
        detected += result.ci_high < scenario.judges
    used = seeds - too_few
    return {
        "true": truth,
        "median": float(np.median(estimates)) if estimates else math.nan,
        "coverage": covered / used if used else math.nan,
        "detected": detected / used if used else math.nan,
        "too_few": too_few / seeds,
        "used": used,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=400)
    parser.add_argument("--resamples", type=int, default=1000)
    args = parser.parse_args()
    print(f"seeds={args.seeds} resamples={args.resamples} (95% intervals)\n")
    print(
        "| generator | k | pairs | p | shared | label noise | true n_eff | median n_eff"
        " | coverage | detected (n_eff < k) | too few |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    started = time.perf_counter()
    for scenario in SCENARIOS:
        row = run(scenario, args.seeds, args.resamples)
        print(
            f"| {scenario.generator} | {scenario.judges} | {scenario.pairs} | {scenario.error}"
            f" | {scenario.shared} | {scenario.label_noise} | {row['true']:.2f}"
            f" | {row['median']:.2f} | {row['coverage']:.3f} | {row['detected']:.3f}"
            f" | {row['too_few']:.3f} |",
            flush=True,
        )
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
