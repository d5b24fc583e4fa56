"""The bincount products against dense numpy, for every kind of design they accept."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import sparse

from llm_council.stats.design import design_products
from llm_council.stats.design.design_products import (
    absorbed_cross_products,
    gram,
    grouped_column_sums,
    grouped_cross_product,
)


def _designs(rng: np.random.Generator) -> list[object]:
    n, k = 500, 7
    # uniform: 3 entries per row, one per block of columns, explicit zeros included
    columns = np.column_stack(
        [rng.integers(0, 2, n), 2 + rng.integers(0, 3, n), 5 + rng.integers(0, 2, n)]
    )
    values = rng.normal(size=(n, 3))
    values[rng.random((n, 3)) < 0.2] = 0.0
    uniform = sparse.csr_matrix(
        (values.ravel(), columns.ravel(), np.arange(0, 3 * n + 1, 3)), shape=(n, k)
    )
    ragged_dense = sparse.random(n, k, density=0.3, random_state=1).toarray()
    ragged_dense[3] = 0.0  # a row with no entries
    ragged = sparse.csr_matrix(ragged_dense)
    dense = rng.normal(size=(n, k))
    return [uniform, ragged, ragged.tocsc(), dense]


@pytest.mark.parametrize("rows_per_pass", [7, 1 << 20])
def test_products_equal_dense_numpy(monkeypatch: pytest.MonkeyPatch, rows_per_pass: int) -> None:
    monkeypatch.setattr(design_products, "_ROWS_PER_PASS", rows_per_pass)  # chunk seams
    rng = np.random.default_rng(0)
    for design in _designs(rng):
        x = design.toarray() if sparse.issparse(design) else np.asarray(design)
        n = x.shape[0]
        groups = rng.integers(0, 40, n) * 3  # ids need not be dense
        weights = rng.normal(size=n)
        expected = np.zeros((int(groups.max()) + 1, x.shape[1]))
        np.add.at(expected, groups, x * weights[:, None])
        got = grouped_column_sums(design, groups, int(groups.max()) + 1, weights)
        assert got == pytest.approx(expected, abs=1e-12)
        unweighted = np.zeros_like(expected)
        np.add.at(unweighted, groups, x)
        assert grouped_column_sums(design, groups, expected.shape[0]) == pytest.approx(
            unweighted, abs=1e-12
        )
        assert gram(design) == pytest.approx(x.T @ x, abs=1e-12)


@pytest.mark.parametrize(
    ("groups_per_block", "rows_per_block"), [(5, 1 << 19), (1 << 16, 30), (1 << 16, 1)]
)
@pytest.mark.parametrize("ordered", [False, True])
@pytest.mark.parametrize("rows_per_pass", [3, 1 << 20])
def test_blocked_cross_products_equal_the_dense_group_sums(
    monkeypatch: pytest.MonkeyPatch,
    groups_per_block: int,
    rows_per_block: int,
    ordered: bool,
    rows_per_pass: int,
) -> None:
    # block seams (by groups, by rows, a group per block), rows ordered by group (one
    # slice) or not (a scan per block), and blocks summed in one pass (their entries'
    # arrays directly) or in several (as a CSR block)
    monkeypatch.setattr(design_products, "_GROUPS_PER_BLOCK", groups_per_block)
    monkeypatch.setattr(design_products, "_ROWS_PER_BLOCK", rows_per_block)
    monkeypatch.setattr(design_products, "_ROWS_PER_PASS", rows_per_pass)
    rng = np.random.default_rng(1)
    for design in _designs(rng):
        x = design.toarray() if sparse.issparse(design) else np.asarray(design)
        groups = rng.integers(0, 40, x.shape[0]) * 3  # ids need not be dense; some empty
        if ordered:
            groups = np.sort(groups)
        n_groups = int(groups.max()) + 1
        sums = np.zeros((n_groups, x.shape[1]))
        np.add.at(sums, groups, x)
        vector = rng.normal(size=n_groups)
        # non-negative weights (a symmetric product of root-weighted sums) and signed ones
        for weights in (rng.random(n_groups), rng.normal(size=n_groups)):
            cross, moment = absorbed_cross_products(design, groups, weights, vector)
            assert cross == pytest.approx(sums.T @ (sums * weights[:, None]), abs=1e-12)
            assert moment == pytest.approx(sums.T @ vector, abs=1e-12)
        row_weights = rng.normal(size=x.shape[0])
        weighted = np.zeros_like(sums)
        np.add.at(weighted, groups, x * row_weights[:, None])
        assert grouped_cross_product(design, groups, n_groups, row_weights) == pytest.approx(
            weighted.T @ weighted, abs=1e-12
        )


@pytest.mark.parametrize("rows_per_pass", [3, 1 << 20])
def test_entries_per_row_is_the_common_row_length(
    monkeypatch: pytest.MonkeyPatch, rows_per_pass: int
) -> None:
    monkeypatch.setattr(design_products, "_ROWS_PER_PASS", rows_per_pass)
    uniform = sparse.csr_matrix(
        (np.ones(20), np.arange(20) % 4, np.arange(0, 21, 2)), shape=(10, 4)
    )
    assert design_products._entries_per_row(uniform) == 2
    assert design_products._entries_per_row(uniform[3:7]) == 2  # indptr not starting at 0
    ragged = uniform.toarray()
    ragged[8, :] = 1.0  # same total as nowhere else: rows of 2 and one of 4
    assert design_products._entries_per_row(sparse.csr_matrix(ragged)) is None
    compensated = sparse.csr_matrix(
        (np.ones(20), np.arange(20) % 4, np.array([0, 2, 4, 6, 8, 10, 11, 14, 16, 18, 20])),
        shape=(10, 4),
    )  # rows of 1 and 3 with the right total
    assert design_products._entries_per_row(compensated) is None
    assert design_products._entries_per_row(sparse.csr_matrix((0, 4))) is None
    assert design_products._entries_per_row(sparse.csr_matrix((3, 4))) is None
