"""bf16_gelu.py - the 1.3 entry points: bf16 LayerNorm on uint16 bit arrays, and GELU."""
import numpy as np

from . import _lib
from ._arrays import check, optional, ptr, real, rows_cols

_U16 = np.dtype(np.uint16)


def _bits(name, a, shape=None, writable=False):
    """bf16 data as numpy has no bf16 dtype: a C-contiguous uint16 array of the raw bits
    (e.g. to_bf16(x), or a torch bfloat16 tensor's .view(torch.int16).numpy().view(uint16))."""
    if not isinstance(a, np.ndarray) or a.dtype != _U16:
        raise TypeError(f"{name} must be a numpy.ndarray of uint16 (bf16 bits), got "
                        f"{getattr(a, 'dtype', type(a).__name__)}; see layernorm.to_bf16")
    if not a.flags.c_contiguous or not a.flags.aligned:
        raise ValueError(f"{name} must be C-contiguous and aligned")
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{name} has shape {a.shape}, expected {tuple(shape)}")
    if writable and not a.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return a


def to_bf16(x):
    """float32 array -> uint16 bf16 bits, rounded to nearest-even as the library rounds
    (NaN stays a quiet NaN)."""
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    rne = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, ((u >> 16) | 0x40).astype(np.uint16), rne)


def from_bf16(h):
    """uint16 bf16 bits -> float32 (exact)."""
    return (np.ascontiguousarray(h, np.uint16).astype(np.uint32) << 16).view(np.float32)


def forward_bf16(x, gamma=None, beta=None, eps=1e-5, out=None):
    """bf16 LayerNorm over the last axis: returns (y, mean, rstd); x, y are uint16 bf16
    bits (C-contiguous, out may be x), gamma/beta float32 (cols,) or None, mean/rstd
    float32. Sums are float32; y is the float LayerNorm of the widened x rounded to bf16."""
    _bits("x", x)
    rows, cols = rows_cols("x", x)
    gamma = optional("gamma", gamma, (cols,))
    beta = optional("beta", beta, (cols,))
    out = np.empty(x.shape, _U16) if out is None else _bits("out", out, x.shape, True)
    mean = np.empty(x.shape[:-1], np.float32)
    rstd = np.empty(x.shape[:-1], np.float32)
    _lib.call("ln_forward_bf16", ptr(x), ptr(gamma), ptr(beta), ptr(out), ptr(mean),
              ptr(rstd), rows, cols, real("eps", eps))
    return out, mean, rstd


def backward_bf16(dy, x, mean, rstd, gamma=None, out=None):
    """Gradients of forward_bf16(): returns (dx, dgamma, dbeta); dy, x, dx uint16 bf16 bits
    (dx may be dy), dgamma/dbeta float32 sums over all rows, bitwise reproducible."""
    _bits("x", x)
    rows, cols = rows_cols("x", x)
    _bits("dy", dy, x.shape)
    check("mean", mean, x.shape[:-1])
    check("rstd", rstd, x.shape[:-1])
    gamma = optional("gamma", gamma, (cols,))
    dx = np.empty(x.shape, _U16) if out is None else _bits("out", out, x.shape, True)
    dgamma, dbeta = np.zeros(cols, np.float32), np.zeros(cols, np.float32)
    _lib.call("ln_backward_bf16", ptr(dy), ptr(x), ptr(gamma), ptr(mean), ptr(rstd), ptr(dx),
              ptr(dgamma), ptr(dbeta), rows, cols)
    return dx, dgamma, dbeta


def _kind(kind):
    """"tanh" (GPT-2) or "erf" -> the C value; any other value goes to the library as is,
    which answers LN_ERR_KIND (KindError)."""
    return _lib.GELU_KINDS.get(kind, kind) if isinstance(kind, str) else int(kind)


def gelu(x, kind="tanh", out=None):
    """GELU of a float32 array, elementwise (any shape, C-contiguous); out may be x."""
    check("x", x)
    out = np.empty(x.shape, np.float32) if out is None else check("out", out, x.shape, True)
    if isinstance(kind, str) and kind not in _lib.GELU_KINDS:
        raise ValueError(f"kind must be one of {sorted(_lib.GELU_KINDS)}, got {kind!r}")
    _lib.call("ln_gelu_forward_f32", ptr(x), ptr(out), x.size, _kind(kind))
    return out


def gelu_backward(dy, x, kind="tanh", out=None):
    """dx = dy * GELU'(x), float32, elementwise; out may be dy or x."""
    check("x", x)
    check("dy", dy, x.shape)
    out = np.empty(x.shape, np.float32) if out is None else check("out", out, x.shape, True)
    if isinstance(kind, str) and kind not in _lib.GELU_KINDS:
        raise ValueError(f"kind must be one of {sorted(_lib.GELU_KINDS)}, got {kind!r}")
    _lib.call("ln_gelu_backward_f32", ptr(dy), ptr(x), ptr(out), x.size, _kind(kind))
    return out
