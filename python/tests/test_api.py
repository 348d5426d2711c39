"""test_api.py - the binding's contract: no copies, clear errors, status exceptions, loading."""
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import layernorm

# Where the package under test lives (the source tree's python/ or site-packages): a
# child Python started there imports the same copy.
PYDIR = os.path.dirname(os.path.dirname(os.path.abspath(layernorm.__file__)))


def test_version_and_path():
    # The package and the library it is tested with come from one release here (the
    # package suite builds both from one tree), so the versions agree.
    major, minor, patch = layernorm.library_version()
    assert major == 1 and layernorm.__version__ == f"{major}.{minor}.{patch}"
    assert os.path.exists(layernorm.library_path) or "/" not in layernorm.library_path


def test_float32_c_contiguous_is_used_in_place(rng):
    x = rng.standard_normal((4, 64)).astype(np.float32)
    out = np.empty_like(x)
    y, _, _ = layernorm.forward(x, out=out)
    assert y is out  # written where the caller asked, no temporary
    y_ref, _, _ = layernorm.forward(x)
    x_before = x.copy()
    y2, _, _ = layernorm.forward(x, out=x)  # in place: x's memory is y's
    assert y2 is x and np.shares_memory(y2, x)
    assert np.array_equal(x, y_ref) and not np.array_equal(x, x_before)


def test_inputs_are_read_from_the_callers_memory(rng):
    # A view of a larger buffer: if the binding copied, writes through `out` (aliasing
    # the same buffer) would not be seen; here the library rejects the overlap instead,
    # which proves it received the caller's addresses.
    buf = rng.standard_normal(2 * 64 + 1).astype(np.float32)
    before = buf.copy()
    x, out = buf[:128].reshape(2, 64), buf[1:129].reshape(2, 64)
    with pytest.raises(layernorm.AliasError) as e:
        layernorm.forward(x, out=out)
    assert e.value.code == 4 and isinstance(e.value, ValueError)
    assert np.array_equal(buf, before)  # on error nothing is written


