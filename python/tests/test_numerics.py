"""test_numerics.py - every ISA through the binding against float64 references (NUMERICS.md)."""
import numpy as np
import pytest
from conftest import (U, assert_forward_contract, assert_inf_rel, assert_stats_bound,
                      ref_backward, ref_forward)

import layernorm

# Leading shapes of rank 0..3 (x of rank 1..4) crossed with widths around vector lengths
# and GPT-2's 768.
LEADING = [(), (3,), (2, 3), (2, 1, 2)]
COLS = [1, 2, 7, 16, 33, 768, 1000, 4099]


def make(rng, lead, cols, offset=0.5, spread=2.0):
    x = (offset + spread * rng.standard_normal(lead + (cols,))).astype(np.float32)
    gamma = (1 + 0.5 * rng.standard_normal(cols)).astype(np.float32)
    beta = rng.standard_normal(cols).astype(np.float32)
    return x, gamma, beta


@pytest.mark.parametrize("lead", LEADING, ids=lambda s: f"rank{len(s) + 1}")
@pytest.mark.parametrize("cols", COLS)
def test_forward_matches_float64(isa, rng, lead, cols):
    x, gamma, beta = make(rng, lead, cols)
    y, mean, rstd = layernorm.forward(x, gamma, beta)
    assert y.shape == x.shape and mean.shape == rstd.shape == lead
    assert_forward_contract(y, x, gamma, beta)
    assert_stats_bound(x, mean, rstd)


@pytest.mark.parametrize("ratio", [1e2, 1e3, 1e4])
def test_offset_rows_keep_precision(isa, rng, ratio):
    # NUMERICS.md: x = mu + N(0, sigma^2) -> |xhat - xhat_ref| <= 16 u (1 + mu/sigma), the
    # floor set by rounding the inputs themselves. E[x^2] - E[x]^2 fails this by far.
    sigma = 1.0
    x = (ratio * sigma + sigma * rng.standard_normal((4, 768))).astype(np.float32)
    xhat, _, _ = layernorm.forward(x)  # gamma, beta None: y is xhat
    _, _, _, xhat_ref = ref_forward(x)
    assert np.abs(xhat - xhat_ref).max() <= 16 * U * (1 + ratio)


@pytest.mark.parametrize("lead", LEADING, ids=lambda s: f"rank{len(s) + 1}")
@pytest.mark.parametrize("cols", [1, 7, 33, 768, 4099])
@pytest.mark.parametrize("with_gamma", [True, False], ids=["gamma", "nogamma"])
def test_backward_matches_float64(isa, rng, lead, cols, with_gamma):
    x, gamma, beta = make(rng, lead, cols)
    gamma = gamma if with_gamma else None
    _, mean, rstd = layernorm.forward(x, gamma, beta)
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx, dgamma, dbeta = layernorm.backward(dy, x, mean, rstd, gamma)
    rdx, rdg, rdb = ref_backward(dy, x, mean, rstd, gamma)
    # NUMERICS.md backward contract: ||got - ref||_inf <= 1e-5 ||ref||_inf for each output.
    # A zero reference (dx for cols == 1) leaves no room: 1e-5 * 0.
    assert_inf_rel(dx, rdx, 1e-5, what="dx")
    assert_inf_rel(dgamma, rdg, 1e-5, what="dgamma")
    assert_inf_rel(dbeta, rdb, 1e-5, what="dbeta")
    if cols == 1:
        assert np.all(dgamma == 0) and np.all(dx == 0)  # bit-exact in the contract


def test_constant_rows_give_beta_exactly(isa, rng):
    beta = rng.standard_normal(64).astype(np.float32)
    gamma = rng.standard_normal(64).astype(np.float32)
    x = np.repeat(np.float32([[3.25], [-1e6], [0.0]]), 64, axis=1)
    for eps in (1e-5, 1e-6, 1e-12):
        y, _, _ = layernorm.forward(x, gamma, beta, eps=eps)
        assert np.array_equal(y, np.broadcast_to(beta, x.shape))


def test_none_means_ones_and_zeros_bitwise(isa, rng):
    x = rng.standard_normal((5, 100)).astype(np.float32)
    y1, m1, r1 = layernorm.forward(x)
    y2, m2, r2 = layernorm.forward(x, np.ones(100, np.float32), np.zeros(100, np.float32))
    assert np.array_equal(y1, y2) and np.array_equal(m1, m2) and np.array_equal(r1, r2)


def test_rank_does_not_change_results(isa, rng):
    # Rows are rows: the same data as (24, c) and as (2, 3, 4, c) gives identical bits.
    x, gamma, beta = make(rng, (24,), 200)
    y2, m2, r2 = layernorm.forward(x, gamma, beta)
    y4, m4, r4 = layernorm.forward(x.reshape(2, 3, 4, 200), gamma, beta)
    assert np.array_equal(y2, y4.reshape(24, 200)) and np.array_equal(m2, m4.ravel())
    assert np.array_equal(r2, r4.ravel())
