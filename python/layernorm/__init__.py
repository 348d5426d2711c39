"""layernorm - GPT-2 LayerNorm from liblayernorm.so.1 through ctypes; numpy arrays, no copies.

    import numpy as np, layernorm
    y, mean, rstd = layernorm.forward(x, gamma, beta)            # x: float32 (..., cols)
    dx, dgamma, dbeta = layernorm.backward(dy, x, mean, rstd, gamma)

The library is found through $LAYERNORM_LIBRARY, next to this package, the virtual
environment's lib/ or the system loader (its SONAME). PyTorch modules: layernorm.torch.
"""
from . import _lib
from ._version import __version__  # this package's version; the library's: library_version()
from .bf16_gelu import (backward_bf16, forward_bf16, from_bf16, gelu, gelu_backward,
                        to_bf16)
from .errors import (AliasError, EpsError, FlagsError, IsaError, KindError, LayerNormError,
                     NullPointerError, OutOfMemoryError, ShapeError)
from .isa import (available_isas, get_isa, isa_available, isa_id, isa_names, max_isa,
                  set_max_isa)
from .ops import add_forward, backward, forward
from .threads import get_num_threads, num_threads, set_num_threads

library_path = _lib.path
has = _lib.has  # has("ln_forward_ex_f32"): does the loaded library provide a C function?


def library_version():
    """(major, minor, patch) of the loaded library."""
    v = _lib.version
    return v // 10000, v // 100 % 100, v % 100


__all__ = ["forward", "backward", "add_forward", "has", "get_isa", "set_max_isa", "max_isa",
           "isa_available", "isa_names", "isa_id", "available_isas", "library_version", "library_path",
           "LayerNormError", "NullPointerError", "ShapeError", "EpsError", "AliasError",
           "IsaError", "OutOfMemoryError", "FlagsError", "get_num_threads", "set_num_threads",
           "num_threads", "KindError", "forward_bf16", "backward_bf16", "to_bf16", "from_bf16", "gelu", "gelu_backward"]
