"""_version.py - the package version: the C header's LN_VERSION_STRING of the same release."""
# pyproject.toml reads this line (setuptools `attr:`, without importing the package) and
# the package suite checks it against include/layernorm.h, so a release bumps both.
__version__ = "1.3.0"
