"""torchref.py - float64 references and derived bounds for the layernorm.torch tests."""
import numpy as np
import torch
from conftest import forward_tau

U = 2.0 ** -24  # float32 unit roundoff
BACKWARD_REL = 1e-5  # the backward contract of test_torch.py (NUMERICS.md's 1e-6 per row, x10)


def f64(t):
    return t.detach().to(torch.float64)


def rows(t, k):
    """t as a float64 numpy (rows, cols) array: the last k dims are one row."""
    a = f64(t).numpy()
    return a.reshape(-1, int(np.prod(a.shape[a.ndim - k:])))


def bf16_ulp(v):
    """One bf16 ulp at |v| (8 significant bits), as tests/test_bf16.c."""
    _, e = np.frexp(np.maximum(np.abs(v), 2.0 ** -126))
    return np.ldexp(1.0, e - 8)


def stats(x, rms, eps=1e-5):
    """Exact (float64) mean, rstd and xhat per row of a (rows, cols) float64 array."""
    mean = np.zeros((x.shape[0], 1)) if rms else x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)  # RMSNorm: mean(x^2)
    rstd = 1 / np.sqrt(var + eps)
    return mean, rstd, (x - mean) * rstd


def forward_bound(x, gamma, beta, rms=False, eps=1e-5):
    """The forward contract per element: tau (1 + |gamma xhat| + |beta|), rows of x."""
    _, _, xhat = stats(x, rms, eps)
    g = 1.0 if gamma is None else gamma.reshape(1, -1)
    b = 0.0 if beta is None else np.abs(beta.reshape(1, -1))
    return forward_tau(x.shape[1]) * (1 + np.abs(g * xhat) + b)


def backward_formula(dy, x, mean, rstd, gamma, rms):
    """The centered backward in float64 from given statistics (rows, cols arrays)."""
    gam = 1.0 if gamma is None else gamma.reshape(1, -1)
    xhat = (x - mean) * rstd
    g = dy * gam
    centered = 0 if rms else g.mean(axis=1, keepdims=True)
    dx = rstd * (g - centered - xhat * (g * xhat).mean(axis=1, keepdims=True))
    return dx, (dy * xhat).sum(axis=0), dy.sum(axis=0)


def backward_bounds(dy, x, gamma, saved_mean, saved_rstd, rms, eps=1e-5):
    """Per output (dx, dgamma, dbeta): the exact gradient and the contract bound of a
    backward that was given float32 statistics `saved_*`: BACKWARD_REL of the exact
    result's max, plus the exact gap between the backward of the saved and of the exact
    statistics (the contract is relative to the former), plus 1e-12 of the summed term
    magnitudes for the float64 reference's own rounding."""
    mean, rstd, xhat = stats(x, rms, eps)
    exact = backward_formula(dy, x, mean, rstd, gamma, rms)
    sm = np.zeros_like(mean) if rms else saved_mean.reshape(-1, 1)
    given = backward_formula(dy, x, sm, saved_rstd.reshape(-1, 1), gamma, rms)
    g_max = 1.0 if gamma is None else max(1.0, float(np.abs(gamma).max()))
    slack = 1e-12 * np.abs(dy).sum() * g_max * (1 + np.abs(xhat).max())
    return [(e, BACKWARD_REL * np.abs(e).max(initial=0) + np.abs(e - s).max(initial=0) + slack)
            for e, s in zip(exact, given)]


def max_err(got, ref):
    return float(np.abs(f64(got).numpy().reshape(ref.shape) - ref).max(initial=0))


def ref_rms_norm(x, shape, weight, eps):
    """The RMSNorm formula in float64 torch, differentiable (torch 1.13 has no nn.RMSNorm)."""
    dims = tuple(range(x.dim() - len(shape), x.dim()))
    y = x * torch.rsqrt((x * x).mean(dim=dims, keepdim=True) + eps)
    return y if weight is None else y * weight
