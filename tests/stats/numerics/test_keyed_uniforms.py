"""Keyed uniforms: SplitMix64's published outputs, a row's numbers independent of the other
rows and of how the draws are chunked, uniform, and an exact randomization test with them."""

from __future__ import annotations

import numpy as np
from scipy import stats

from llm_council.stats.bias_effects.amplification import alignment_randomization_p
from llm_council.stats.numerics.keyed_uniforms import (
    CELLS_PER_DRAW,
    KeyedUniforms,
    row_streams,
    splitmix64,
    text_keys,
)

_MASK = (1 << 64) - 1
_GAMMA = 0x9E3779B97F4A7C15


def _reference_next(state: int) -> tuple[int, int]:
    """Vigna's splitmix64.c ``next()`` in Python integers: (new state, output)."""
    state = (state + _GAMMA) & _MASK
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return state, z ^ (z >> 31)


def test_splitmix64_gives_the_published_outputs_for_seed_0() -> None:
    # the first outputs of splitmix64.c seeded with 0, as widely quoted
    published = [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F, 0xF88BB8A8724C81EC]
    states = np.asarray([(i + 1) * _GAMMA & _MASK for i in range(4)], dtype=np.uint64)
    assert [int(v) for v in splitmix64(states)] == published
    state, outputs = 0, []
    for _ in range(4):
        state, output = _reference_next(state)
        outputs.append(output)
    assert outputs == published


def test_a_rows_numbers_are_its_stream_whatever_the_batch() -> None:
    keys = text_keys([f"session-{i}" for i in range(6)]).reshape(3, 2)
    together = KeyedUniforms(5, keys).random((7, 3, 2, 4))
    alone = KeyedUniforms(5, keys[1:2]).random((7, 1, 2, 4))
    assert np.array_equal(together[:, 1:2], alone)
    chunked = KeyedUniforms(5, keys)
    parts = [chunked.random((3, 3, 2, 4)), chunked.random((4, 3, 2, 4))]
    assert np.array_equal(np.concatenate(parts), together)
    # the element [d, r, c] is the stream's element d * CELLS_PER_DRAW + c + 1, by hand
    start = int(row_streams(5, keys)[2, 1])
    state = (start + (6 * CELLS_PER_DRAW + 3 + 1) * _GAMMA) & _MASK
    z = ((state ^ (state >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    assert together[6, 2, 1, 3] == ((z ^ (z >> 31)) >> 11) / 2.0**53


def test_the_numbers_are_uniform_multiples_of_2_to_the_minus_53() -> None:
    draws = KeyedUniforms(0, text_keys([str(i) for i in range(500)])).random((40, 500, 5))
    values = draws.ravel()
    assert np.all((values >= 0) & (values < 1))
    assert np.array_equal(values * 2.0**53, np.floor(values * 2.0**53))
    assert stats.kstest(values, "uniform").pvalue > 1e-3
    # neighbouring rows and cells are not correlated
    assert abs(np.corrcoef(draws[:, :-1].ravel(), draws[:, 1:].ravel())[0, 1]) < 0.02
    assert abs(np.corrcoef(draws[..., :-1].ravel(), draws[..., 1:].ravel())[0, 1]) < 0.02


def test_a_wrong_shape_is_refused() -> None:
    generator = KeyedUniforms(0, text_keys(["a", "b"]).reshape(2, 1))
    try:
        generator.random((3, 2, 2, 4))
    except ValueError as error:
        assert "does not match" in str(error)
    else:  # pragma: no cover
        raise AssertionError("a draw of another shape was accepted")


def test_the_randomization_test_with_keyed_streams_keeps_its_level() -> None:
    # 1,500 null sessions (3 reviewers, 4 slots, scores independent of slot): p <= 0.05
    # must occur in at most 5% of them; a binomial(1500, 0.05) exceeds 96 with
    # probability about 0.01 (scipy), so 96 is the bound
    rng = np.random.default_rng(3)
    scores = rng.integers(1, 11, size=(1500, 3, 4)).astype(float)  # integer scores, ties
    keys = text_keys([f"s{i}/{r}" for i in range(1500) for r in range(3)]).reshape(1500, 3)
    p = alignment_randomization_p(scores, KeyedUniforms(9, keys), 99)  # type: ignore[arg-type]
    assert stats.binom.sf(96, 1500, 0.05) < 0.02
    assert np.sum(p <= 0.05) <= 96
    assert np.all((p > 0) & (p <= 1))
