"""conftest.py - the package under test (source or installed), per-ISA fixture, float64 refs."""
import os
import sys

import numpy as np
import pytest

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# LAYERNORM_TEST_INSTALLED=1 (the package suite) tests the pip-installed package: the
# source tree must then not be importable, or its copy would be tested instead.
INSTALLED = os.environ.get("LAYERNORM_TEST_INSTALLED") == "1"
if not INSTALLED:
    sys.path.insert(0, SOURCE)
import layernorm  # noqa: E402  (needs the path above)

if INSTALLED and os.path.abspath(layernorm.__file__).startswith(SOURCE + os.sep):
    raise ImportError(f"LAYERNORM_TEST_INSTALLED=1 but layernorm came from the source tree "
                      f"({layernorm.__file__}); run pytest outside {SOURCE}")

U = 2.0 ** -24  # unit roundoff of float32


@pytest.fixture(params=layernorm.isa_names())
def isa(request):
    """Runs the test once per ISA the library knows, under the cap; an ISA this build or
    CPU lacks is skipped with its name, never passed."""
    name = request.param
    if not layernorm.isa_available(name):
        pytest.skip(f"{name}: not compiled in or not runnable on this CPU")
    with layernorm.max_isa(name) as active:
        assert active == name
        yield name


@pytest.fixture
def rng():
    return np.random.default_rng(20240611)


def forward_tau(cols):
    """NUMERICS.md forward contract: |y - y_ref| <= tau * (1 + |gamma xhat_ref| + |beta|)."""
    return 4e-6 if cols <= 16384 else 1e-5


def ref_forward(x, gamma=None, beta=None, eps=1e-5):
    """LayerNorm of the same float32 inputs in float64: (y, mean, rstd, xhat)."""
    x = x.astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # biased, as GPT-2
    rstd = 1.0 / np.sqrt(var + eps)
    xhat = (x - mean) * rstd
    g = np.ones(x.shape[-1]) if gamma is None else gamma.astype(np.float64)
    b = np.zeros(x.shape[-1]) if beta is None else beta.astype(np.float64)
    return g * xhat + b, mean[..., 0], rstd[..., 0], xhat


def ref_backward(dy, x, mean, rstd, gamma=None):
    """The centered backward of NUMERICS.md in float64 from the given (float32) inputs,
    saved mean and rstd included: what the backward contract compares against."""
    dy, x = dy.astype(np.float64), x.astype(np.float64)
    mean, rstd = mean.astype(np.float64)[..., None], rstd.astype(np.float64)[..., None]
    gam = np.ones(x.shape[-1]) if gamma is None else gamma.astype(np.float64)
    xhat = (x - mean) * rstd
    g = dy * gam
    dx = rstd * (g - g.mean(axis=-1, keepdims=True) -
                 xhat * (g * xhat).mean(axis=-1, keepdims=True))
    axes = tuple(range(x.ndim - 1))
    return dx, (dy * xhat).sum(axis=axes), dy.sum(axis=axes)


def assert_forward_contract(y, x, gamma, beta, eps=1e-5):
    y_ref, _, _, xhat = ref_forward(x, gamma, beta, eps)
    g = 1.0 if gamma is None else gamma.astype(np.float64)
    b = 0.0 if beta is None else beta.astype(np.float64)
    scale = 1 + np.abs(g * xhat) + np.abs(b)
    err = np.abs(y - y_ref) / scale
    assert err.max(initial=0) <= forward_tau(x.shape[-1]), f"worst error {err.max():.3g}"


def assert_stats_bound(x, mean, rstd, eps=1e-5):
    """The statistics are not in the contract table; these are the a-priori worst cases of
    any Welford/Chan summation order (Chan, Golub & LeVeque 1983): the mean within
    n u max|x|, doubled for the final rounding; var within n kappa u relative, kappa =
    sqrt(1 + mean^2/var) its condition number; rstd = 1/sqrt(var + eps) halves that, plus
    a few u for add, sqrt and divide. Loose, but wrong plumbing (rows swapped, var returned
    for rstd, an unwritten array) misses them by orders of magnitude."""
    _, m_ref, r_ref, _ = ref_forward(x, eps=eps)
    n = x.shape[-1]
    assert np.all(np.abs(mean - m_ref) <= 2 * n * U * np.abs(x.astype(np.float64)).max(axis=-1))
    var = 1 / r_ref ** 2 - eps
    kappa = np.sqrt(1 + m_ref ** 2 / np.maximum(var, 1e-300))
    assert np.all(np.abs(rstd / r_ref - 1) <= 0.5 * n * kappa * U * var / (var + eps) + 4 * U)


def assert_inf_rel(got, ref, rel, extra=0.0, what=""):
    """||got - ref||_inf <= rel * ||ref||_inf + extra (the backward contract's norm)."""
    err = np.abs(got.astype(np.float64) - ref).max(initial=0)
    bound = rel * np.abs(ref).max(initial=0) + extra
    assert err <= bound, f"{what}: error {err:.3g} > bound {bound:.3g}"
