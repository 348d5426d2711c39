"""functional.py - layer_norm, rms_norm, gelu, add_layer_norm on torch tensors via liblayernorm.

What runs where (the C API decides; nothing falls back to torch silently):

  op              float32                       bfloat16
  layer_norm      ln_forward_ex_f32 / _bwd_ex   ln_forward_bf16 / ln_backward_bf16
  rms_norm        the same with LN_FLAG_RMS     TypeError (no bf16 RMSNorm in the C API)
  add_layer_norm  ln_add_forward_f32            TypeError (no bf16 fused add)
  gelu            ln_gelu_forward_f32 / _bwd    TypeError (no bf16 GELU)

No copy of the input when its normalized (trailing) dims are contiguous: a contiguous
tensor, or for float32 also a slice of a wider last dim (rows passed with a row stride).
Other layouts, and any non-contiguous bfloat16 or add_layer_norm input (those C entry
points take no strides), are made contiguous first. weight/bias (gamma/beta) may be None
(NULL: ones/zeros); the C API takes them as float32, so bfloat16 parameters of a bfloat16
input are widened (exact) and their gradients rounded back to bfloat16. Float64, float16,
other devices and sparse tensors raise TypeError/ValueError naming what is supported.
Gradients: input, weight, bias (and residual) through the library's backward from the
forward's saved mean and rstd; not twice differentiable.
"""
from ._functions import AddNormFunction, GeluFunction, NormFunction
from ._tensors import F32, check_eps, check_param, check_shape, check_tensor

_GELU_KINDS = {"tanh": 0, "none": 1}  # torch's `approximate` -> LN_GELU_TANH / LN_GELU_ERF


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """torch.nn.functional.layer_norm on liblayernorm: the last len(normalized_shape)
    dims of `input` are normalized as one row (biased variance, eps inside the sqrt)."""
    check_tensor("input", input)
    shape = check_shape(input, normalized_shape)
    gamma = check_param("weight", weight, input, shape)
    beta = check_param("bias", bias, input, shape)
    return NormFunction.apply(input, weight, bias, gamma, beta, len(shape), check_eps(eps),
                              False)


def rms_norm(input, normalized_shape, weight=None, eps=1e-5):
    """RMSNorm: y = x / sqrt(mean(x^2) + eps) * weight over the trailing dims; float32."""
    check_tensor("input", input, F32, " (the C API has no bf16 RMSNorm)")
    shape = check_shape(input, normalized_shape)
    gamma = check_param("weight", weight, input, shape)
    return NormFunction.apply(input, weight, None, gamma, None, len(shape), check_eps(eps),
                              True)


def add_layer_norm(input, residual, normalized_shape, weight=None, bias=None, eps=1e-5):
    """(layer_norm(input + residual), input + residual) in one pass over memory, as a
    pre-LN block's second LayerNorm; float32, input and residual of the same shape."""
    why = " (the C API's fused add is float32 only)"
    check_tensor("input", input, F32, why)
    check_tensor("residual", residual, F32, why)
    if residual.shape != input.shape:
        raise ValueError(f"residual has size {list(residual.shape)}, input "
                         f"{list(input.shape)}: add_layer_norm does not broadcast")
    shape = check_shape(input, normalized_shape)
    gamma = check_param("weight", weight, input, shape)
    beta = check_param("bias", bias, input, shape)
    return AddNormFunction.apply(input, residual, weight, bias, gamma, beta, len(shape),
                                 check_eps(eps))


def gelu(input, approximate="none"):
    """torch.nn.functional.gelu: approximate="none" (erf form) or "tanh" (GPT-2); float32."""
    if approximate not in _GELU_KINDS:
        raise ValueError(f"approximate must be 'none' or 'tanh', got {approximate!r}")
    check_tensor("input", input, F32, " (the C API has no bf16 GELU)")
    return GeluFunction.apply(input, _GELU_KINDS[approximate])
