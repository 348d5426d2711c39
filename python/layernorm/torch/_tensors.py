"""_tensors.py - what layernorm.torch accepts (CPU float32/bfloat16) and how the C API sees it."""
import math
import numbers

import torch

from ..errors import ShapeError

SUPPORTED = "CPU tensors of dtype torch.float32 or torch.bfloat16"
F32 = (torch.float32,)
F32_BF16 = (torch.float32, torch.bfloat16)


def _dtype_names(dtypes):
    return " or ".join(str(d) for d in dtypes)


def check_tensor(name, t, dtypes=F32_BF16, why=""):
    """Rejects what the library cannot compute on, naming what it can: another device
    (ValueError), a sparse or other non-strided layout (ValueError), another dtype
    (TypeError). Never converts: a silent .float() or .cpu() would be a hidden fallback."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type != "cpu":
        raise ValueError(f"{name} is on device '{t.device}': layernorm.torch runs on "
                         f"{SUPPORTED} only (use torch.nn on other devices)")
    if t.layout != torch.strided:
        raise ValueError(f"{name} has layout {t.layout}: layernorm.torch needs dense "
                         f"(torch.strided) {SUPPORTED}")
    if t.dtype not in dtypes:
        raise TypeError(f"{name} has dtype {t.dtype}: this operation supports "
                        f"{_dtype_names(dtypes)} on the CPU{why}; convert explicitly, e.g. "
                        f"{name}.to(torch.float32)")
    return t


def check_shape(x, normalized_shape):
    """normalized_shape as a tuple, after checking that it names x's trailing dims."""
    if isinstance(normalized_shape, numbers.Integral):
        normalized_shape = (normalized_shape,)
    shape = tuple(int(n) for n in normalized_shape)
    k = len(shape)
    if k == 0 or x.dim() < k or tuple(x.shape[x.dim() - k:]) != shape:
        raise ValueError(f"normalized_shape={list(shape)} must name the trailing dimensions "
                         f"of the input, whose size is {list(x.shape)}")
    if math.prod(shape) == 0:  # the C API's cols == 0 (torch would return an empty tensor)
        raise ShapeError(2, f"normalized_shape={list(shape)} has no elements (cols == 0)")
    return shape


def check_eps(eps):
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise TypeError(f"eps must be a real number, got {type(eps).__name__}")
    return float(eps)  # NaN, Inf or < 0: the library answers EpsError (a ValueError)


def check_param(name, p, x, shape):
    """A weight or bias: None, or a CPU tensor of the normalized shape. The C API takes
    float32 gamma/beta for both input dtypes, so a bfloat16 parameter of a bfloat16 input
    is widened (exactly; cols values, not the input); other mixes are refused, as torch
    refuses them."""
    if p is None:
        return None
    allowed = F32_BF16 if x.dtype == torch.bfloat16 else F32
    check_tensor(name, p, allowed, f" with a {x.dtype} input")
    if tuple(p.shape) != shape:
        raise ValueError(f"{name} has shape {list(p.shape)}, expected {list(shape)}")
    return p.detach().to(torch.float32).contiguous()


def as_rows(t, k, strided_ok):
    """(tensor, rows, cols, ld): t seen as `rows` rows of `cols` elements (the last k dims
    flattened), row r at element r * ld. No copy when the last k dims are contiguous and
    the rows evenly spaced (a contiguous tensor, or a slice of a wider last dimension) and
    the caller can pass a row stride (`strided_ok`, the float32 `_ex` entry points);
    anything else is copied with .contiguous(), and then ld == cols."""
    rows = math.prod(t.shape[:t.dim() - k])
    cols = math.prod(t.shape[t.dim() - k:])
    if t.is_contiguous() or rows == 0 or cols == 0:
        return t.contiguous(), rows, cols, cols
    if strided_ok:
        inner = 1
        dense = True
        for n, s in zip(reversed(t.shape[t.dim() - k:]), reversed(t.stride()[t.dim() - k:])):
            dense = dense and (n == 1 or s == inner)
            inner *= n
        lead = [(n, s) for n, s in zip(t.shape[:t.dim() - k], t.stride()[:t.dim() - k])
                if n != 1]
        ld = lead[-1][1] if lead else cols
        nested = all(s == s_in * n_in for (_, s), (n_in, s_in) in zip(lead, lead[1:]))
        if dense and nested and ld >= cols:
            return t, rows, cols, ld
    return t.contiguous(), rows, cols, cols


def ptr(t):
    """The address a C function gets (None is NULL)."""
    return None if t is None else t.data_ptr()
