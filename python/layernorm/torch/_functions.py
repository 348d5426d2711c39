"""_functions.py - autograd Functions: the library's forward (mean/rstd saved) and backward."""
import torch
from torch.autograd.function import once_differentiable

from .. import _lib
from ._tensors import as_rows, ptr

F32 = torch.float32  # explicit everywhere: torch's default dtype may have been changed
_FLAGS = {False: 0, True: _lib.FLAG_RMS_NORM}


def _grad_sums(cols, needed):
    """dgamma/dbeta buffers, or None (NULL: the library skips that sum)."""
    return torch.zeros(cols, dtype=F32) if needed else None


def _as_param_grad(g, shape, dtype):
    return None if g is None else g.view(shape).to(dtype)


def _norm_forward(x, gamma, beta, k, eps, rms):
    """(y, mean, rstd, x_rows, ld) of LayerNorm (or RMSNorm) over x's last k dims."""
    bf16 = x.dtype == torch.bfloat16
    xr, rows, cols, ld = as_rows(x, k, strided_ok=not bf16)
    y = torch.empty(x.shape, dtype=x.dtype)
    mean = torch.empty(rows, dtype=F32)
    rstd = torch.empty(rows, dtype=F32)
    if bf16:
        _lib.call("ln_forward_bf16", ptr(xr), ptr(gamma), ptr(beta), ptr(y), ptr(mean),
                  ptr(rstd), rows, cols, eps)
    else:
        _lib.call("ln_forward_ex_f32", ptr(xr), ld, ptr(gamma), ptr(beta), ptr(y), cols,
                  ptr(mean), ptr(rstd), rows, cols, eps, _FLAGS[rms])
    return y, mean, rstd, xr, ld


def _norm_backward(dy, xr, ld, gamma, mean, rstd, k, rms, want, dx=None):
    """(dx, dgamma, dbeta) as float32/bf16 tensors or None where `want` (x, gamma, beta)
    is false; a given float32 dx is added to (LN_FLAG_ACCUMULATE) instead of written."""
    rows, cols = rstd.numel(), xr.shape[xr.dim() - k:].numel()
    dgamma, dbeta = _grad_sums(cols, want[1]), _grad_sums(cols, want[2])
    if xr.dtype == torch.bfloat16:
        dyr = dy.contiguous()
        dx = torch.empty(xr.shape, dtype=xr.dtype) if want[0] else None
        _lib.call("ln_backward_bf16", ptr(dyr), ptr(xr), ptr(gamma), ptr(mean), ptr(rstd),
                  ptr(dx), ptr(dgamma), ptr(dbeta), rows, cols)
        return dx, dgamma, dbeta
    dyr, _, _, lddy = as_rows(dy, k, strided_ok=True)
    flags = _FLAGS[rms] | (_lib.FLAG_ACCUMULATE if dx is not None else 0)
    if dx is None and want[0]:
        dx = torch.empty(xr.shape, dtype=F32)
    _lib.call("ln_backward_ex_f32", ptr(dyr), lddy, ptr(xr), ld, ptr(gamma), ptr(mean),
              ptr(rstd), ptr(dx), cols, ptr(dgamma), ptr(dbeta), rows, cols, flags)
    return dx, dgamma, dbeta


class NormFunction(torch.autograd.Function):
    """y = LayerNorm(x) or RMSNorm(x) over the last k dims; weight/bias: the module's
    parameters (for the gradient's dtype), gamma/beta: their float32 values for C."""

    @staticmethod
    def forward(ctx, x, weight, bias, gamma, beta, k, eps, rms):
        y, mean, rstd, xr, ld = _norm_forward(x, gamma, beta, k, eps, rms)
        ctx.save_for_backward(xr, gamma, mean, rstd)
        ctx.k, ctx.rms, ctx.ld = k, rms, ld
        ctx.param_shape = x.shape[x.dim() - k:]
        ctx.dtypes = (None if weight is None else weight.dtype,
                      None if bias is None else bias.dtype)
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        xr, gamma, mean, rstd = ctx.saved_tensors
        want_x, want_w, want_b = ctx.needs_input_grad[:3]
        dx, dgamma, dbeta = _norm_backward(dy, xr, ctx.ld, gamma, mean, rstd, ctx.k, ctx.rms,
                                           (want_x, want_w, want_b))
        return (dx, _as_param_grad(dgamma, ctx.param_shape, ctx.dtypes[0]),
                _as_param_grad(dbeta, ctx.param_shape, ctx.dtypes[1]),
                None, None, None, None, None)


class AddNormFunction(torch.autograd.Function):
    """(LayerNorm(x + residual), x + residual) in one pass (ln_add_forward_f32)."""

    @staticmethod
    def forward(ctx, x, residual, weight, bias, gamma, beta, k, eps):
        x, residual = x.contiguous(), residual.contiguous()
        rows = x.shape[:x.dim() - k].numel()
        cols = x.shape[x.dim() - k:].numel()
        y, s = torch.empty(x.shape, dtype=F32), torch.empty(x.shape, dtype=F32)
        mean, rstd = torch.empty(rows, dtype=F32), torch.empty(rows, dtype=F32)
        _lib.call("ln_add_forward_f32", ptr(x), ptr(residual), ptr(gamma), ptr(beta),
                  ptr(s), ptr(y), ptr(mean), ptr(rstd), rows, cols, eps, 0)
        ctx.save_for_backward(s, gamma, mean, rstd)
        ctx.k, ctx.cols = k, cols
        ctx.param_shape = x.shape[x.dim() - k:]
        ctx.set_materialize_grads(False)  # an unused output's gradient stays None
        return y, s

    @staticmethod
    @once_differentiable
    def backward(ctx, dy, ds):
        s, gamma, mean, rstd = ctx.saved_tensors
        want_x, want_r, want_g, want_b = ctx.needs_input_grad[:4]
        # Both inputs get d(x + residual): the sum's own gradient plus LayerNorm's, which
        # the library adds to it (LN_FLAG_ACCUMULATE) instead of a second pass.
        ds = None if ds is None else ds.contiguous().clone()
        dx, dgamma, dbeta = None, None, None
        if dy is not None:
            dx, dgamma, dbeta = _norm_backward(dy, s, ctx.cols, gamma, mean, rstd, ctx.k,
                                               False, (want_x or want_r, want_g, want_b),
                                               dx=ds)
        else:
            dx = ds
        dr = dx.clone() if want_x and want_r and dx is not None else dx
        return (dx if want_x else None, dr if want_r else None,
                _as_param_grad(dgamma, ctx.param_shape, F32),
                _as_param_grad(dbeta, ctx.param_shape, F32),
                None, None, None, None)


class GeluFunction(torch.autograd.Function):
    """GELU elementwise (ln_gelu_forward_f32 / ln_gelu_backward_f32)."""

    @staticmethod
    def forward(ctx, x, kind):
        x = x.contiguous()
        y = torch.empty(x.shape, dtype=F32)
        _lib.call("ln_gelu_forward_f32", ptr(x), ptr(y), x.numel(), kind)
        ctx.save_for_backward(x)
        ctx.kind = kind
        return y

    @staticmethod
    @once_differentiable
    def backward(ctx, dy):
        (x,) = ctx.saved_tensors
        dy = dy.contiguous()
        dx = torch.empty(x.shape, dtype=F32)
        _lib.call("ln_gelu_backward_f32", ptr(dy), ptr(x), ptr(dx), x.numel(), ctx.kind)
        return dx, None
