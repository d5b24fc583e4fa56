r"""Solve one left-out normal-equation system per cluster: :math:`(G - P_c)^{+} r_c`.

A delete-one-cluster jackknife refits least squares once per cluster ``c``, with the Gram
matrix :math:`G` less that cluster's part :math:`P_c`. The pseudo-inverse (SVD) is what the
definition asks for when a left-out system is rank deficient, but it is about ten times
slower than an LU solve, and for almost every cluster it equals the inverse.

Which ones: if :math:`\|G^{-1}\|_1 \|P_c\|_1 \le 1/2` then :math:`G - P_c = G(I - G^{-1}P_c)`
is invertible with :math:`\|(G - P_c)^{-1}\|_1 \le 2\|G^{-1}\|_1` (Neumann series; Golub &
Van Loan, *Matrix Computations*, 4th ed., 2013, section 2.3.4), so

.. math::

    \kappa_1(G - P_c) \le 2\,(\|G\|_1 + \|P_c\|_1)\,\|G^{-1}\|_1 .

Where that bound is below ``DIRECT_SOLVE_CONDITION`` (1e6), ``np.linalg.pinv`` (relative
cut-off 1e-15 on the singular values, and :math:`\kappa_2 \le p\,\kappa_1` for ``p``
columns) drops nothing and is the inverse, so the LU solve returns the same vector up to
rounding (about :math:`\kappa \cdot 10^{-16}` relative). Every other cluster, and all of
them when :math:`G` itself is singular, goes through ``pinv`` as before.
"""

from __future__ import annotations

import numpy as np

#: a left-out system whose 1-norm condition bound is below this is solved by LU
DIRECT_SOLVE_CONDITION = 1e6


def left_out_solutions(
    gram: np.ndarray, parts: np.ndarray, right_hand_sides: np.ndarray
) -> np.ndarray:
    """``pinv(gram - parts[c]) @ right_hand_sides[c]`` for every ``c`` (module docstring).

    ``gram`` is (p, p), ``parts`` (clusters, p, p) and ``right_hand_sides`` (clusters, p).
    """
    systems = gram[None] - parts
    solutions = np.empty(right_hand_sides.shape)
    try:
        gram_inverse_norm = _one_norm(np.linalg.inv(gram))
    except np.linalg.LinAlgError:  # a singular Gram matrix: no bound, pinv throughout
        direct = np.zeros(len(parts), dtype=bool)
    else:
        part_norm = _one_norm(parts)
        with np.errstate(invalid="ignore", over="ignore"):
            bound = 2 * (_one_norm(gram) + part_norm) * gram_inverse_norm
            # NaN or inf in the bound counts as not direct
            direct = (gram_inverse_norm * part_norm <= 0.5) & (bound < DIRECT_SOLVE_CONDITION)
    if direct.all():  # the usual case: no masked copies of the stack
        return np.asarray(np.linalg.solve(systems, right_hand_sides[:, :, None])[..., 0])
    if direct.any():
        solutions[direct] = np.linalg.solve(systems[direct], right_hand_sides[direct, :, None])[
            ..., 0
        ]
    if not direct.all():
        rest = ~direct
        solutions[rest] = np.einsum(
            "cij,cj->ci", np.linalg.pinv(systems[rest]), right_hand_sides[rest]
        )
    return solutions


def _one_norm(matrices: np.ndarray) -> np.ndarray:
    """The 1-norm (largest absolute column sum) of each matrix of a stack."""
    return np.asarray(np.abs(matrices).sum(axis=-2).max(axis=-1))
