"""test_torch_errors.py - what layernorm.torch refuses, by name; its threads are the library's."""
import numpy as np
import pytest

import layernorm

torch = pytest.importorskip("torch", reason="torch not installed (Debian python3-torch)")
import layernorm.torch as lt  # noqa: E402  (only with torch)

SUPPORTED = r"torch\.float32 or torch\.bfloat16"


def x32(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(7))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float16, torch.int32,
                                   torch.complex64], ids=str)
def test_other_dtypes_are_refused_by_name(dtype):
    x = x32(2, 8).to(dtype)
    with pytest.raises(TypeError, match=f"{dtype}.*{SUPPORTED}"):
        lt.LayerNorm(8)(x)
    with pytest.raises(TypeError, match=f"{dtype}.*torch.float32"):
        lt.GELU()(x)
    with pytest.raises(TypeError, match=str(dtype)):
        lt.RMSNorm(8)(x)
    with pytest.raises(TypeError, match=str(dtype)):
        lt.AddLayerNorm(8)(x, x)


def test_other_devices_and_layouts_are_refused():
    meta = torch.empty(2, 8, device="meta")  # stands for CUDA or any non-CPU device
    for call in (lambda: lt.layer_norm(meta, (8,)), lambda: lt.gelu(meta),
                 lambda: lt.rms_norm(meta, (8,)), lambda: lt.add_layer_norm(meta, meta, 8)):
        with pytest.raises(ValueError, match="device 'meta'.*CPU"):
            call()
    ln = lt.LayerNorm(8, device="meta")
    with pytest.raises(ValueError, match="weight is on device 'meta'"):
        ln(x32(2, 8))
    with pytest.raises(ValueError, match="layout"):
        lt.layer_norm(x32(2, 8).to_sparse(), (8,))
    with pytest.raises(TypeError, match="torch.Tensor"):
        lt.layer_norm(np.ones((2, 8), np.float32), (8,))


def test_bf16_where_the_c_api_has_no_bf16_kernel():
    xb = x32(2, 8).bfloat16()
    for call, what in [(lambda: lt.RMSNorm(8)(xb), "no bf16 RMSNorm"),
                       (lambda: lt.GELU("tanh")(xb), "no bf16 GELU"),
                       (lambda: lt.AddLayerNorm(8)(xb, xb), "float32 only")]:
        with pytest.raises(TypeError, match=what):
            call()
    # float32 input with bfloat16 parameters: torch refuses the mix too.
    with pytest.raises(TypeError, match="weight has dtype torch.bfloat16"):
        lt.LayerNorm(8).bfloat16()(x32(2, 8))
    with pytest.raises(TypeError, match="bias has dtype torch.float64"):
        lt.layer_norm(x32(2, 8), 8, torch.ones(8), torch.zeros(8, dtype=torch.float64))


def test_shapes_eps_and_arguments():
    x = x32(2, 3, 8)
    with pytest.raises(ValueError, match="normalized_shape"):
        lt.LayerNorm(7)(x)
    with pytest.raises(ValueError, match="normalized_shape"):
        lt.LayerNorm((2, 3, 8, 1))(x)
    with pytest.raises(ValueError, match="weight has shape"):
        lt.layer_norm(x, (8,), torch.ones(3, 8))
    with pytest.raises(ValueError, match="does not broadcast"):
        lt.add_layer_norm(x, x[:1], (8,))
    with pytest.raises(layernorm.EpsError):
        lt.LayerNorm(8, eps=-1.0)(x)
    with pytest.raises(ValueError):  # EpsError is a ValueError: NaN
        lt.rms_norm(x, (8,), eps=float("nan"))
    with pytest.raises(TypeError, match="eps"):
        lt.layer_norm(x, (8,), eps="1e-5")
    with pytest.raises(ValueError, match="approximate"):
        lt.GELU("erf")
    with pytest.raises(ValueError, match="approximate"):
        lt.gelu(x, "sigmoid")
    with pytest.raises(layernorm.ShapeError, match="cols == 0"):  # the C API's LN_ERR_SHAPE
        lt.layer_norm(torch.empty(3, 0), (0,))


def test_zero_rows_and_not_twice_differentiable():
    x = torch.empty(0, 8, requires_grad=True)
    m = lt.LayerNorm(8)
    m(x).sum().backward()
    assert x.grad.shape == (0, 8) and not m.weight.grad.any() and not m.bias.grad.any()
    x = x32(2, 8).requires_grad_()
    (g,) = torch.autograd.grad(lt.layer_norm(x, (8,)).pow(3).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="once_differentiable"):
        g.sum().backward()


@pytest.mark.skipif(not layernorm.has("ln_set_num_threads"),
                    reason="the loaded liblayernorm predates 1.2 (no threads)")
def test_threads_are_the_librarys_not_torchs():
    x = x32(512, 768).requires_grad_()  # above the library's two-thread thresholds
    m = lt.LayerNorm(768)
    t_before, ln_before = torch.get_num_threads(), layernorm.get_num_threads()
    try:
        results = []
        for torch_n, ln_n in [(1, 1), (4, 1), (1, 2), (3, 4)]:
            torch.set_num_threads(torch_n)
            assert layernorm.set_num_threads(ln_n) == ln_n
            assert torch.get_num_threads() == torch_n  # ours did not touch torch's
            torch.set_num_threads(torch_n + 1)
            assert layernorm.get_num_threads() == ln_n  # torch's did not touch ours
            y = m(x)
            results.append((y,) + torch.autograd.grad(y, [x, m.weight], y))
        for r in results[1:]:  # the library's promise: the same bits for any count
            assert all(torch.equal(a, b) for a, b in zip(results[0], r))
    finally:
        torch.set_num_threads(t_before)
        layernorm.set_num_threads(ln_before)
