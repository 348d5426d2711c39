#!/usr/bin/env python3
"""check_torch.py - gpt2_block against the same Pre-LN block in PyTorch, in float64.

Usage: check_torch.py GPT2_BLOCK_BINARY WORK_DIR. Runs the C program with --dump WORK_DIR,
recomputes its forward and every gradient from the same weights, input and dout, and
compares. Exits 77 (a visible ctest skip) when PyTorch is not installed.
"""
import math
import pathlib
import subprocess
import sys

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
except ImportError:
    print("gpt2_block_torch: SKIPPED: PyTorch is not installed (Debian: python3-torch)")
    sys.exit(77)

NAMES = ["ln1.weight", "ln1.bias", "qkv.weight", "qkv.bias", "proj.weight", "proj.bias",
         "ln2.weight", "ln2.bias", "fc.weight", "fc.bias", "fcproj.weight", "fcproj.bias"]


def shapes(C):
    """The C program's parameter order and PyTorch's layouts (block.h)."""
    lin = lambda o, i: [(o, i), (o,)]
    return [(C,), (C,)] + lin(3 * C, C) + lin(C, C) + [(C,), (C,)] + lin(4 * C, C) + lin(C, 4 * C)


def block(p, x, B, T, C, NH):
    """Pre-LN GPT-2 block: x + attn(ln1(x)), then + mlp(ln2(.)), GELU in its tanh form."""
    ln1 = F.layer_norm(x, (C,), p["ln1.weight"], p["ln1.bias"], 1e-5)
    q, k, v = F.linear(ln1, p["qkv.weight"], p["qkv.bias"]).split(C, dim=2)
    q, k, v = (t.view(B, T, NH, C // NH).transpose(1, 2) for t in (q, k, v))
    att = q @ k.transpose(-2, -1) / math.sqrt(C // NH)
    future = torch.ones(T, T, dtype=torch.bool).triu(1)
    y = (att.masked_fill(future, float("-inf")).softmax(-1) @ v).transpose(1, 2).reshape(B, T, C)
    res2 = x + F.linear(y, p["proj.weight"], p["proj.bias"])
    ln2 = F.layer_norm(res2, (C,), p["ln2.weight"], p["ln2.bias"], 1e-5)
    h = F.gelu(F.linear(ln2, p["fc.weight"], p["fc.bias"]), approximate="tanh")
    return res2 + F.linear(h, p["fcproj.weight"], p["fcproj.bias"])


def main():
    binary, work = sys.argv[1], pathlib.Path(sys.argv[2])
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([binary, "--dump", str(work)], check=True)
    def load(name):
        return torch.from_numpy(np.fromfile(work / f"{name}.f32", dtype=np.float32)).double()

    B, T, C, NH = (int(v) for v in load("shape"))
    flat, grads = load("params"), load("grads")
    p, g, at = {}, {}, 0
    for name, shape in zip(NAMES, shapes(C)):
        size = math.prod(shape)
        p[name] = flat[at:at + size].view(shape).requires_grad_()
        g[name] = grads[at:at + size].view(shape)
        at += size
    assert at == flat.numel(), "parameter layout differs from block.h"
    x = load("x").view(B, T, C).requires_grad_()
    out = block(p, x, B, T, C, NH)
    (out * load("dout").view(B, T, C)).sum().backward()

    # The C block runs in float32: each value carries the roundings of its path, about
    # sqrt(K) u relative for a dot product of K <= 4C = 256 terms (u = 2^-24, so 1e-6),
    # through a handful of such stages (softmax, two LayerNorms, GELU between them): a few
    # 1e-6 of the tensor's largest value (measured: below 1e-6). The bound 1e-5 leaves room
    # for any BLAS's summation order; a wrong formula errs by O(1).
    tol = 1e-5
    failed = 0
    checks = [("out", load("out").view(B, T, C), out.detach()),
              ("x.grad", load("dx").view(B, T, C), x.grad)]
    checks += [(n + ".grad", g[n], p[n].grad) for n in NAMES]
    for name, ours, ref in checks:
        err = ((ours - ref).abs().max() / ref.abs().max()).item()
        failed += not err <= tol
        print(f"{name:<20} max |ref| {ref.abs().max().item():.3e}  error {err:.2e} of it"
              + ("" if err <= tol else "  FAILED"))
    print(f"gpt2_block_torch: {len(checks) - failed} of {len(checks)} tensors match PyTorch "
          f"float64 (torch {torch.__version__})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
