"""test_torch_modules.py - layernorm.torch's float32 modules vs torch.nn and float64 autograd."""
import numpy as np
import pytest

import layernorm

torch = pytest.importorskip("torch", reason="torch not installed (Debian python3-torch)")
import layernorm.torch as lt  # noqa: E402  (only with torch)
from test_bf16_gelu import ref_gelu  # noqa: E402
from torchref import (U, backward_bounds, f64, forward_bound, max_err, ref_rms_norm,  # noqa: E402
                      rows)

# (input shape, normalized_shape): one row of 768 (GPT-2 small), several trailing dims
# normalized as one row, a row of 1, an odd width that leaves SIMD tails.
CASES = [((4, 16, 768), (768,)), ((2, 3, 5, 7), (5, 7)), ((6, 1), (1,)), ((3, 1000), (1000,))]


def affine(ref, rng, bias=True):
    """torch.nn.LayerNorm with random weight and bias (ones/zeros would hide mix-ups)."""
    with torch.no_grad():
        ref.weight.copy_(torch.from_numpy(1 + 0.5 * rng.standard_normal(ref.weight.shape)))
        if bias:
            ref.bias.copy_(torch.from_numpy(rng.standard_normal(ref.bias.shape)))
    return ref


def run(module, x, dy, *extra):
    """Output and gradients (input, then each parameter) of module(x) with upstream dy."""
    x = x.detach().clone().requires_grad_()
    y = module(x, *extra)
    params = [p for p in module.parameters() if p.requires_grad]
    grads = torch.autograd.grad(y, [x] + params, dy)
    return y.detach(), grads


def check_norm(ours, ref64, x, dy, shape, rms):
    """Ours against the float64 torch module (= float64 autograd): forward contract and
    the backward contract given our saved statistics (read back from a plain forward)."""
    k = len(shape)
    y, grads = run(ours, x, dy)
    y64, grads64 = run(ref64, f64(x), f64(dy))
    X, DY = rows(x, k), rows(dy, k)
    w = None if ours.weight is None else f64(ours.weight).numpy().ravel()
    b = None if getattr(ours, "bias", None) is None else f64(ours.bias).numpy().ravel()
    fb = forward_bound(X, w, b, rms)
    # torch's float64 result differs from the exact by ~1e-16 relative: 1e-12 covers it.
    assert (np.abs(rows(y, k) - rows(y64, k)) <= fb + 1e-12).all()
    _, mean, rstd = layernorm.forward(X.astype(np.float32), None, None, rms_norm=rms)
    bounds = backward_bounds(DY, X, w, mean, rstd, rms)
    for name, got, g64, (exact, bound) in zip(("dx", "dweight", "dbias"), grads, grads64,
                                              bounds):
        assert max_err(g64, exact) <= 1e-9 * (1 + np.abs(exact).max()), f"reference {name}"
        assert max_err(got, exact) <= bound, f"{name}: {max_err(got, exact):.3g} > {bound:.3g}"
    return y, grads



@pytest.mark.parametrize("xshape,shape", CASES, ids=str)
def test_layer_norm_against_torch_nn(isa, rng, xshape, shape):
    x = torch.from_numpy((0.5 + 2 * rng.standard_normal(xshape)).astype(np.float32))
    dy = torch.from_numpy(rng.standard_normal(xshape).astype(np.float32))
    ref = affine(torch.nn.LayerNorm(shape), rng)
    ours = lt.LayerNorm(shape)
    ours.load_state_dict(ref.state_dict())
    y, grads = check_norm(ours, ref.double(), x, dy, shape, rms=False)
    # Against torch.nn in float32: each result within its contract of the exact one (ours
    # above; torch's float32 kernels held to the same forward tau and, given its own
    # saved statistics, the same backward bound), so within the sum of both.
    k, X = len(shape), rows(x, len(shape))
    if X.shape[1] == 1:  # exact zeros (NUMERICS.md); torch's uncentered backward leaves
        assert not grads[0].any() and not grads[1].any()  # ~1e-5 here: not comparable
        return
    ref32 = ref.float()
    y32, grads32 = run(ref32, x, dy)
    fb = forward_bound(X, f64(ref.weight).numpy().ravel(), f64(ref.bias).numpy().ravel())
    assert (np.abs(rows(y, k) - rows(y32, k)) <= 2 * fb).all()
    _, mean, rstd = layernorm.forward(X.astype(np.float32))
    _, m_t, r_t = torch.ops.aten.native_layer_norm(x, shape, None, None, 1e-5)
    w = f64(ref.weight).numpy().ravel()
    ours_b = backward_bounds(rows(dy, k), X, w, mean, rstd, False)
    torch_b = backward_bounds(rows(dy, k), X, w, f64(m_t).numpy(), f64(r_t).numpy(), False)
    for got, theirs, (_, b1), (_, b2) in zip(grads, grads32, ours_b, torch_b):
        assert max_err(got, f64(theirs).numpy()) <= b1 + b2