def test_nothing_written_on_error(rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    out = np.full_like(x, 7.0)
    with pytest.raises(layernorm.EpsError):
        layernorm.forward(x, eps=float("nan"), out=out)
    assert np.all(out == 7.0)


@pytest.mark.parametrize("bad, exc, words", [
    ([[1.0, 2.0]], TypeError, "numpy.ndarray"),
    (np.ones((2, 4), np.float64), TypeError, "float32"),
    (np.ones((2, 4), np.float16), TypeError, "float32"),
    (np.ones((2, 4), ">f4"), TypeError, "byte order"),
    (np.ones((4, 2), np.float32).T, ValueError, "C-contiguous"),
    (np.ones((2, 8), np.float32)[:, ::2], ValueError, "C-contiguous"),
    (np.float32(1.0), TypeError, "numpy.ndarray"),
    (np.array(1.0, np.float32), ValueError, "at least one axis"),
])
def test_wrong_x_is_rejected_not_converted(bad, exc, words):
    with pytest.raises(exc, match=words):
        layernorm.forward(bad)


def test_unaligned_is_rejected():
    raw = np.zeros(4 * 8 + 1, np.uint8)
    x = np.frombuffer(raw.data, np.float32, count=8, offset=1)
    assert not x.flags.aligned
    with pytest.raises(ValueError, match="aligned"):
        layernorm.forward(x)


def test_wrong_shapes_and_outputs(rng):
    x = rng.standard_normal((3, 8)).astype(np.float32)
    with pytest.raises(ValueError, match="gamma has shape"):
        layernorm.forward(x, gamma=np.ones(7, np.float32))
    with pytest.raises(ValueError, match="out has shape"):
        layernorm.forward(x, out=np.empty((8, 3), np.float32))
    ro = np.empty_like(x)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        layernorm.forward(x, out=ro)
    with pytest.raises(TypeError, match="eps"):
        layernorm.forward(x, eps="1e-5")
    y, m, r = layernorm.forward(x)
    with pytest.raises(ValueError, match="mean has shape"):
        layernorm.backward(x, x, m.ravel()[:2], r)
    with pytest.raises(TypeError, match="dy"):
        layernorm.backward(x.astype(np.float64), x, m, r)


def test_status_codes_become_exceptions(rng):
    with pytest.raises(layernorm.ShapeError) as e:  # rows 3, cols 0
        layernorm.forward(np.empty((3, 0), np.float32))
    assert e.value.code == 2 and "status 2" in str(e.value)
    with pytest.raises(layernorm.EpsError) as e:
        layernorm.forward(np.ones((2, 3), np.float32), eps=-1.0)
    assert e.value.code == 3 and isinstance(e.value, layernorm.LayerNormError)
    from layernorm.errors import error_for
    assert type(error_for(99, "future")) is layernorm.LayerNormError


def test_zero_rows_is_a_no_op():
    y, m, r = layernorm.forward(np.empty((0, 5), np.float32))
    assert y.shape == (0, 5) and m.shape == (0,)
    dx, dg, db = layernorm.backward(np.empty((0, 5), np.float32), np.empty((0, 5), np.float32),
                                    m, r)
    assert dx.shape == (0, 5) and np.all(dg == 0) and np.all(db == 0)


def test_isa_helpers():
    names = layernorm.isa_names()
    assert names[:5] == ("scalar", "avx2", "avx512", "neon", "sve")  # permanent ids
    assert layernorm.isa_available("scalar") and layernorm.isa_available("SCALAR")
    assert layernorm.get_isa() in layernorm.available_isas()
    assert layernorm.isa_id("avx512") == 2
    with pytest.raises(ValueError, match="unknown ISA"):
        layernorm.isa_available("mmx")
    with pytest.raises(ValueError):
        layernorm.isa_id(len(names))
    before = layernorm.get_isa()
    with layernorm.max_isa("scalar") as active:
        assert active == "scalar" == layernorm.get_isa()
    assert layernorm.get_isa() == before
    missing = [n for n in names if not layernorm.isa_available(n)]
    if not missing:
        pytest.skip("every ISA is available here: no IsaError to provoke")
    with pytest.raises(layernorm.IsaError) as e:
        layernorm.set_max_isa(missing[0])
    assert e.value.code == 5 and layernorm.get_isa() == before


def run_python(code, env_extra, cwd):
    env = {k: v for k, v in os.environ.items() if k != "LAYERNORM_LIBRARY"}
    env.update(env_extra)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd,
                          capture_output=True, text=True)


def test_library_found_next_to_the_package(tmp_path):
    shutil.copytree(os.path.join(PYDIR, "layernorm"), tmp_path / "layernorm")
    shutil.copy(layernorm.library_path, tmp_path / "layernorm" / "liblayernorm.so.1")
    p = run_python("import layernorm; print(layernorm.library_path)", {}, tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == str(tmp_path / "layernorm" / "liblayernorm.so.1")


def test_bad_env_path_is_an_error_not_a_fallback(tmp_path):
    p = run_python("import layernorm", {"LAYERNORM_LIBRARY": str(tmp_path / "nope.so")}, PYDIR)
    assert p.returncode != 0 and "LAYERNORM_LIBRARY" in p.stderr and "nope.so" in p.stderr


def test_other_major_version_is_refused(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler to build a fake liblayernorm 2.0")
    src = tmp_path / "fake.c"
    src.write_text('unsigned ln_version(void) { return 20000; }\n'
                   'const char *ln_version_string(void) { return "2.0.0"; }\n'
                   'const char *ln_status_string(int s) { (void)s; return ""; }\n')
    lib = tmp_path / "liblayernorm.so.2"
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    p = run_python("import layernorm", {"LAYERNORM_LIBRARY": str(lib)}, PYDIR)
    assert p.returncode != 0 and "needs major version 1" in p.stderr
