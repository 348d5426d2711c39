"""threads.py - how many threads a call may use (liblayernorm 1.2); results never depend on it."""
import contextlib
import operator

from . import _lib


def get_num_threads():
    """The most threads a call may use: LN_NUM_THREADS or the last set_num_threads, 1 by
    default. A library older than 1.2 never starts threads, so it answers 1."""
    if not _lib.has("ln_get_num_threads"):
        return 1
    return _lib.fn("ln_get_num_threads")()


def set_num_threads(n):
    """Lets every later call (process-wide) split its rows among up to `n` threads; the
    library takes n < 1 as 1 and caps it at 256. Returns the setting now in effect.
    Outputs are bitwise the same for any `n`. NotImplementedError before 1.2."""
    n = operator.index(n)  # ints only: 2.5 threads is a mistake, not a request
    n = max(-(2 ** 31), min(n, 2 ** 31 - 1))  # the C int; the library clamps further
    _lib.call("ln_set_num_threads", n)
    return get_num_threads()


@contextlib.contextmanager
def num_threads(n):
    """`with num_threads(2):` runs the block with that setting, then restores the old one.
    The setting is process-wide: other threads see it too."""
    before = get_num_threads()
    try:
        yield set_num_threads(n)
    finally:
        set_num_threads(before)