@pytest.mark.parametrize("xshape,shape", CASES[:2], ids=str)
@pytest.mark.parametrize("affine_kind", ["no-affine", "no-bias"])
def test_layer_norm_without_parameters(rng, xshape, shape, affine_kind):
    x = torch.from_numpy(rng.standard_normal(xshape).astype(np.float32) * 3 - 1)
    dy = torch.from_numpy(rng.standard_normal(xshape).astype(np.float32))
    if affine_kind == "no-affine":
        ours, ref = lt.LayerNorm(shape, elementwise_affine=False), torch.nn.LayerNorm(
            shape, elementwise_affine=False)
        assert list(ours.state_dict()) == list(ref.state_dict()) == []
    else:  # torch 1.13 has no bias=False: its reference is the module with bias fixed at 0
        ours = lt.LayerNorm(shape, bias=False)
        ref = affine(torch.nn.LayerNorm(shape), rng, bias=False)
        ref.bias.requires_grad_(False)
        ours.weight.data.copy_(ref.weight.data)
        assert list(ours.state_dict()) == ["weight"] and ours.bias is None
    check_norm(ours, ref.double(), x, dy, shape, rms=False)


@pytest.mark.parametrize("xshape,shape", CASES, ids=str)
def test_rms_norm_against_float64_formula(isa, rng, xshape, shape):
    x = torch.from_numpy((0.5 + 2 * rng.standard_normal(xshape)).astype(np.float32))
    dy = torch.from_numpy(rng.standard_normal(xshape).astype(np.float32))
    ours = lt.RMSNorm(shape, eps=1e-5)
    assert list(ours.state_dict()) == ["weight"] and ours.eps == 1e-5
    with torch.no_grad():
        ours.weight.copy_(torch.from_numpy(1 + 0.5 * rng.standard_normal(shape)))

    class Ref(torch.nn.Module):  # the formula in float64, differentiated by autograd
        def __init__(self):
            super().__init__()
            self.weight = torch.nn.Parameter(f64(ours.weight).clone())

        def forward(self, v):
            return ref_rms_norm(v, shape, self.weight, 1e-5)

    check_norm(ours, Ref(), x, dy, shape, rms=True)


def test_add_layer_norm_against_torch_nn(rng):
    shape, xshape = (64,), (2, 16, 64)
    x, r, dy, ds = (torch.from_numpy(rng.standard_normal(xshape).astype(np.float32))
                    for _ in range(4))
    ref = affine(torch.nn.LayerNorm(shape), rng).double()
    ours = lt.AddLayerNorm(shape)
    ours.load_state_dict(ref.state_dict())
    ref.load_state_dict(ours.state_dict())  # both ways: the same keys
    leaves = [t.clone().requires_grad_() for t in (x, r)]
    y, s = ours(*leaves)
    assert torch.equal(s, x + r)  # the sum is one float addition, as torch's
    got = torch.autograd.grad((y, s), leaves + list(ours.parameters()), (dy, ds))
    # The contract: y is LayerNorm of the float32 sum s (checked equal to x + r above),
    # so the reference is torch's float64 LayerNorm of s; d/dx = d/dresidual = d/ds.
    s64 = f64(s).requires_grad_()
    y64 = ref(s64)
    want = torch.autograd.grad((y64, s64), [s64] + list(ref.parameters()), (f64(dy), f64(ds)))
    S, DY = rows(s, 1), rows(dy, 1)
    w, b = f64(ours.weight).numpy(), f64(ours.bias).numpy()
    assert (np.abs(rows(y, 1) - rows(y64, 1)) <= forward_bound(S, w, b) + 1e-12).all()
    _, mean, rstd = layernorm.forward(S.astype(np.float32))
    (edx, bdx), (edg, bdg), (edb, bdb) = backward_bounds(DY, S, w, mean, rstd, False)
    # LayerNorm's dx and ds added in float: one more rounding, u of the result.
    dsum = edx + rows(ds, 1)
    assert max_err(want[0], dsum) <= 1e-9 * (1 + np.abs(dsum).max())  # torch agrees
    for g in got[:2]:
        assert max_err(g, dsum) <= bdx + U * np.abs(dsum).max()
    assert torch.equal(got[0], got[1]) and got[0].data_ptr() != got[1].data_ptr()
    assert max_err(got[2], edg) <= bdg and max_err(got[3], edb) <= bdb
    # Only y used: the gradient is LayerNorm's alone (no materialized zeros added).
    g_y = torch.autograd.grad(ours(*leaves)[0], leaves[0], dy)[0]
    assert max_err(g_y, edx) <= bdx
    # Only s used: the gradient is ds itself.
    assert torch.equal(torch.autograd.grad(ours(*leaves)[1], leaves[1], ds)[0], ds)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_against_torch_nn(rng, approximate):
    # Inputs spanning GELU's range, |f| >= 2^-100 everywhere (the header's 4-ulp domain).
    wide = np.clip(3 * rng.standard_normal(999), -8, 8)
    x = torch.from_numpy(np.concatenate([np.linspace(-8, 8, 2001), wide]).astype(np.float32))
    x = x.reshape(3, 1000)
    dy = torch.from_numpy(rng.standard_normal((3, 1000)).astype(np.float32))
    ours, ref = lt.GELU(approximate), torch.nn.GELU(approximate=approximate)
    assert repr(ours) == repr(ref)
    y, (dx,) = run(ours, x, dy)
    X, DY = f64(x).numpy(), f64(dy).numpy()
    kind = {"none": "erf", "tanh": "tanh"}[approximate]
    exact = ref_gelu(X, kind)  # float64 without cancellation, for every x
    h = 2.0 ** -12  # central differences of it: error ~h^2 + 1e-16/h, far below the bounds
    dexact = DY * (ref_gelu(X + h, kind) - ref_gelu(X - h, kind)) / (2 * h)
    # Header: within 4 ulp (one float ulp at v is at most 2u|v|).
    y_bound = 4 * 2 * U * np.abs(exact)
    assert (np.abs(f64(y).numpy() - exact) <= y_bound).all()
    # The derivative: up to 11 ulp (x < -1; a few ulps of its terms near its zero) of its
    # terms' size, which is <= 2 for both forms, +1 ulp for the product with dy.
    dx_bound = 12 * 2 * U * 2 * np.abs(DY)
    assert (np.abs(f64(dx).numpy() - dexact) <= dx_bound).all()
    # torch.nn.GELU in float64 (= float64 autograd) forms 1 + erf / 1 + tanh, which
    # cancels for x << 0; for x > -3, where 1 + erf >= 0.0027, it is within 1e-12
    # relative, so ours is within the bounds above of it there.
    y64, (dx64,) = run(ref, f64(x), f64(dy))
    m = X > -3
    assert (np.abs(f64(y).numpy() - f64(y64).numpy())[m] <= (y_bound + 1e-12 * np.abs(
        exact))[m]).all()
    assert (np.abs(f64(dx).numpy() - f64(dx64).numpy())[m] <= (dx_bound + 1e-12 * np.abs(
        DY))[m]).all()
    # torch.nn.GELU in float32, everywhere: its 1 + erf (tanh) cancellation leaves an
    # absolute error of a few roundings of the terms' size |x|, allowed as 8u|x|
    # (measured up to 3.9u|x|); its derivative is held to our bound.
    y32, (dx32,) = run(ref, x, dy)
    assert (np.abs(f64(y).numpy() - f64(y32).numpy()) <= y_bound + 8 * U * np.abs(X)).all()
    assert (np.abs(f64(dx).numpy() - f64(dx32).numpy()) <= 2 * dx_bound).all()


