"""The installed distribution's version, in a leaf module that anything may import.

Modules that record which nasfilter wrote a file (converted tables, archives, the CLI's
``--version``) import it from here rather than from the package, whose ``__init__`` imports
the table modules that some of them sit under.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def installed_version() -> str:
    """The installed distribution's version (setup.cfg is its one source)."""
    try:
        return version("nasfilter")
    except PackageNotFoundError:  # a source tree on sys.path, never installed
        return "0+unknown (not installed; pip install -e .)"


__version__ = installed_version()

__all__ = ["__version__", "installed_version"]
