"""Checks made before an experiment starts worker processes, so that a parallel run fails
with the cause and its fix instead of a dead worker.

Two things break a pool of workers, whatever the library does inside it:

- **What is sent to a worker must pickle.** A run spec carries its in-process plugins'
  factories; a lambda or a function defined inside another cannot be pickled
  (:func:`check_picklable` refuses it before any worker starts, naming it).
- **A spawned worker imports the main script again** (the ``spawn`` and ``forkserver``
  start methods; Python's documentation, "Safe importing of main module"). A script whose
  top-level code starts the experiment, without ``if __name__ == "__main__":``, would then
  start it again in every worker. :func:`main_reimport` detects that call site (the main
  module's frame on the call stack, outside such a block, read with :mod:`ast`): when no
  spec needs a class or function of the script, the workers start without importing it
  (as :mod:`nasfilter.survey.cache` does); otherwise :class:`MainGuardError` names the
  guard and the fix.
"""

from __future__ import annotations

import ast
import contextlib
import pickle
import sys
from collections.abc import Iterable, Iterator
from functools import lru_cache
from multiprocessing.context import BaseContext
from pathlib import Path
from types import FrameType
from typing import Any

REIMPORTING = ("spawn", "forkserver")  # start methods whose workers import __main__ again
GUARD = 'if __name__ == "__main__":'


class MainGuardError(RuntimeError):
    """Worker processes would run the main script's unguarded top-level code again."""


def check_picklable(plugins: Iterable[tuple[str, str, Any]], jobs: int) -> None:
    """Refuse, before any worker starts, an in-process plugin that cannot be sent to a
    worker: ``plugins`` holds (run label, "searcher" or "filter", factory) triples.

    Raises ValueError naming the run, the factory and the fix."""
    for label, kind, factory in plugins:
        if factory is None:
            continue
        try:
            pickle.dumps(factory)
        except Exception as exc:  # PicklingError, AttributeError, TypeError: all mean "cannot"
            raise ValueError(
                f"the {kind} factory {_name(factory)} of run {label!r} cannot be sent to "
                f"worker processes (jobs={jobs}): {type(exc).__name__}: {exc}. Define it at "
                "module level (a class, a def, or functools.partial of one); a lambda or a "
                "function defined inside another cannot be pickled. Or run with jobs=1."
            ) from None


def _name(factory: Any) -> str:
    qual = getattr(factory, "__qualname__", None) or type(factory).__qualname__
    module = getattr(factory, "__module__", None) or type(factory).__module__
    return f"{module}.{qual}"


def needs_main(objects: Iterable[Any]) -> bool:
    """True when pickling any of ``objects`` refers to the main script (a class or function
    defined in it), which a worker can then only rebuild by importing the script."""
    return any(b"__main__" in pickle.dumps(obj) for obj in objects if obj is not None)


def _main_frame() -> FrameType | None:
    """The main module's top-level frame on this thread's call stack, if it is there."""
    main = sys.modules.get("__main__")
    frame = sys._getframe(1)
    namespace = None if main is None else vars(main)
    while frame is not None:
        if frame.f_globals is namespace and frame.f_code.co_name == "<module>":
            return frame
        frame = frame.f_back  # type: ignore[assignment]
    return None


@lru_cache(maxsize=8)
def _guarded_lines(path: str) -> tuple[tuple[int, int], ...]:
    """The (first, last) lines of each top-level ``if __name__ == "__main__":`` block."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=path)
    except (OSError, SyntaxError, ValueError):
        return ()
    spans = []
    for node in tree.body:
        if isinstance(node, ast.If) and _is_guard(node.test):
            spans.append((node.lineno, node.end_lineno or node.lineno))
    return tuple(spans)


def _is_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    if not isinstance(test.ops[0], ast.Eq):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    texts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(texts) == 1


def unguarded_call_site() -> tuple[str, int] | None:
    """(file, line) of the main script's top-level statement that led here when it lies
    outside ``if __name__ == "__main__":``; None when the call came from elsewhere (a
    guarded block, an interactive session, ``python -c``, a test runner)."""
    frame = _main_frame()
    if frame is None:
        return None
    spec = getattr(sys.modules["__main__"], "__spec__", None)
    if spec is not None and spec.name.endswith(".__main__"):
        return None  # ``python -m package``: multiprocessing never imports it again
    path = frame.f_code.co_filename
    if not Path(path).is_file():  # "<stdin>", "<string>": nothing a worker would import
        return None
    line = frame.f_lineno
    if any(first <= line <= last for first, last in _guarded_lines(path)):
        return None
    return path, line


@contextlib.contextmanager
def main_hidden() -> Iterator[None]:
    """While workers start, hide where ``__main__`` came from, so that they do not import it.

    multiprocessing runs the main script (or ``-m`` module) again in every spawned worker, so
    an unguarded script (no ``if __name__ == "__main__":``) would start its work again in each
    worker. Used by the experiment pools and the survey's."""
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    keys: tuple[str, ...] = ("__file__", "__spec__")
    saved: dict[str, object] = {k: main.__dict__[k] for k in keys if k in main.__dict__}
    main.__dict__.pop("__file__", None)
    main.__dict__["__spec__"] = None
    try:
        yield
    finally:
        main.__dict__.pop("__spec__", None)
        main.__dict__.update(saved)


@contextlib.contextmanager
def main_reimport(
    context: BaseContext, why: str, objects: Iterable[Any], caller: str
) -> Iterator[None]:
    """Around starting the workers of ``context``: nothing to do when they are forked or the
    call is guarded; hide the main script from them when they need nothing of it; else
    raise :class:`MainGuardError`. ``why`` says why this start method was chosen,
    ``objects`` are what will be sent to the workers, ``caller`` names the call."""
    method = context.get_start_method()
    site = unguarded_call_site() if method in REIMPORTING else None
    if site is None:
        yield
        return
    if not needs_main(objects):
        with main_hidden():
            yield
        return
    path, line = site
    raise MainGuardError(
        f"{caller} starts worker processes by {method!r} ({why}); each imports the main "
        f"script {path} again, and its line {line}, outside {GUARD}, would then start "
        f"them again. Put the script's top-level code under {GUARD} (a def main() called "
        "from that block works), define the plugin classes it passes above that block, "
        "or run with jobs=1."
    )


__all__ = [
    "GUARD",
    "MainGuardError",
    "check_picklable",
    "main_reimport",
    "needs_main",
    "unguarded_call_site",
]
