"""test_bf16_gelu.py - the 1.3 entry points through the binding: bf16 LayerNorm and GELU."""
import math

import numpy as np
import pytest
from conftest import forward_tau

import layernorm

pytestmark = pytest.mark.skipif(not layernorm.has("ln_forward_bf16"),
                                reason="liblayernorm < 1.3: no bf16 / GELU entry points")


def bf16_ulp(v):
    """One bf16 ulp at v (8 significant bits), as tests/test_bf16.c."""
    _, e = np.frexp(np.maximum(np.abs(v), 2.0 ** -126))
    return np.ldexp(1.0, e - 8)


def test_conversions_round_to_nearest_even():
    # ties to even (down, up), above a tie, Inf, -0, the largest float (rounds to Inf)
    f = np.array([0x3F808000, 0x3F818000, 0x3F808001, 0x7F800000, 0x80000000, 0x7F7FFFFF],
                 np.uint32).view(np.float32)
    assert layernorm.to_bf16(f).tolist() == [0x3F80, 0x3F82, 0x3F81, 0x7F80, 0x8000, 0x7F80]
    h = layernorm.to_bf16(np.array([np.nan], np.float32))
    assert np.isnan(layernorm.from_bf16(h)).all() and h[0] & 0x40


@pytest.mark.parametrize("cols", [1, 7, 33, 768, 1000])
def test_forward_backward_against_float(isa, rng, cols):
    # The contract: the float LayerNorm of the widened inputs, rounded; so y is within the
    # f32 bound plus one bf16 ulp of the float path's result (tests/test_bf16.c derives it).
    x = layernorm.to_bf16(rng.standard_normal((3, 2, cols)).astype(np.float32) * 2 + 0.5)
    gamma = rng.standard_normal(cols).astype(np.float32)
    beta = rng.standard_normal(cols).astype(np.float32)
    y, mean, rstd = layernorm.forward_bf16(x, gamma, beta)
    xf = layernorm.from_bf16(x)
    yf, mf, rf = layernorm.forward(xf, gamma, beta)
    xhat = (xf - mf[..., None]) * rf[..., None]
    tol = bf16_ulp(yf) + 2 * forward_tau(cols) * (1 + np.abs(gamma * xhat) + np.abs(beta))
    assert (np.abs(layernorm.from_bf16(y) - yf) <= tol).all()
    dy = layernorm.to_bf16(rng.standard_normal(x.shape).astype(np.float32))
    dx, dg, db = layernorm.backward_bf16(dy, x, mean, rstd, gamma)
    dxf, dgf, dbf = layernorm.backward(layernorm.from_bf16(dy), xf, mean, rstd, gamma)
    scale = np.abs(dgf).max() + np.abs(dbf).max() + 1
    assert np.abs(dg - dgf).max() <= 2e-5 * scale and np.abs(db - dbf).max() <= 2e-5 * scale
    assert dx.dtype == np.uint16 and np.isfinite(layernorm.from_bf16(dx)).all()
    y2, _, _ = layernorm.forward_bf16(x, gamma, beta, out=x)  # in place
    assert y2 is x and np.array_equal(x, y)


def ref_gelu(x, kind):
    """float64 references without cancellation (as the C oracle)."""
    x = x.astype(np.float64)
    if kind == "erf":
        return 0.5 * x * np.array([math.erfc(-v / math.sqrt(2)) for v in x.ravel()]).reshape(x.shape)
    w = 2 * math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)
    return x / (1 + np.exp(-w))


@pytest.mark.parametrize("kind", ["tanh", "erf"])
def test_gelu(isa, rng, kind):
    # 4 ulp (the header's figure) for |f| >= 2^-100; here x in [-8, 8], |f| > 1e-16.
    x = np.linspace(-8, 8, 4001, dtype=np.float32).reshape(4001, 1)
    y = layernorm.gelu(x, kind)
    ref = ref_gelu(x, kind)
    ulp = np.ldexp(1.0, np.frexp(ref)[1] - 24)
    assert (np.abs(y - ref) <= 4 * ulp).all()
    dy = rng.standard_normal(x.shape).astype(np.float32)
    dx = layernorm.gelu_backward(dy, x, kind)
    h = 2.0 ** -12  # central differences of the float64 reference: error ~h^2 + 1e-16/h
    fd = (ref_gelu(x + h, kind) - ref_gelu(x - h, kind)) / (2 * h)
    assert np.abs(dx - dy * fd).max() <= 1e-5 * np.abs(dy).max()
    out = x.copy()
    assert layernorm.gelu(out, kind, out=out) is out and np.array_equal(out, y)


def test_gelu_errors():
    x = np.ones(8, np.float32)
    with pytest.raises(layernorm.KindError):
        layernorm.gelu(x, 2)
    with pytest.raises(ValueError):
        layernorm.gelu(x, "relu")
    with pytest.raises(layernorm.AliasError):
        layernorm.gelu(x[:7], out=x[1:])
    with pytest.raises(TypeError):
        layernorm.forward_bf16(x)
