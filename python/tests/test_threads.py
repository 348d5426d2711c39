"""test_threads.py - the thread count through Python: setting, identical bits, fork."""
import os
import time

import numpy as np
import pytest

import layernorm

needs_threads = pytest.mark.skipif(not layernorm.has("ln_set_num_threads"),
                                   reason="the loaded liblayernorm predates 1.2 (no threads)")

# Above two threads' worth of the library's thresholds (32K forward, 64K backward elements
# per thread) and many 64-row blocks, so 2 and 4 threads really split the work.
ROWS, COLS = 1024, 768


def problem(rng):
    x = (rng.standard_normal((ROWS, COLS)) * 3 + 50).astype(np.float32)
    dy = rng.standard_normal((ROWS, COLS)).astype(np.float32)
    g = rng.standard_normal(COLS).astype(np.float32)
    b = rng.standard_normal(COLS).astype(np.float32)
    return x, dy, g, b


def run(x, dy, g, b):
    y, mean, rstd = layernorm.forward(x, g, b)
    return (y, mean, rstd) + tuple(layernorm.backward(dy, x, mean, rstd, g))


@needs_threads
def test_setting_is_clamped_and_restored():
    before = layernorm.get_num_threads()
    for asked, got in [(3, 3), (0, 1), (-7, 1), (1000, 256), (2 ** 40, 256), (1, 1)]:
        assert layernorm.set_num_threads(asked) == got == layernorm.get_num_threads()
    with pytest.raises(TypeError):
        layernorm.set_num_threads(2.5)
    with layernorm.num_threads(4) as n:
        assert n == 4 == layernorm.get_num_threads()
    assert layernorm.get_num_threads() == 1
    layernorm.set_num_threads(before)


@needs_threads
def test_same_bits_for_any_thread_count(isa, rng):
    data = problem(rng)
    with layernorm.num_threads(1):
        ref = run(*data)
    for n in (2, 3, 4):
        with layernorm.num_threads(n):
            got = run(*data)
        for r, o in zip(ref, got):
            assert r.tobytes() == o.tobytes(), f"{isa}: {n} threads differ from one"


@needs_threads
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_forked_child_does_not_hang(rng):
    """libgomp's pool does not survive fork (PyTorch #19163): the child must finish."""
    data = problem(rng)
    with layernorm.num_threads(2):
        ref = run(*data)  # the parent's threads now exist
        pid = os.fork()
        if pid == 0:  # child: same bits, or exit code 3; never return into pytest
            ok = all(r.tobytes() == o.tobytes() for r, o in zip(ref, run(*data)))
            os._exit(0 if ok else 3)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.01)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung in a library call (killed after 60 s)")
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
