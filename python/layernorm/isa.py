"""isa.py - which kernel runs (scalar, avx2, avx512, neon, sve, ...) and capping it."""
import contextlib
import functools

from . import _lib


@functools.lru_cache(maxsize=None)
def isa_names():
    """Every ISA name the library knows, indexed by its permanent id ("scalar" is 0).
    Asked of the library, so ISAs added later appear without a binding change."""
    names = []
    for isa in range(64):
        name = _lib.fn("ln_isa_name")(isa).decode()
        if name == "unknown":
            break
        names.append(name)
    return tuple(names)


def isa_id(isa):
    """The id of an ISA given by name (any case) or id; ValueError if unknown."""
    names = isa_names()
    if isinstance(isa, str):
        try:
            return names.index(isa.lower())
        except ValueError:
            raise ValueError(f"unknown ISA {isa!r}; known: {', '.join(names)}") from None
    if isinstance(isa, int) and not isinstance(isa, bool) and 0 <= isa < len(names):
        return isa
    raise ValueError(f"unknown ISA {isa!r}; known: {', '.join(names)}")


def get_isa():
    """The name of the kernel in use."""
    return isa_names()[_lib.fn("ln_get_isa")()]


def isa_available(isa):
    """True if this build has the ISA and this CPU and OS can run it."""
    return bool(_lib.fn("ln_isa_available")(isa_id(isa)))


def available_isas():
    return tuple(n for n in isa_names() if isa_available(n))


def set_max_isa(isa):
    """Caps the kernel for the whole process (the best available ISA not above `isa`);
    IsaError if `isa` cannot run here."""
    _lib.call("ln_set_max_isa", isa_id(isa))


@contextlib.contextmanager
def max_isa(isa):
    """`with max_isa("avx2"):` runs the block under the cap, then restores the kernel.
    The cap is process-wide: other threads see it too."""
    before = get_isa()
    set_max_isa(isa)
    try:
        yield get_isa()
    finally:
        set_max_isa(before)
