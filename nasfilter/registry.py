"""Name -> factory registries, used only where strings come in (the command line, grids).

Code passes searcher and filter *instances*; a registry turns a name typed by a user into one.
A spec string is ``NAME`` or ``NAME[key=value,key=value]``; ``NAME`` is a registered name or a
plugin path naming a class or factory to import: ``package.module:Attribute`` (looked up on
``sys.path`` and then, as ``python -m`` does, in the current directory) or
``path/to/file.py:Attribute``. Values are parsed as Python literals when they are (``0.01``,
``None``, ``'mnas'``), else kept as text.
"""

from __future__ import annotations

import ast
import copy
import functools
import importlib
import importlib.util
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_SPEC = re.compile(r"^\s*(?P<name>[^\[\]\s]+)\s*(?:\[(?P<params>.*)\])?\s*$", re.DOTALL)
_PLUGIN = re.compile(r"^(?P<module>[^\[\]:]+\.py|[A-Za-z_][\w.]*):(?P<attr>[A-Za-z_][\w.]*)$")


class UnknownNameError(ValueError, LookupError):
    """A name is neither registered nor an importable ``module:Attribute`` plugin path."""


def parse_spec(text: str) -> tuple[str, dict[str, Any]]:
    """Split ``"name[k=v,...]"`` into ``(name, {k: v})``; raise ValueError on bad syntax."""
    if not isinstance(text, str):
        raise ValueError(f"a spec must be a string like 'reinforce[lr=0.01]', got {text!r}")
    match = _SPEC.match(text)
    if match is None:
        raise ValueError(
            f"cannot read spec {text!r}: write NAME or NAME[key=value,...], "
            "e.g. 'reinforce[reward=mnas,lr=0.01]'"
        )
    params: dict[str, Any] = {}
    body = match.group("params")
    if body is not None and body.strip():
        for item in split_top_level(body, ","):
            key, sep, value = item.partition("=")
            key = key.strip()
            if not sep or not key.isidentifier():
                raise ValueError(
                    f"cannot read parameter {item.strip()!r} of spec {text!r}: "
                    "write key=value, e.g. lr=0.01"
                )
            if key in params:
                raise ValueError(f"parameter {key!r} is given twice in spec {text!r}")
            params[key] = _literal(value.strip())
    return match.group("name"), params


def format_spec(name: str, params: dict[str, Any]) -> str:
    """The inverse of :func:`parse_spec`, with keys sorted (a canonical spec string)."""
    if not params:
        return name
    body = ",".join(f"{k}={params[k]!r}" for k in sorted(params))
    return f"{name}[{body}]"


