"""Pairwise judges with a known shared-error component, for the effective-number tests.

Each pair has a true winner (``a`` or ``b``). With probability ``shared`` the pair is a
*common-mode failure*: every judge picks the wrong answer. Otherwise each judge is wrong
independently with probability ``error``. The human label is the truth, flipped with
probability ``label_noise``. Verdicts are the same in both display orders.

Hand derivation of the true error correlation against the truth (``label_noise = 0``),
with ``q = shared``, ``p = error``:

    P(wrong)           pi  = q + (1 - q) p
    P(both wrong)      p11 = q + (1 - q) p^2
    rho = (p11 - pi^2) / (pi (1 - pi))

e.g. q = 0.1, p = 0.2: pi = 0.28, p11 = 0.136, rho = 0.0576 / 0.2016 = 2/7, and five such
judges are worth n_eff = 5 / (1 + 4 * 2/7) = 7/3 independent ones.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.stats import multivariate_normal, norm

MODELS = ("alpha", "beta")


def true_error_correlation(shared: float, error: float) -> float:
    """rho of the module docstring (against the truth)."""
    wrong = shared + (1 - shared) * error
    both = shared + (1 - shared) * error**2
    return (both - wrong**2) / (wrong * (1 - wrong))


def true_effective_judges(shared: float, error: float, judges: int) -> float:
    return judges / (1 + (judges - 1) * true_error_correlation(shared, error))


def error_matrix(
    items: int, judges: int, *, shared: float, error: float, rng: np.random.Generator
) -> np.ndarray:
    """``(items, judges)`` error indicators against the truth."""
    common = rng.random(items) < shared
    own = rng.random((items, judges)) < error
    return (common[:, None] | own).astype(float)


def judge_records(
    items: int,
    judges: int,
    *,
    shared: float,
    error: float,
    label_noise: float = 0.0,
    seed: int = 0,
    judge_names: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """Replay records (the pairs-file shape), one per (judge, pair)."""
    rng = np.random.default_rng(seed)
    names = judge_names or tuple(f"judge-{j}" for j in range(judges))
    truth = np.where(rng.random(items) < 0.5, "a", "b")
    wrong = error_matrix(items, judges, shared=shared, error=error, rng=rng).astype(bool)
    label_flipped = rng.random(items) < label_noise
    other = {"a": "b", "b": "a"}
    records = []
    for j, name in enumerate(names):
        for i in range(items):
            verdict = other[truth[i]] if wrong[i, j] else str(truth[i])
            human = other[truth[i]] if label_flipped[i] else str(truth[i])
            records.append(
                {
                    "id": f"pair-{i}",
                    "prompt": f"Question {i}",
                    "response_a": f"answer a {i}",
                    "response_b": f"answer b {i}",
                    "model_a": MODELS[0],
                    "model_b": MODELS[1],
                    "human_label": human,
                    "judge": name,
                    "judgments": [
                        {"order": "ab", "winner": verdict},
                        {"order": "ba", "winner": verdict},
                    ],
                }
            )
    return records


def latent_error_matrix(
    items: int, judges: int, *, shared_share: float, error: float, rng: np.random.Generator
) -> np.ndarray:
    """A second mechanism: judge j errs when ``sqrt(s) Z_i + sqrt(1 - s) U_ij > z``.

    ``Z_i`` (the pair's shared difficulty) and ``U_ij`` are standard normal, ``s`` =
    ``shared_share`` and ``z = Phi^-1(1 - error)``: latent errors correlate ``s``, the
    indicators less (see :func:`latent_true_error_correlation`).
    """
    threshold = float(norm.ppf(1 - error))
    shared = rng.standard_normal(items)[:, None]
    own = rng.standard_normal((items, judges))
    latent = np.sqrt(shared_share) * shared + np.sqrt(1 - shared_share) * own
    return (latent > threshold).astype(float)


def latent_true_error_correlation(shared_share: float, error: float) -> float:
    """Indicator correlation of :func:`latent_error_matrix`: the bivariate normal orthant
    probability P(X > z, Y > z) at correlation s, from scipy, minus error^2, over
    error (1 - error)."""
    threshold = float(norm.ppf(1 - error))
    both = float(
        multivariate_normal(mean=[0, 0], cov=[[1, shared_share], [shared_share, 1]]).cdf(
            [-threshold, -threshold]
        )
    )
    return (both - error**2) / (error * (1 - error))
