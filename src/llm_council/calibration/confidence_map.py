"""Correct a judge's stated confidence with an isotonic map, and show that it helps.

The map is the isotonic (monotone non-decreasing) least-squares fit of "the verdict was
right" (1/0) on the stated confidence: the pool-adjacent-violators algorithm (Ayer et al.
1955; Barlow et al. 1972), as Zadrozny & Elkan (2002) use it to calibrate classifier
scores. It is applied by linear interpolation between the fitted points and clipped at
the ends (as scikit-learn's ``IsotonicRegression`` does), so a stated confidence keeps
its order and becomes the accuracy seen at that confidence.

Fitting and judging the map on the same verdicts flatters it, so the report splits the
pairs in two halves by a hash of the pair id (every verdict of a pair on the same side:
the verdicts of one pair share its difficulty), fits on one half and gives the ECE of the
other half before and after the map. The map saved for later runs is fitted on all
verdicts.

References
----------
Zadrozny, B. & Elkan, C. (2002). Transforming classifier scores into accurate multiclass
probability estimates. KDD, 694-699. Barlow, R. E., Bartholomew, D. J., Bremner, J. M. &
Brunk, H. D. (1972). Statistical Inference under Order Restrictions. Wiley.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from scipy.optimize import isotonic_regression

from llm_council.calibration.pairs import Pair
from llm_council.errors import InputError

MAP_FORMAT = "llm-council-confidence-map/1"


@dataclass(frozen=True)
class ConfidenceMap:
    """An increasing step of points: stated confidence ``x`` -> observed accuracy ``y``."""

    x: tuple[float, ...]
    y: tuple[float, ...]

    def apply(self, confidences: Sequence[float]) -> list[float]:
        """Each confidence through the map (linear between points, clipped at the ends)."""
        return np.interp(np.asarray(confidences, dtype=float), self.x, self.y).tolist()

    def as_json(self, judge: str, n_verdicts: int) -> dict[str, Any]:
        return {
            "format": MAP_FORMAT,
            "judge": judge,
            "n_verdicts": n_verdicts,
            "x": list(self.x),
            "y": list(self.y),
        }


def fit_confidence_map(confidences: Sequence[float], correct: Sequence[bool]) -> ConfidenceMap:
    """The isotonic fit of ``correct`` on ``confidences`` (module docstring), one point per
    distinct confidence (tied confidences are averaged first, with their counts as
    weights)."""
    if len(confidences) != len(correct) or not confidences:
        raise ValueError("need one outcome per confidence, and at least one")
    values = np.asarray(confidences, dtype=float)
    outcomes = np.asarray(correct, dtype=float)
    distinct, inverse = np.unique(values, return_inverse=True)
    counts = np.bincount(inverse).astype(float)
    means = np.bincount(inverse, weights=outcomes) / counts
    fitted = isotonic_regression(means, weights=counts, increasing=True).x
    return ConfidenceMap(tuple(distinct.tolist()), tuple(np.clip(fitted, 0.0, 1.0).tolist()))


def in_first_half(pair_id: str) -> bool:
    """Which half a pair falls in: the low bit of SHA-256 of its id (stable across runs)."""
    return hashlib.sha256(pair_id.encode("utf-8")).digest()[0] % 2 == 0


def read_confidence_map(path: Path) -> ConfidenceMap:
    """A map saved by ``calibrate --save-confidence-map``; a bad file is one InputError."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as error:
        raise InputError(f"cannot read a confidence map: {error}", path=str(path)) from None
    if not isinstance(document, dict) or document.get("format") != MAP_FORMAT:
        raise InputError(f"not a confidence map (format must be {MAP_FORMAT!r})", path=str(path))
    x, y = document.get("x"), document.get("y")
    points = (x, y)
    if not all(isinstance(p, list) and p for p in points) or len(x) != len(y):
        raise InputError("fields 'x' and 'y' must be lists of equal length", path=str(path))
    numbers = [value for p in points for value in p]
    if not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in numbers
    ):
        raise InputError("fields 'x' and 'y' must hold finite numbers", path=str(path))
    if any(b < a for a, b in zip(x, x[1:], strict=False)) or any(
        b < a for a, b in zip(y, y[1:], strict=False)
    ):
        raise InputError("fields 'x' and 'y' must be non-decreasing", path=str(path))
    if not all(0.0 <= v <= 1.0 for v in numbers):
        raise InputError("fields 'x' and 'y' must lie in [0, 1]", path=str(path))
    return ConfidenceMap(tuple(float(v) for v in x), tuple(float(v) for v in y))


def with_mapped_confidences(pairs: Sequence[Pair], mapping: ConfidenceMap) -> list[Pair]:
    """The pairs with every stated verdict confidence passed through ``mapping``."""
    mapped = []
    for pair in pairs:
        judgments = tuple(
            judgment
            if judgment.confidence is None
            else replace(judgment, confidence=mapping.apply([judgment.confidence])[0])
            for judgment in pair.judgments
        )
        mapped.append(replace(pair, judgments=judgments))
    return mapped
