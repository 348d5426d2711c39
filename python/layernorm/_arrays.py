"""_arrays.py - argument checks: float32, C-contiguous, aligned, right shape; never a copy."""
import math

import numpy as np


def check(name, a, shape=None, writable=False):
    """`a` itself if the C library can use its memory as is; otherwise a clear error.
    Nothing is converted: a silent astype() would hide a copy and, for outputs, lose the
    result."""
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray of float32, got {type(a).__name__}")
    if a.dtype != np.float32:  # also rejects non-native byte order ('>f4')
        raise TypeError(f"{name} must have dtype float32 (native byte order), got {a.dtype}; "
                        f"convert explicitly, e.g. {name}.astype(numpy.float32)")
    if not a.flags.c_contiguous:
        raise ValueError(f"{name} must be C-contiguous; use numpy.ascontiguousarray({name})")
    if not a.flags.aligned:
        raise ValueError(f"{name} is not aligned to 4 bytes")
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{name} has shape {a.shape}, expected {tuple(shape)}")
    if writable and not a.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return a


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
