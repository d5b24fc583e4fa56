"""Poisson bootstrap weights that are a function of (seed, unit id, resample), not of a stream.

The ordinary bootstrap draws ``n`` units with replacement: a unit's count in a replicate
is Multinomial(n, 1/n) and depends on every other unit, so adding units redraws them all.
The Poisson bootstrap gives each unit an independent Poisson(1) count instead (Hanley &
MacGibbon 2006, "Creating non-parametric bootstrap samples using Poisson frequencies",
Comput. Methods Programs Biomed. 83(1):57-62; Chamandy, Muralidharan, Najmi & Naidu 2012,
"Estimating uncertainty for massive data streams", Google), which is the limit of
Multinomial(n, 1/n) as n grows and makes each unit's weights computable alone. Here the
count of unit ``u`` in replicate ``b`` is

.. math::

    w_{u,b} = F^{-1}\\big(U(h(k_u + (b + 1)\\,\\phi))\\big), \\qquad
    k_u = \\mathrm{BLAKE2b}_{seed}(u)

with :math:`h` the SplitMix64 finaliser (Steele, Lea & Flood 2014, "Fast splittable
pseudorandom number generators", OOPSLA), :math:`\\phi` = 0x9E3779B97F4A7C15, :math:`U`
the top 53 bits as a uniform on [0, 1) and :math:`F^{-1}` the Poisson(1) quantile
function. A unit keeps its weights when others are added, so weighted sums over disjoint
sets of units add up to the weighted sum over their union, exactly when the summed values
are integers.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import numpy as np

__all__ = ["POISSON_ONE_CDF", "poisson_weights", "unit_keys"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def _poisson_one_cdf() -> np.ndarray:
    """:math:`P(X \\le j)` for X ~ Poisson(1), j = 0.. until it rounds to 1."""
    values, total, j = [], 0.0, 0
    while total < 1.0 and j < 40:
        total = math.fsum(math.exp(-1.0) / math.factorial(i) for i in range(j + 1))
        values.append(total)
        j += 1
    return np.array(values)


#: the Poisson(1) distribution function at 0, 1, 2, ... (its last entry rounds to 1)
POISSON_ONE_CDF = _poisson_one_cdf()
#: the same on the 53-bit integer grid: U = v / 2^53 >= F(j) exactly when v >= this
_THRESHOLDS = np.ceil(POISSON_ONE_CDF * 2.0**53).astype(np.uint64)
#: counts below this are found by comparisons (98% of draws), the rest by a search
_DIRECT = 4


def unit_keys(unit_ids: Sequence[str], seed: int) -> np.ndarray:
    """A 64-bit key per unit id: BLAKE2b keyed with the seed (a different seed, other
    weights; the same id and seed, the same key in every process and release)."""
    secret = str(int(seed)).encode()
    if len(secret) > hashlib.blake2b.MAX_KEY_SIZE:  # a seed of more than 64 digits
        secret = hashlib.blake2b(secret, digest_size=hashlib.blake2b.MAX_KEY_SIZE).digest()
    return np.array(
        [
            int.from_bytes(
                hashlib.blake2b(
                    unit.encode("utf-8", "surrogatepass"), digest_size=8, key=secret
                ).digest(),
                "little",
            )
            for unit in unit_ids
        ],
        dtype=np.uint64,
    )


def _splitmix64(z: np.ndarray) -> np.ndarray:
    """The SplitMix64 output function, in place on a uint64 array (wrapping arithmetic)."""
    z ^= z >> np.uint64(30)
    z *= _MIX_1
    z ^= z >> np.uint64(27)
    z *= _MIX_2
    z ^= z >> np.uint64(31)
    return z


def poisson_weights(keys: np.ndarray, resamples: np.ndarray) -> np.ndarray:
    """Poisson(1) counts ``w[b, u]`` for the given resample numbers and unit keys.

    Parameters
    ----------
    keys : ndarray of uint64, shape (U,)
        From :func:`unit_keys`.
    resamples : ndarray of int, shape (B,)
        Resample numbers (0-based); the same number gives the same weights.

    Returns
    -------
    ndarray of uint8, shape (B, U)
        The counts (the number of table entries at or below the uniform).
    """
    keys = np.asarray(keys, dtype=np.uint64)
    steps = (np.asarray(resamples, dtype=np.uint64) + np.uint64(1)) * _GOLDEN
    z = keys[None, :] + steps[:, None]
    grid = _splitmix64(z) >> np.uint64(11)  # the top 53 bits: U = grid / 2^53
    counts = np.zeros(grid.shape, dtype=np.uint8)
    for threshold in _THRESHOLDS[:_DIRECT]:
        counts += grid >= threshold
    tail = np.flatnonzero(grid >= _THRESHOLDS[_DIRECT - 1])
    counts.flat[tail] = np.searchsorted(_THRESHOLDS, grid.flat[tail], side="right")
    return counts
