"""Left-out solutions equal ``pinv(G - P_c) @ r_c`` whatever the conditioning."""

from __future__ import annotations

import numpy as np

from llm_council.stats.design.left_out_solve import left_out_solutions


def _reference(gram: np.ndarray, parts: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return np.einsum("cij,cj->ci", np.linalg.pinv(gram[None] - parts), rhs)


def _clusters(seed: int, n_clusters: int, rows: int, columns: int) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(n_clusters, rows, columns))


def test_well_conditioned_clusters_match_pinv() -> None:
    blocks = _clusters(1, 60, 8, 4)
    parts = blocks.transpose(0, 2, 1) @ blocks
    gram = parts.sum(axis=0)
    rhs = np.random.default_rng(2).normal(size=(60, 4))
    np.testing.assert_allclose(
        left_out_solutions(gram, parts, rhs), _reference(gram, parts, rhs), rtol=1e-10, atol=1e-12
    )


def test_a_cluster_holding_a_whole_column_gets_the_pseudo_inverse() -> None:
    """Column 3 is non-zero in cluster 0 only: leaving it out makes G - P_0 singular, where
    LU would fail or blow up; the bound sends it to pinv (its solution has 0 there)."""
    blocks = _clusters(3, 400, 6, 4)  # many clusters: all but cluster 0 are solved by LU
    blocks[1:, :, 3] = 0.0
    blocks[0, :, 3] *= 100.0  # strong, so G^-1 stays small and the bound admits the others
    parts = blocks.transpose(0, 2, 1) @ blocks
    gram = parts.sum(axis=0)
    rhs = np.random.default_rng(4).normal(size=(400, 4))
    found = left_out_solutions(gram, parts, rhs)
    np.testing.assert_allclose(found, _reference(gram, parts, rhs), rtol=1e-9, atol=1e-10)
    assert abs(found[0, 3]) < 1e-10


def test_a_singular_gram_sends_every_cluster_to_pinv() -> None:
    blocks = _clusters(5, 12, 6, 3)
    blocks[..., 2] = blocks[..., 0] + blocks[..., 1]  # collinear columns: G singular
    parts = blocks.transpose(0, 2, 1) @ blocks
    gram = parts.sum(axis=0)
    rhs = np.random.default_rng(6).normal(size=(12, 3))
    np.testing.assert_allclose(
        left_out_solutions(gram, parts, rhs), _reference(gram, parts, rhs), rtol=1e-8, atol=1e-9
    )


def test_an_ill_conditioned_but_invertible_gram_goes_through_pinv_too() -> None:
    blocks = _clusters(7, 20, 6, 3)
    blocks[..., 2] *= 1e-5  # condition about 1e10: above the direct-solve bound
    parts = blocks.transpose(0, 2, 1) @ blocks
    gram = parts.sum(axis=0)
    rhs = np.random.default_rng(8).normal(size=(20, 3))
    np.testing.assert_allclose(
        left_out_solutions(gram, parts, rhs), _reference(gram, parts, rhs), rtol=1e-6
    )
