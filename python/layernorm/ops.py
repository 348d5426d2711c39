"""ops.py - forward and backward over the last axis of arrays of any rank."""
import numpy as np

from . import _lib
from ._arrays import check, optional, ptr, real, rows_cols


def forward(x, gamma=None, beta=None, eps=1e-5, out=None):
    """LayerNorm over the last axis: returns (y, mean, rstd).

    x: float32 C-contiguous array, shape (..., cols). gamma, beta: (cols,) or None (ones,
    zeros). out: where y goes (shape of x; may be x itself, in place), else a new array.
    mean, rstd have shape x.shape[:-1] and are what backward() needs. No argument is
    copied or converted: wrong dtype -> TypeError, wrong layout/shape -> ValueError, and a
    status from the library -> its LayerNormError subclass (eps < 0 -> EpsError, ...).
    """
    check("x", x)
    rows, cols = rows_cols("x", x)
    gamma = optional("gamma", gamma, (cols,))
    beta = optional("beta", beta, (cols,))
    eps = real("eps", eps)
    if out is None:
        out = np.empty(x.shape, np.float32)
    else:
        check("out", out, x.shape, writable=True)
    mean = np.empty(x.shape[:-1], np.float32)
    rstd = np.empty(x.shape[:-1], np.float32)
    _lib.call("ln_forward_f32", ptr(x), ptr(gamma), ptr(beta), ptr(out), ptr(mean),
              ptr(rstd), rows, cols, eps)
    return out, mean, rstd


def backward(dy, x, mean, rstd, gamma=None):
    """Gradients of forward(): returns (dx, dgamma, dbeta).

    dy, x: shape (..., cols); mean, rstd: shape x.shape[:-1], as forward() returned them;
    gamma: (cols,) or None. dgamma and dbeta are summed over all rows (zeros when there are
    none) and are bitwise reproducible.
    """
    check("x", x)
    rows, cols = rows_cols("x", x)
    check("dy", dy, x.shape)
    check("mean", mean, x.shape[:-1])
    check("rstd", rstd, x.shape[:-1])
    gamma = optional("gamma", gamma, (cols,))
    dx = np.empty(x.shape, np.float32)
    dgamma = np.zeros(cols, np.float32)  # rows == 0 writes nothing; the sum is then 0
    dbeta = np.zeros(cols, np.float32)
    _lib.call("ln_backward_f32", ptr(dy), ptr(x), ptr(gamma), ptr(mean), ptr(rstd), ptr(dx),
              ptr(dgamma), ptr(dbeta), rows, cols)
    return dx, dgamma, dbeta
