"""test_ext.py - the 1.1 entry points through the binding: views, RMSNorm, accumulate, add."""
import numpy as np
import pytest
from conftest import U, assert_inf_rel, forward_tau

import layernorm

pytestmark = pytest.mark.skipif(not layernorm.has("ln_forward_ex_f32"),
                                reason="liblayernorm < 1.1: no _ex entry points")

COLS = [1, 7, 33, 768, 1000]


def normal(rng, shape, mu=0.0, sigma=1.0):
    return (mu + sigma * rng.standard_normal(shape)).astype(np.float32)


@pytest.mark.parametrize("cols", COLS)
def test_column_slices_need_no_copy(isa, rng, cols):
    # One head of a (rows, 3 * cols + 5) buffer, in and out: the library reads and writes
    # the caller's strided rows, and the header promises the contiguous result bit for bit.
    big = normal(rng, (2, 3, 3 * cols + 5), 0.3, 1.5)
    x = big[..., cols + 2:2 * cols + 2]
    gamma, beta = normal(rng, cols, 1, 0.3), normal(rng, cols)
    y_ref, m_ref, r_ref = layernorm.forward(np.ascontiguousarray(x), gamma, beta)
    ybig = np.zeros_like(big)
    y, m, r = layernorm.forward(x, gamma, beta, out=ybig[..., 3:3 + cols])
    assert np.shares_memory(y, ybig) and y.base is ybig
    assert np.array_equal(y, y_ref) and np.array_equal(m, m_ref) and np.array_equal(r, r_ref)
    ybig[..., 3:3 + cols] = 0
    assert not ybig.any()  # nothing written outside the view

    dy = normal(rng, big.shape)[..., :cols]
    dxbig = np.zeros_like(big)
    sums = np.empty(cols, np.float32), np.empty(cols, np.float32)
    got = layernorm.backward(dy, x, m, r, gamma, out=(dxbig[..., -cols:], *sums))
    want = layernorm.backward(np.ascontiguousarray(dy), np.ascontiguousarray(x), m, r, gamma)
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    assert got[0].base is dxbig


def test_view_in_place(isa, rng):
    big = normal(rng, (4, 100), 1, 2)
    x = big[:, 10:60]
    y_ref, _, _ = layernorm.forward(np.ascontiguousarray(x))
    y, _, _ = layernorm.forward(x, out=x)
    assert y is x and np.array_equal(big[:, 10:60], y_ref)


@pytest.mark.parametrize("cols", COLS)
def test_rms_norm(isa, rng, cols):
    x = normal(rng, (3, cols), 0.5, 2)
    gamma, beta, dy = normal(rng, cols, 1, 0.5), normal(rng, cols), normal(rng, (3, cols))
    y, mean, rstd = layernorm.forward(x, gamma, beta, rms_norm=True)
    x64, g64, b64 = x.astype(np.float64), gamma.astype(np.float64), beta.astype(np.float64)
    r64 = 1 / np.sqrt((x64 ** 2).mean(axis=-1) + 1e-5)
    xhat = x64 * r64[:, None]
    # The LayerNorm contract with xhat = x rstd, as tests/test_kernel_strided_flags.c holds RMSNorm.
    err = np.abs(y - (g64 * xhat + b64)) / (1 + np.abs(g64 * xhat) + np.abs(b64))
    assert err.max() <= forward_tau(cols) and np.all(mean == 0)
    # mean(x^2) sums positive terms: within n u relative in any order (Higham, ch. 4);
    # rstd halves that and adds a few u for add, sqrt and divide.
    assert np.all(np.abs(rstd / r64 - 1) <= 0.5 * cols * U + 4 * U)

    dx, dgamma, dbeta = layernorm.backward(dy, x, None, rstd, gamma, rms_norm=True)
    xh = x64 * rstd.astype(np.float64)[:, None]  # the contract's reference: saved rstd
    g = dy * g64
    rdx = rstd[:, None] * (g - xh * (g * xh).mean(axis=-1, keepdims=True))
    assert_inf_rel(dx, rdx, 1e-5, what="dx")
    assert_inf_rel(dgamma, (dy * xh).sum(axis=0), 1e-5, what="dgamma")
    assert_inf_rel(dbeta, dy.astype(np.float64).sum(axis=0), 1e-5, what="dbeta")


@pytest.mark.parametrize("rms_norm", [False, True], ids=["layernorm", "rmsnorm"])
def test_accumulate_adds(isa, rng, rms_norm):
    x, dy = normal(rng, (67, 96), 1, 2), normal(rng, (67, 96))
    _, mean, rstd = layernorm.forward(x, rms_norm=rms_norm)
    fresh = layernorm.backward(dy, x, mean, rstd, rms_norm=rms_norm)
    old = [normal(rng, a.shape, 0, 3) for a in fresh]
    acc = [a.copy() for a in old]
    got = layernorm.backward(dy, x, mean, rstd, rms_norm=rms_norm, out=tuple(acc),
                             accumulate=True)
    # As tests/test_kernel_strided_flags.c derives: adding the rounded or the unrounded fresh value
    # stays within u (|old| + 2 |fresh|) of old + fresh.
    for g, a, o, f in zip(got, acc, old, fresh):
        assert g is a
        want = o.astype(np.float64) + f
        assert np.all(np.abs(g - want) <= U * (np.abs(o) + 2.0001 * np.abs(f)))
    with pytest.raises(ValueError, match="accumulate"):
        layernorm.backward(dy, x, mean, rstd, accumulate=True)


@pytest.mark.parametrize("rms_norm", [False, True], ids=["layernorm", "rmsnorm"])
def test_add_forward_is_forward_of_the_sum(isa, rng, rms_norm):
    x, res = normal(rng, (2, 5, 768)), normal(rng, (2, 5, 768), 0, 4)
    gamma, beta = normal(rng, 768, 1, 0.2), normal(rng, 768)
    s_want = x + res  # float32 addition, as the header defines s
    y_want, m_want, r_want = layernorm.forward(s_want, gamma, beta, rms_norm=rms_norm)
    y, s, m, r = layernorm.add_forward(x, res, gamma, beta, sum_out=res, rms_norm=rms_norm)
    # The header: y equals ln_forward_f32 applied to the s this function computes.
    assert s is res and np.array_equal(s, s_want)
    assert np.array_equal(y, y_want) and np.array_equal(m, m_want) and np.array_equal(r, r_want)


def test_ext_errors(rng):
    x = normal(rng, (4, 16))
    with pytest.raises(ValueError, match="evenly spaced rows"):
        layernorm.forward(normal(rng, (4, 32))[:, ::2])
    with pytest.raises(ValueError, match="evenly spaced rows"):
        layernorm.forward(normal(rng, (4, 3, 16))[:, ::2, :])
    big = normal(rng, (4, 17))
    with pytest.raises(layernorm.AliasError):  # out rows overlap x's rows but not exactly
        layernorm.forward(big[:, :16], out=big[:, 1:])
    with pytest.raises(TypeError, match="float32"):
        layernorm.add_forward(x, x.astype(np.float64))
    assert layernorm.FlagsError.code == 7
    with pytest.raises(layernorm.FlagsError):
        layernorm._lib.call("ln_forward_ex_f32", x.ctypes.data, 16, None, None,
                            x.ctypes.data, 16, None, None, 4, 16, 1e-5, 0x80)