def split_top_level(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` on ``sep`` outside square brackets (so specs can be comma-separated)."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in (s.strip() for s in parts) if p]


def _literal(text: str) -> Any:
    """A spec value: a Python literal, true/false in any case, nan/inf, else the text."""
    if text.lower() in ("nan", "inf", "+inf", "-inf"):
        return float(text)
    if text.lower() in ("true", "false"):  # as JSON and the command line write them
        return text.lower() == "true"
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def init_parameters(target: Any) -> list[inspect.Parameter] | None:
    """The parameters ``target`` is called with: a class's ``__init__``'s (less ``self``),
    a function's or partial's own; None when the signature cannot be read.

    The one reading of a plugin's settings: the registry lists them from it and
    :meth:`nasfilter.sim.plugin.Plugin.config` reports their values by these names."""
    try:
        return list(inspect.signature(target).parameters.values())
    except (TypeError, ValueError):
        return None


class Registry(Generic[T]):
    """Maps names to factories (callables returning a ``T``); refuses duplicate names.

    Args:
        kind: what the registry holds, for error messages ("searcher", "filter").
        base: the type every factory must return; plugins are checked against it.
    """

    def __init__(self, kind: str, base: type) -> None:
        self.kind = kind
        self.base = base
        self._factories: dict[str, Callable[..., T]] = {}
        self._help: dict[str, str] = {}
        self._params_of: dict[str, Callable[[], Callable[..., Any]]] = {}

    def register(
        self,
        name: str,
        factory: Callable[..., T],
        help: str = "",
        params_of: Callable[[], Callable[..., Any]] | None = None,
    ) -> None:
        """Add ``name``; raise ValueError if it is taken or malformed.

        ``params_of`` returns the class whose signature and ``Args:`` docstring describe
        the settings, where ``factory`` hides them behind ``**kwargs`` (imported only when
        an error message needs it)."""
        if not isinstance(name, str) or not re.fullmatch(r"[a-z][a-z0-9_-]*", name):
            raise ValueError(
                f"{self.kind} names are lower-case words joined by '-' or '_', got {name!r}"
            )
        if name in self._factories:
            raise ValueError(f"{self.kind} {name!r} is already registered")
        if not callable(factory):
            raise ValueError(f"the factory for {self.kind} {name!r} is not callable: {factory!r}")
        self._factories[name] = factory
        self._help[name] = help
        if params_of is not None:
            self._params_of[name] = params_of

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._factories)

    def describe(self) -> dict[str, str]:
        """``{name: one-line help}`` for every registered name."""
        return {name: self._help[name] for name in self.names()}

    def __contains__(self, name: object) -> bool:
        return name in self._factories

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def factory(self, name: str) -> Callable[..., T]:
        """The factory for a registered name or a ``module:Attribute`` plugin path."""
        if name in self._factories:
            return self._factories[name]
        if isinstance(name, str) and _PLUGIN.match(name):
            return self._import(name)
        raise UnknownNameError(
            f"unknown {self.kind} {name!r}; known {self.kind}s: {', '.join(self.names())} "
            f"(or a plugin path such as 'mypackage.module:MyClass')"
        )

    def parameters(self, name: str, hidden: tuple[str, ...] = ()) -> list[str] | None:
        """``["key=default: what (range)", ...]`` for the settings of ``name``, from its
        signature and its ``Args:`` docstring; None when they cannot be told (a factory
        taking ``**kwargs`` and registered without ``params_of``)."""
        target: Any = self._params_of[name]() if name in self._params_of else self.factory(name)
        every = init_parameters(target)
        if every is None:
            return None
        params = [
            p
            for p in every
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in hidden
        ]
        if any(p.kind is p.VAR_KEYWORD for p in every) and not params:
            return None
        docs = _arg_docs(target)
        out = []
        for p in params:
            default = "" if p.default is p.empty else f"={p.default!r}"
            text = docs.get(p.name, "").rstrip(".")
            out.append(f"{p.name}{default}" + (f": {text}" if text else ""))
        return out

    def setting_names(self, name: str) -> frozenset[str] | None:
        """The keyword settings ``name`` takes, from its signature; None when they cannot be
        told (a factory taking ``**kwargs`` registered without ``params_of``)."""
        target: Any = self._params_of[name]() if name in self._params_of else self.factory(name)
        every = init_parameters(target)
        if every is None or any(p.kind is p.VAR_KEYWORD for p in every):
            return None
        return frozenset(p.name for p in every if p.kind is not p.VAR_POSITIONAL)

    def _describe_parameters(self, name: str, hidden: tuple[str, ...]) -> str:
        listed = self.parameters(name, hidden)
        if listed is None:
            return ""
        if not listed:
            return f"; {self.kind} {name!r} takes no settings"
        return f"; the settings of {self.kind} {name!r} are: " + "; ".join(listed)

    def create(self, spec: str, **overrides: Any) -> T:
        """Build an instance from ``"name[k=v,...]"``; ``overrides`` win over the spec's.

        An unknown setting raises ValueError listing every valid setting with its default
        and range (a bad value gets the factory's own message, which names the range)."""
        name, params = parse_spec(spec)
        hidden = tuple(overrides)  # passed by the program (a backend's device), not the user
        params.update(overrides)
        factory = self.factory(name)
        try:
            obj = factory(**params)
        except TypeError as exc:
            raise ValueError(
                f"cannot build {self.kind} {spec!r}: {exc}{self._describe_parameters(name, hidden)}"
            ) from exc
        if not isinstance(obj, self.base):
            raise ValueError(
                f"{self.kind} {spec!r} built a {type(obj).__name__}, not a {self.base.__name__}"
            )
        return obj

    def _import(self, path: str) -> Callable[..., T]:
        match = _PLUGIN.match(path)
        assert match is not None
        module_name, attr = match.group("module"), match.group("attr")
        try:
            obj: Any = _load_module(module_name)
        except (ImportError, OSError) as exc:
            raise UnknownNameError(
                f"cannot import module {module_name!r} of {self.kind} plugin {path!r}: {exc}; "
                f"known {self.kind}s: {', '.join(self.names())}"
            ) from exc
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise UnknownNameError(
                    f"module {module_name!r} has no attribute {attr!r} ({self.kind} plugin "
                    f"{path!r}); known {self.kind}s: {', '.join(self.names())}"
                )
            obj = getattr(obj, part)
        if not callable(obj):
            raise UnknownNameError(f"{self.kind} plugin {path!r} is not callable")
        factory: Callable[..., T] = obj
        return factory


def _arg_docs(target: Any) -> dict[str, str]:
    """``{name: description}`` from the ``Args:`` section of ``target``'s docstring (a
    class's, or its ``__init__``'s; a partial's function's), continuation lines joined."""
    while isinstance(target, functools.partial):
        target = target.func
    texts = [inspect.getdoc(target) or ""]
    if inspect.isclass(target):
        texts.append(inspect.getdoc(target.__init__) or "")
    out: dict[str, str] = {}
    for text in texts:
        lines = text.splitlines()
        try:
            start = next(i for i, line in enumerate(lines) if line.strip() == "Args:")
        except StopIteration:
            continue
        indent: int | None = None
        current: str | None = None
        for line in lines[start + 1 :]:
            if not line.strip():
                break
            depth = len(line) - len(line.lstrip())
            if indent is None:
                indent = depth
            if depth < indent:
                break
            match = re.match(r"\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*:\s*(.*)", line)
            if depth == indent and match:
                current = match.group(2).strip()
                for key in re.split(r"\s*,\s*", match.group(1)):
                    out.setdefault(key, current)
                keys = re.split(r"\s*,\s*", match.group(1))
            elif current is not None:
                for key in keys:
                    if out.get(key) == current:
                        out[key] = f"{out[key]} {line.strip()}"
                current = out[keys[0]]
    return out


def _load_module(name: str) -> ModuleType:
    """Import a dotted module name, or load a ``.py`` file by path."""
    if name.endswith(".py"):
        path = Path(name).resolve()
        key = "nasfilter_plugin_" + re.sub(r"\W", "_", str(path))
        if key in sys.modules:
            return sys.modules[key]
        spec = importlib.util.spec_from_file_location(key, path)
        if spec is None or spec.loader is None or not path.is_file():
            raise ImportError(f"no Python file at {str(path)!r}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[key] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[key]
            raise
        return module
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        cwd = os.getcwd()
        top = name.split(".")[0]
        if exc.name != top or cwd in sys.path or "" in sys.path:
            raise
        # Console scripts do not put the current directory on sys.path; `python -m` does.
        sys.path.append(cwd)
        return importlib.import_module(name)


def canonical_spec(spec: str) -> str:
    """``spec`` (``NAME[key=value,...]``) in its one canonical spelling."""
    name, params = parse_spec(spec)
    return format_spec(name, params)


def plugin_spec(obj: Any) -> str:
    """The spec string of an in-process plugin: ``module:Class[params]``."""
    cls = type(obj)
    return format_spec(f"{cls.__module__}:{cls.__qualname__}", obj.config())


def resolve_plugin(
    value: object, kind: type[Any], what: str
) -> tuple[str, Callable[[], Any] | None]:
    """(spec string, factory or None) of a spec string, an instance of the plugin class
    ``kind`` (copied for each run) or a factory returning one; ValueError otherwise."""
    if isinstance(value, str):
        return canonical_spec(value), None
    if isinstance(value, kind):
        instance = value
        return plugin_spec(instance), functools.partial(copy.deepcopy, instance)
    if callable(value):
        built = value()
        if not isinstance(built, kind):
            raise ValueError(
                f"the {what} factory {value!r} returned {built!r}, not a {kind.__name__}"
            )
        return plugin_spec(built), value
    raise ValueError(
        f"{what} must be a spec string, a {kind.__name__} instance or a factory returning "
        f"one, got {value!r}"
    )
