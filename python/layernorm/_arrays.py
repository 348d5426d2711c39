"""_arrays.py - argument checks: float32, aligned, right shape, usable in place; no copies."""
import math

import numpy as np

F32 = np.dtype(np.float32).itemsize


def _dtype_and_alignment(name, a):
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float32, got {type(a).__name__}")
    if a.dtype != np.float32:  # also rejects non-native byte order ('>f4')
        raise TypeError(f"{name} must have dtype float32 (native byte order), got {a.dtype}; "
                        f"convert explicitly, e.g. {name}.astype(numpy.float32)")
    if not a.flags.aligned:
        raise ValueError(f"{name} is not aligned to 4 bytes")


def _shape_and_writability(name, a, shape, writable):
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{name} has shape {a.shape}, expected {tuple(shape)}")
    if writable and not a.flags.writeable:
        raise ValueError(f"{name} is read-only")


def check(name, a, shape=None, writable=False):
    """`a` itself if the C library can use its memory as is (float32, C-contiguous);
    otherwise a clear error. Nothing is converted: a silent astype() would hide a copy
    and, for outputs, lose the result."""
    _dtype_and_alignment(name, a)
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous; use numpy.ascontiguousarray({name})")
    _shape_and_writability(name, a, shape, writable)
    return a


def row_stride(name, a, shape=None, writable=False):
    """The row stride, in floats, of an array whose last axis is contiguous and whose rows
    (all leading axes together) are evenly spaced: a C-contiguous array, or a slice of its
    last axis such as one head of a QKV buffer. The 1.1 `_ex` entry points take it as is."""
    _dtype_and_alignment(name, a)
    if a.ndim == 0:
        raise ValueError(f"{name} must have at least one axis (the normalized last axis)")
    _shape_and_writability(name, a, shape, writable)
    cols = a.shape[-1]
    if a.ndim == 1 or a.size == 0:
        return cols
    # Leading axes of length 1 take no part; the rest must nest like a C array of rows.
    lead = [(n, s) for n, s in zip(a.shape[:-1], a.strides[:-1]) if n != 1]
    step = lead[-1][1] if lead else cols * F32
    nested = all(s == s_in * n_in for (_, s), (n_in, s_in) in zip(lead, lead[1:]))
    if (cols > 1 and a.strides[-1] != F32) or not nested or step % F32 or step < cols * F32:
        raise ValueError(f"{name} must have a contiguous last axis and evenly spaced rows "
                         f"(a C-contiguous array or a slice of its last axis); got strides "
                         f"{a.strides}")
    return step // F32


def optional(name, a, shape):
    return None if a is None else check(name, a, shape)


def rows_cols(name, a):
    """The (rows, cols) a C call sees: the last axis is normalized, the others are rows."""
    if a.ndim == 0:
        raise ValueError(f"{name} must have at least one axis (the normalized last axis)")
    return math.prod(a.shape[:-1]), a.shape[-1]


def ptr(a):
    """The address the C function gets (None is NULL)."""
    return None if a is None else a.ctypes.data


def real(name, v):
    """A Python/NumPy real scalar as float (the C side takes a float)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, got {type(v).__name__}")
    return float(v)
