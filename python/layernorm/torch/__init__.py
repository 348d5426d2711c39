"""layernorm.torch - drop-in torch.nn LayerNorm, RMSNorm, GELU, AddLayerNorm on liblayernorm.

    from layernorm.torch import LayerNorm        # instead of torch.nn.LayerNorm
    ln = LayerNorm(768)                          # same parameters and state_dict keys

CPU float32 (and bfloat16 for LayerNorm) only; see layernorm.torch.functional for what
runs where and what is refused. The thread count is the library's own
(layernorm.set_num_threads, default 1), not torch.set_num_threads.
"""
import numbers

import torch

from .functional import add_layer_norm, gelu, layer_norm, rms_norm

__all__ = ["LayerNorm", "RMSNorm", "GELU", "AddLayerNorm", "layer_norm", "rms_norm", "gelu",
           "add_layer_norm"]


def _shape(normalized_shape):
    if isinstance(normalized_shape, numbers.Integral):
        return (int(normalized_shape),)
    return tuple(int(n) for n in normalized_shape)


class _Norm(torch.nn.Module):
    """Parameters as torch.nn.LayerNorm's: weight (ones) and bias (zeros) of
    normalized_shape, or None; so state_dicts load both ways."""

    def __init__(self, normalized_shape, eps, elementwise_affine, bias, device, dtype):
        super().__init__()
        self.normalized_shape = _shape(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        kw = {"device": device, "dtype": dtype}
        if elementwise_affine:
            self.weight = torch.nn.Parameter(torch.empty(self.normalized_shape, **kw))
            if bias:
                self.bias = torch.nn.Parameter(torch.empty(self.normalized_shape, **kw))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self):
        if self.weight is not None:
            torch.nn.init.ones_(self.weight)
        if self.bias is not None:
            torch.nn.init.zeros_(self.bias)

    def extra_repr(self):
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LayerNorm(_Norm):
    """torch.nn.LayerNorm(normalized_shape, eps, elementwise_affine, bias) on liblayernorm."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, bias, device, dtype)

    def forward(self, input):
        return layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


class RMSNorm(_Norm):
    """RMSNorm (LLaMA): x / sqrt(mean(x^2) + eps) * weight; parameter `weight` only."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, device=None,
                 dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, False, device, dtype)

    def forward(self, input):
        return rms_norm(input, self.normalized_shape, self.weight, self.eps)


class AddLayerNorm(_Norm):
    """forward(x, residual) -> (LayerNorm(x + residual), x + residual), one pass; the
    parameters and state_dict keys of torch.nn.LayerNorm."""

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__(normalized_shape, eps, elementwise_affine, bias, device, dtype)

    def forward(self, input, residual):
        return add_layer_norm(input, residual, self.normalized_shape, self.weight, self.bias,
                              self.eps)


class GELU(torch.nn.Module):
    """torch.nn.GELU(approximate="none" | "tanh") on liblayernorm (float32)."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
        self.approximate = approximate

    def forward(self, input):
        return gelu(input, self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"
