"""The hidden staging folder a benchmark is written into before it takes its name.

``convert`` writes ``.OUT.converting-PID`` beside ``OUT`` and renames it into place when
done, so ``OUT`` is whole or absent. :func:`staging_folder` removes it on any failure, on
Ctrl-C and on SIGTERM (turned into an exit while it is open), and removes what an earlier
process killed harder (SIGKILL, power loss) left: a staging folder of ``OUT`` whose process
is gone. An OSError names ``OUT``, the path the user gave, not the staging folder.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from nasfilter.files import named_os_error

KINDS = ("converting", "old")


def staging_name(target: Path, kind: str, pid: int | None = None) -> Path:
    """``.NAME.KIND-PID`` beside ``target``."""
    return target.with_name(f".{target.name}.{kind}-{os.getpid() if pid is None else pid}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def remove_stale(target: Path) -> list[Path]:
    """Remove the staging folders of ``target`` whose process is gone; return them."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.({'|'.join(KINDS)})-(\d+)$")
    removed: list[Path] = []
    try:
        names = os.listdir(target.parent)
    except OSError:
        return removed
    for name in names:
        match = pattern.match(name)
        if match is None:
            continue
        pid = int(match.group(2))
        if pid != os.getpid() and _alive(pid):
            continue
        path = target.parent / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class Terminated(SystemExit):
    """SIGTERM arrived while a staging folder was open (exit status 143)."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated(128 + signal.SIGTERM)


@contextmanager
def staging_folder(target: Path) -> Iterator[Path]:
    """A fresh staging folder for ``target`` (stale ones removed first), deleted on any
    exception, Ctrl-C or SIGTERM; the caller renames it into place before leaving."""
    remove_stale(target)
    staging = staging_name(target, "converting")
    shutil.rmtree(staging, ignore_errors=True)
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if main else None
    try:
        staging.mkdir(parents=True)
        yield staging
    except OSError as exc:
        raise named_os_error(_outside(exc, staging, target), target) from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        if main:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _outside(exc: OSError, staging: Path, target: Path) -> OSError:
    """``exc`` with the staging folder's path replaced by ``target`` in its file names."""
    def fix(name: object) -> object:
        text = os.fsdecode(name) if isinstance(name, (str, bytes)) else None
        return text.replace(str(staging), str(target)) if text is not None else name

    if exc.errno is None:
        return exc
    return type(exc)(exc.errno, exc.strerror, fix(exc.filename))


def replace_folder(staging: Path, target: Path) -> None:
    """Put ``staging`` at ``target``; an existing ``target`` (already checked replaceable)
    is first moved aside, then deleted."""
    if not target.exists():
        os.replace(staging, target)
        return
    old = staging_name(target, "old")
    os.replace(target, old)
    try:
        os.replace(staging, target)
    except OSError:
        os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)
