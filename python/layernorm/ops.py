"""ops.py - forward, backward and add_forward over the last axis of arrays of any rank."""
import numpy as np

from . import _lib
from ._arrays import check, optional, ptr, real, row_stride, rows_cols


def _flags(rms_norm, accumulate=False):
    return (_lib.FLAG_RMS_NORM if rms_norm else 0) | (_lib.FLAG_ACCUMULATE if accumulate else 0)


def forward(x, gamma=None, beta=None, eps=1e-5, out=None, *, rms_norm=False):
    """LayerNorm over the last axis: returns (y, mean, rstd).

    x: float32, shape (..., cols), C-contiguous or a slice of a wider array's last axis.
    gamma, beta: (cols,) or None (ones, zeros). out: where y goes (shape of x; may be x
    itself, in place; may be a view like x), else a new array. mean, rstd have shape
    x.shape[:-1] and are what backward() needs. rms_norm=True computes RMSNorm (no
    centering; mean is returned as zeros). Views and rms_norm need liblayernorm 1.1.
    No argument is copied or converted: wrong dtype -> TypeError, wrong layout/shape ->
    ValueError, a status from the library -> its LayerNormError subclass.
    """
    ldx = row_stride("x", x)
    rows, cols = rows_cols("x", x)
    gamma = optional("gamma", gamma, (cols,))
    beta = optional("beta", beta, (cols,))
    eps = real("eps", eps)
    if out is None:
        out = np.empty(x.shape, np.float32)
    ldy = row_stride("out", out, x.shape, writable=True)
    mean = np.empty(x.shape[:-1], np.float32)
    rstd = np.empty(x.shape[:-1], np.float32)
    if ldx == ldy == cols and not rms_norm:  # the 1.0 entry point: runs on any 1.x
        _lib.call("ln_forward_f32", ptr(x), ptr(gamma), ptr(beta), ptr(out), ptr(mean),
                  ptr(rstd), rows, cols, eps)
    else:
        _lib.call("ln_forward_ex_f32", ptr(x), ldx, ptr(gamma), ptr(beta), ptr(out), ldy,
                  ptr(mean), ptr(rstd), rows, cols, eps, _flags(rms_norm))
    return out, mean, rstd


def backward(dy, x, mean, rstd, gamma=None, *, rms_norm=False, out=None, accumulate=False):
    """Gradients of forward(): returns (dx, dgamma, dbeta).

    dy, x: shape (..., cols), C-contiguous or last-axis slices; mean, rstd: shape
    x.shape[:-1], as forward() returned them (mean may be None with rms_norm); gamma:
    (cols,) or None. dgamma and dbeta are summed over all rows (zeros when there are none)
    and are bitwise reproducible. out=(dx, dgamma, dbeta) writes into given arrays;
    accumulate=True adds to them instead (micro-batch gradient accumulation). rms_norm,
    views, out and accumulate need liblayernorm 1.1.
    """
    ldx = row_stride("x", x)
    rows, cols = rows_cols("x", x)
    lddy = row_stride("dy", dy, x.shape)
    if mean is not None or not rms_norm:
        check("mean", mean, x.shape[:-1])
    check("rstd", rstd, x.shape[:-1])
    gamma = optional("gamma", gamma, (cols,))
    if out is None:
        if accumulate:
            raise ValueError("accumulate=True needs out=(dx, dgamma, dbeta) to add to")
        # Zeroed sums: with no rows the library writes nothing, and the sums are then 0.
        dx, dgamma, dbeta = (np.empty(x.shape, np.float32), np.zeros(cols, np.float32),
                             np.zeros(cols, np.float32))
    else:
        dx, dgamma, dbeta = out
        check("dgamma", dgamma, (cols,), writable=True)
        check("dbeta", dbeta, (cols,), writable=True)
    lddx = row_stride("dx", dx, x.shape, writable=True)
    if ldx == lddy == lddx == cols and not (rms_norm or accumulate):  # 1.0 suffices
        _lib.call("ln_backward_f32", ptr(dy), ptr(x), ptr(gamma), ptr(mean), ptr(rstd),
                  ptr(dx), ptr(dgamma), ptr(dbeta), rows, cols)
    else:
        _lib.call("ln_backward_ex_f32", ptr(dy), lddy, ptr(x), ldx, ptr(gamma), ptr(mean),
                  ptr(rstd), ptr(dx), lddx, ptr(dgamma), ptr(dbeta), rows, cols,
                  _flags(rms_norm, accumulate))
    return dx, dgamma, dbeta


def add_forward(x, residual, gamma=None, beta=None, eps=1e-5, *, out=None, sum_out=None,
                rms_norm=False):
    """The pre-LN block in one pass: s = x + residual, y = LayerNorm(s) (or RMSNorm).
    Returns (y, s, mean, rstd). All arrays C-contiguous of x's shape; sum_out may be
    `residual` (write the residual stream back) and out may be x. Needs liblayernorm 1.1.
    """
    check("x", x)
    rows, cols = rows_cols("x", x)
    check("residual", residual, x.shape)
    gamma = optional("gamma", gamma, (cols,))
    beta = optional("beta", beta, (cols,))
    eps = real("eps", eps)
    out = np.empty(x.shape, np.float32) if out is None else check("out", out, x.shape, True)
    s = np.empty(x.shape, np.float32) if sum_out is None else check("sum_out", sum_out,
                                                                   x.shape, True)
    mean = np.empty(x.shape[:-1], np.float32)
    rstd = np.empty(x.shape[:-1], np.float32)
    _lib.call("ln_add_forward_f32", ptr(x), ptr(residual), ptr(gamma), ptr(beta), ptr(s),
              ptr(out), ptr(mean), ptr(rstd), rows, cols, eps, _flags(rms_norm))
    return out, s, mean, rstd