def test_state_dict_round_trips(rng):
    shape = (3, 8)
    for ours, ref in [(lt.LayerNorm(shape), torch.nn.LayerNorm(shape)),
                      (lt.AddLayerNorm(shape), torch.nn.LayerNorm(shape))]:
        affine(ref, rng)
        ours.load_state_dict(ref.state_dict())
        back = torch.nn.LayerNorm(shape)
        back.load_state_dict(ours.state_dict())  # strict: the same keys, shapes, dtypes
        for a, b in zip(ref.state_dict().values(), back.state_dict().values()):
            assert torch.equal(a, b)
    model = torch.nn.Sequential(torch.nn.LayerNorm(8), torch.nn.Linear(8, 8))
    ours = torch.nn.Sequential(lt.LayerNorm(8), torch.nn.Linear(8, 8))
    ours.load_state_dict(model.state_dict())
    assert list(ours.state_dict()) == list(model.state_dict())
    assert repr(lt.LayerNorm(shape)) == repr(torch.nn.LayerNorm(shape))


def test_strided_input_is_not_copied(rng, monkeypatch):
    """A slice of a wider last dim (e.g. one of Q, K, V) goes to the library as is."""
    big = torch.from_numpy(rng.standard_normal((6, 3 * 64)).astype(np.float32))
    view = big[:, 64:128]
    seen = []
    real_call = layernorm._lib.call
    monkeypatch.setattr(layernorm._lib, "call", lambda name, *a: (seen.append((name, a)),
                                                                  real_call(name, *a))[1])
    y = lt.layer_norm(view, (64,))
    assert seen[0][0] == "ln_forward_ex_f32" and seen[0][1][:2] == (view.data_ptr(), 192)
    assert torch.allclose(y, lt.layer_norm(view.contiguous(), (64,)), rtol=0, atol=0)
    seen.clear()
    x = torch.from_numpy(rng.standard_normal((4, 32)).astype(np.float32))
    lt.layer_norm(x, (32,))
    assert seen[0][1][0] == x.data_ptr()  # contiguous: the caller's memory
    seen.clear()
    xt = x.t()  # normalized dim not contiguous: copied (documented), same result
    assert torch.equal(lt.layer_norm(xt, (4,)), lt.layer_norm(xt.contiguous(), (4,)))
    assert seen[0][1][0] != xt.data_ptr()
