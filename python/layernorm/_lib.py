"""_lib.py - finds and loads liblayernorm.so.1, declares the C prototypes, checks the version."""
import ctypes
import ctypes.util
import os
import sys
import sysconfig

from .errors import error_for

ENV_VAR = "LAYERNORM_LIBRARY"
SONAME = "liblayernorm.so.1"
EXPECTED_MAJOR = 1  # the ABI major this binding speaks; a new major is a new SONAME

_P = ctypes.c_void_p  # arrays go in as raw addresses: no per-call ctypes array objects
_Z = ctypes.c_size_t
_I = ctypes.c_int
_F = ctypes.c_float
_S = ctypes.c_char_p
_U = ctypes.c_uint

# One line per C function: (return type, argument types, minor version that added it).
# A function newer than the loaded library is simply absent (see has()); adding an entry
# point to the binding means adding its line here and a Python wrapper that calls it.
PROTOTYPES = {
    "ln_forward_f32": (_I, [_P, _P, _P, _P, _P, _P, _Z, _Z, _F], 0),
    "ln_backward_f32": (_I, [_P, _P, _P, _P, _P, _P, _P, _P, _Z, _Z], 0),
    "ln_status_string": (_S, [_I], 0),
    "ln_get_isa": (_I, [], 0),
    "ln_set_max_isa": (_I, [_I], 0),
    "ln_isa_available": (_I, [_I], 0),
    "ln_isa_name": (_S, [_I], 0),
    "ln_version": (ctypes.c_uint, [], 0),
    "ln_version_string": (_S, [], 0),
    "ln_forward_ex_f32": (_I, [_P, _Z, _P, _P, _P, _Z, _P, _P, _Z, _Z, _F, _U], 1),
    "ln_backward_ex_f32": (_I, [_P, _Z, _P, _Z, _P, _P, _P, _P, _Z, _P, _P, _Z, _Z, _U], 1),
    "ln_add_forward_f32": (_I, [_P, _P, _P, _P, _P, _P, _P, _P, _Z, _Z, _F, _U], 1),
    "ln_set_num_threads": (_I, [_I], 2),
    "ln_get_num_threads": (_I, [], 2),
    "ln_forward_bf16": (_I, [_P, _P, _P, _P, _P, _P, _Z, _Z, _F], 3),
    "ln_backward_bf16": (_I, [_P, _P, _P, _P, _P, _P, _P, _P, _Z, _Z], 3),
    "ln_gelu_forward_f32": (_I, [_P, _P, _Z, _I], 3),
    "ln_gelu_backward_f32": (_I, [_P, _P, _P, _Z, _I], 3),
}

# Flag bits of the 1.1 entry points (permanent values, as the header's LN_FLAG_*).
FLAG_RMS_NORM = 0x1
FLAG_ACCUMULATE = 0x2
# GELU kinds of the 1.3 entry points (the header's LN_GELU_*).
GELU_KINDS = {"tanh": 0, "erf": 1}


def _venv_libdirs():
    """The directories GNUInstallDirs may pick under a prefix: lib, lib64, lib/<multiarch>."""
    multiarch = sysconfig.get_config_var("MULTIARCH")
    return ["lib", "lib64"] + ([os.path.join("lib", multiarch)] if multiarch else [])


def _candidates():
    """(where, what to dlopen) in search order. An explicit LAYERNORM_LIBRARY is the only
    candidate: silently loading some other copy would hide a misconfiguration."""
    env = os.environ.get(ENV_VAR)
    if env:
        return [(f"${ENV_VAR}", env)]
    here = os.path.dirname(os.path.abspath(__file__))
    found = []
    for d in (here, os.path.dirname(here)):  # inside the package, or beside it
        for name in (SONAME, "liblayernorm.so"):
            path = os.path.join(d, name)
            if os.path.exists(path):
                found.append(("next to the package", path))
    if sys.prefix != sys.base_prefix:  # a venv: `cmake --install build --prefix $VIRTUAL_ENV`
        for sub in _venv_libdirs():
            path = os.path.join(sys.prefix, sub, SONAME)
            if os.path.exists(path):
                found.append(("the virtual environment", path))
    found.append(("the system loader (LD_LIBRARY_PATH, ld.so.cache)", SONAME))
    lib = ctypes.util.find_library("layernorm")
    if lib:
        found.append(("ctypes.util.find_library", lib))
    return found


def _load():
    tried = []
    for where, what in _candidates():
        try:
            return ctypes.CDLL(what), what
        except OSError as e:
            tried.append(f"  {where}: {what} ({e})")
    raise ImportError("layernorm: cannot load liblayernorm; tried\n" + "\n".join(tried) +
                      f"\nbuild it and set {ENV_VAR}=/path/to/{SONAME}")


def _bind(cdll):
    funcs = {}
    for name, (restype, argtypes, _since) in PROTOTYPES.items():
        f = getattr(cdll, name, None)
        if f is None:
            continue
        f.restype, f.argtypes = restype, argtypes
        funcs[name] = f
    return funcs


_cdll, path = _load()
_funcs = _bind(_cdll)
for _name in ("ln_version", "ln_version_string", "ln_status_string"):
    if _name not in _funcs:
        raise ImportError(f"layernorm: {path} lacks {_name}: not liblayernorm")
version = _funcs["ln_version"]()
version_string = _funcs["ln_version_string"]().decode()
if version // 10000 != EXPECTED_MAJOR:
    raise ImportError(f"layernorm: {path} is liblayernorm {version_string}; "
                      f"this binding needs major version {EXPECTED_MAJOR}")
_missing = [n for n, (_r, _a, since) in PROTOTYPES.items()
            if since <= version // 100 % 100 and n not in _funcs]
if _missing:
    raise ImportError(f"layernorm: {path} ({version_string}) lacks {', '.join(_missing)}")


def has(name):
    """True if the loaded library provides C function `name`."""
    return name in _funcs


def fn(name):
    """The bound C function `name` (NotImplementedError if the library predates it)."""
    try:
        return _funcs[name]
    except KeyError:
        raise NotImplementedError(f"{name} needs a newer liblayernorm than {version_string} "
                                  f"({path})") from None


def call(name, *args):
    """Calls a status-returning C function; a non-zero status raises its LayerNormError."""
    status = fn(name)(*args)
    if status != 0:
        raise error_for(status, _funcs["ln_status_string"](status).decode())
