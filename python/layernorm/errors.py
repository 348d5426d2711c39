"""errors.py - liblayernorm's status codes as exceptions, one class per permanent code."""


class LayerNormError(Exception):
    """A non-zero status from liblayernorm; `code` is the LN_ERR_* value."""

    code = None

    def __init__(self, code, message):
        super().__init__(f"{message} (status {code})")
        self.code = code


def _code_class(name, code, builtin, doc):
    # Each also derives from the built-in a Python caller would expect to catch.
    return type(name, (LayerNormError, builtin), {"code": code, "__doc__": doc,
                                                  "__module__": __name__})


NullPointerError = _code_class("NullPointerError", 1, ValueError, "LN_ERR_NULL")
ShapeError = _code_class("ShapeError", 2, ValueError, "LN_ERR_SHAPE: cols == 0 or overflow")
EpsError = _code_class("EpsError", 3, ValueError, "LN_ERR_EPS: eps NaN, infinite or < 0")
AliasError = _code_class("AliasError", 4, ValueError, "LN_ERR_ALIAS: operands overlap")
IsaError = _code_class("IsaError", 5, ValueError, "LN_ERR_ISA: ISA unknown or unavailable")
OutOfMemoryError = _code_class("OutOfMemoryError", 6, MemoryError, "LN_ERR_NOMEM")
FlagsError = _code_class("FlagsError", 7, ValueError, "LN_ERR_FLAGS: unknown flag bit")

_BY_CODE = {c.code: c for c in (NullPointerError, ShapeError, EpsError, AliasError,
                                IsaError, OutOfMemoryError, FlagsError)}


def error_for(code, message):
    """The exception for status `code`; an unknown (future) code gives the base class."""
    return _BY_CODE.get(code, LayerNormError)(code, message)
