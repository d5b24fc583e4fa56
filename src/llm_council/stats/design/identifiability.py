"""Which linear combinations of a regression's coefficients the data can identify.

A coefficient vector is only determined up to the null space of the Gram matrix
``X'X``; a linear function ``c'beta`` is *estimable* (the same for every least-squares
solution) exactly when ``c`` is orthogonal to that null space, i.e. ``c`` lies in the row
space of ``X`` (Searle 1971, *Linear Models*, section 5.4; Seber & Lee 2003, *Linear
Regression Analysis*, section 3.8). A pseudo-inverse quietly returns *some* solution for a
non-estimable function, with a standard error near zero: a confident number about a
parameter the design cannot see. So every estimator checks this first.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

#: eigenvalues below this fraction of the largest count as zero (numerical rank)
RELATIVE_TOLERANCE = 1e-9


def gram_null_space(gram: ArrayLike, rtol: float = RELATIVE_TOLERANCE) -> np.ndarray:
    """An orthonormal basis (columns) of the null space of a symmetric PSD ``gram``."""
    matrix = np.atleast_2d(np.asarray(gram, dtype=float))
    if matrix.size == 0:
        return np.zeros((matrix.shape[0], 0))
    eigenvalues, eigenvectors = np.linalg.eigh((matrix + matrix.T) / 2)
    largest = float(np.max(np.abs(eigenvalues))) if eigenvalues.size else 0.0
    if largest == 0.0:
        return np.eye(matrix.shape[0])
    return np.asarray(eigenvectors[:, eigenvalues <= rtol * largest])


def estimable(contrasts: ArrayLike, null_space: ArrayLike, rtol: float = 1e-6) -> np.ndarray:
    """Per row ``c`` of ``contrasts``: is ``c'beta`` estimable (``c`` orthogonal to null space)?

    ``rtol`` is relative to the norm of ``c``; the basis is orthonormal.
    """
    c = np.atleast_2d(np.asarray(contrasts, dtype=float))
    basis = np.asarray(null_space, dtype=float)
    if basis.size == 0:
        return np.ones(c.shape[0], dtype=bool)
    projection = np.linalg.norm(c @ basis, axis=1)
    scale = np.maximum(np.linalg.norm(c, axis=1), 1e-300)
    return np.asarray(projection <= rtol * scale)
