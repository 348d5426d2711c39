"""test_torch_bf16.py - layernorm.torch.LayerNorm on bfloat16 tensors (the bf16 kernels)."""
import numpy as np
import pytest

import layernorm

torch = pytest.importorskip("torch", reason="torch not installed (Debian python3-torch)")
import layernorm.torch as lt  # noqa: E402  (only with torch)
from torchref import (backward_bounds, bf16_ulp, f64, forward_bound, max_err, rows,  # noqa: E402
                      stats)

pytestmark = pytest.mark.skipif(not layernorm.has("ln_forward_bf16"),
                                reason="liblayernorm < 1.3: no bf16 entry points")


def problem(rng, xshape, param_dtype, affine="both"):
    x = torch.from_numpy((0.5 + 2 * rng.standard_normal(xshape)).astype(np.float32))
    dy = torch.from_numpy(rng.standard_normal(xshape).astype(np.float32))
    shape = xshape[-1:]
    m = lt.LayerNorm(shape, elementwise_affine=affine != "none", bias=affine == "both")
    with torch.no_grad():
        if m.weight is not None:
            m.weight.copy_(torch.from_numpy(1 + 0.5 * rng.standard_normal(shape)))
        if m.bias is not None:
            m.bias.copy_(torch.from_numpy(rng.standard_normal(shape)))
    return x.bfloat16(), dy.bfloat16(), m.to(param_dtype)


def grads(m, x, dy):
    xx = x.clone().requires_grad_()
    y = m(xx)
    return (y.detach(),) + torch.autograd.grad(y, [xx] + list(m.parameters()), dy)


@pytest.mark.parametrize("param_dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("affine", ["both", "weight", "none"])
@pytest.mark.parametrize("xshape", [(4, 16, 768), (3, 33)], ids=str)
def test_bf16_against_float64(isa, rng, xshape, param_dtype, affine):
    x, dy, m = problem(rng, xshape, param_dtype, affine)
    y, *g = grads(m, x, dy)
    assert y.dtype == g[0].dtype == torch.bfloat16
    assert all(p.dtype == param_dtype for p in g[1:])
    # The reference: torch's float64 LayerNorm of the same bf16 values (widened exactly)
    # with the module's own (possibly bf16-rounded) parameters.
    X, DY = rows(x, 1), rows(dy, 1)
    w = None if m.weight is None else f64(m.weight).numpy()
    b = None if m.bias is None else f64(m.bias).numpy()
    y64 = torch.nn.functional.layer_norm(f64(x), xshape[-1:], None if w is None else f64(
        m.weight), None if b is None else f64(m.bias)).numpy().reshape(X.shape)
    _, _, xhat = stats(X, False)
    exact = (1.0 if w is None else w) * xhat + (0.0 if b is None else b)
    assert np.abs(y64 - exact).max() <= 1e-12 * (1 + np.abs(exact).max())
    # The header: the float LayerNorm of the widened inputs (within the float contract,
    # fb) rounded within one bf16 ulp of where it lands.
    fb = forward_bound(X, w, b)
    assert (np.abs(rows(y, 1) - exact) <= bf16_ulp(np.abs(exact) + fb) + fb).all()
    # Backward: the float contract given the saved float statistics (the same as the
    # float32 forward's on the widened x: the bf16 kernel widens, then runs the float
    # body), dx rounded to bf16 (one ulp), and bf16 parameters' gradients rounded too.
    _, mean, rstd = layernorm.forward(X.astype(np.float32))
    bounds = backward_bounds(DY, X, w, mean, rstd, False)
    for i, (got, (e, bound)) in enumerate(zip(g, bounds)):
        rounded = i == 0 or param_dtype == torch.bfloat16
        tol = bound + (bf16_ulp(np.abs(e) + bound) if rounded else 0)
        assert (np.abs(f64(got).numpy().reshape(e.shape) - e) <= tol).all(), f"output {i}"


def test_bf16_is_the_numpy_binding_bit_for_bit(rng):
    """The same bits as layernorm.forward_bf16/backward_bf16 on the raw uint16 data, and
    the caller's memory is what the library reads (no copy of a contiguous input)."""
    x, dy, m = problem(rng, (5, 64), torch.float32)
    y, dx, dw, db = grads(m, x, dy)
    bits = x.view(torch.int16).numpy().view(np.uint16)
    gamma, beta = m.weight.detach().numpy(), m.bias.detach().numpy()
    y_np, mean, rstd = layernorm.forward_bf16(bits, gamma, beta)
    assert np.array_equal(y.view(torch.int16).numpy().view(np.uint16), y_np)
    dx_np, dw_np, db_np = layernorm.backward_bf16(dy.view(torch.int16).numpy().view(
        np.uint16), bits, mean, rstd, gamma)
    assert np.array_equal(dx.view(torch.int16).numpy().view(np.uint16), dx_np)
    assert np.array_equal(dw.numpy(), dw_np) and np.array_equal(db.numpy(), db_np)
    seen = []
    real_call = layernorm._lib.call
    layernorm._lib.call = lambda name, *a: (seen.append((name, a[0])), real_call(name, *a))[1]
    try:
        m(x)
        m(x.t().contiguous().t())  # non-contiguous: the bf16 entry point takes no stride
    finally:
        layernorm._lib.call = real_call
    assert seen[0] == ("ln_forward_bf16", x.data_ptr()) and seen[1][1] != x.data_ptr()


def test_bf16_no_less_accurate_than_torch_bf16(rng):
    """torch 1.13's own bf16 LayerNorm (bf16 parameters; it refuses float32 ones) against
    the same float64 reference: ours is at least as close on every output (measured:
    roughly 2x closer in y and dx, 10x in the parameter gradients)."""
    x, dy, m = problem(rng, (4, 16, 768), torch.bfloat16)
    ref = torch.nn.LayerNorm(768).bfloat16()
    ref.load_state_dict(m.state_dict())
    X, DY = rows(x, 1), rows(dy, 1)
    w, b = f64(m.weight).numpy(), f64(m.bias).numpy()
    _, mean, rstd = layernorm.forward(X.astype(np.float32))
    exact = [stats(X, False)[2] * w + b] + [e for e, _ in backward_bounds(DY, X, w, mean, rstd,
                                                                         False)]
    for ours, theirs, e in zip(grads(m, x, dy), grads(ref, x, dy), exact):
        assert max_err(ours, e) <= max_err(theirs, e)
