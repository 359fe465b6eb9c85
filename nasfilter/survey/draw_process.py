"""A second process that draws the survey's figures while the survey's own process writes
its tables (``survey.csv``, ``layers.csv``, ``summary.json``).

Drawing the three figures (and importing matplotlib to do it) is about half of a survey from
cached tables, all of it on one core. :class:`DrawingProcess` starts a fresh Python
(``subprocess``: fork and exec with no Python code run between them, so it is safe even
after torch has been imported) that imports matplotlib and the drawing code, never torch,
at once, then waits; :meth:`DrawingProcess.draw` hands it the rows and summary (pickled,
through a pipe), it draws them with :func:`nasfilter.survey.figures.draw` (the function
the survey's process would run, so the files are the same) and writes the files into the
output folder, and :meth:`DrawingProcess.results` collects what it drew.

Failures fall back to drawing in the survey's process: where the process cannot start
(no matplotlib, no new process allowed), a figure it could not draw (its error is kept in
:attr:`DrawingProcess.failures`; drawn again here, the same error is raised here), or the
process gone. Ctrl-C does not reach it (a session of its own): the survey's process stops
it (:meth:`DrawingProcess.close`, SIGTERM, on which a file being written is removed, never
left half-written) and waits for it, so no process outlives the survey; were the survey's
process killed, its input ends and it exits.
"""

from __future__ import annotations

import importlib.util
import os
import pickle
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from nasfilter.render.drawing import FigureFiles
from nasfilter.survey import figures

_PACKAGE_PARENT = str(Path(__file__).resolve().parent.parent.parent)
# The drawing process' program: this nasfilter first on its path unless already there (a
# source checkout), then serve(); the same interpreter, so an installed one is found anyway.
_CHILD = (
    "import sys\n"
    "if sys.argv[3] not in sys.path:\n"
    "    sys.path.insert(0, sys.argv[3])\n"
    "from nasfilter.survey.draw_process import serve\n"
    "serve(int(sys.argv[1]), int(sys.argv[2]))\n"
)
STOP_SECONDS = 10.0  # how long a stopped process may take to exit before it is killed


class DrawingProcess:
    """One drawing process beside this one (module docstring); a context manager that
    stops it on exit. Nothing is started before :meth:`start` (or :meth:`draw`)."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._send: IO[bytes] | None = None
        self._receive: IO[bytes] | None = None
        self._asked: list[str] = []
        self._out: Path | None = None
        self._writer: threading.Thread | None = None
        self.failures: dict[str, str] = {}  # stem (or "start") -> why it was drawn here

    @property
    def pid(self) -> int | None:
        """The drawing process' id while it runs, else None."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> bool:
        """Start the process now (once); False where it cannot start (then draw here)."""
        if self._proc is not None:
            return True
        if "start" in self.failures:
            return False
        if importlib.util.find_spec("matplotlib") is None:
            self.failures["start"] = "matplotlib is not installed"
            return False
        try:
            self._spawn()
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            self.failures["start"] = f"{type(exc).__name__}: {exc}"
            return False
        return True

    def _spawn(self) -> None:
        to_child, from_parent = os.pipe()
        to_parent, from_child = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _CHILD, str(to_child), str(from_child), _PACKAGE_PARENT],
                pass_fds=(to_child, from_child),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C reaches this process only, which stops it
            )
        except BaseException:
            for fd in (from_parent, to_parent):
                os.close(fd)
            raise
        finally:
            os.close(to_child)
            os.close(from_child)
        self._send = os.fdopen(from_parent, "wb")
        self._receive = os.fdopen(to_parent, "rb")

    def draw(
        self,
        rows: Sequence[dict[str, Any]],
        summary: dict[str, Any],
        out: Path,
        stems: Sequence[str],
    ) -> bool:
        """Hand the process the figures ``stems`` of ``rows`` and ``summary`` to draw into
        ``out``; False (nothing handed) where it cannot draw them (then draw here)."""
        if self._asked:
            raise RuntimeError("collect the results of the figures handed before")
        if not stems or not self.start():
            return False
        data = pickle.dumps((list(rows), summary, str(out), list(stems)), protocol=5)
        # Written by a thread: the process may still be importing matplotlib, and a pipe
        # holds 64 KiB, so this process would wait for it instead of writing its tables.
        self._writer = threading.Thread(target=self._write, args=(data,), daemon=True)
        self._writer.start()
        self._asked, self._out = list(stems), out
        return True

    def _write(self, data: bytes) -> None:
        assert self._send is not None
        try:
            self._send.write(data)
            self._send.flush()
        except (OSError, ValueError):  # the process is gone (or stopped): results() says so
            pass

    def results(self) -> dict[str, FigureFiles]:
        """Wait for the figures handed by :meth:`draw`; those it drew, by stem. A stem left
        out was not drawn (its error is in :attr:`failures`): draw it here."""
        done: dict[str, FigureFiles] = {}
        if self._writer is not None:
            self._writer.join()
        for _ in list(self._asked):
            try:
                ok, stem, value = pickle.load(self._receive)  # type: ignore[arg-type]
            except (EOFError, OSError, pickle.UnpicklingError, ValueError) as exc:
                for stem in self._asked:
                    self.failures.setdefault(stem, f"the drawing process ended: {exc!r}")
                break
            self._asked.remove(stem)
            if ok:
                done[stem] = value
            else:
                self.failures[stem] = value
        self._forget_unfinished()
        return done

    def _forget_unfinished(self) -> None:
        """Remove what the process left of the files of stems not delivered (a killed process
        cannot remove its temporary files itself)."""
        if self._out is not None:
            for stem in self._asked:
                for ext in ("png", "svg"):
                    for tmp in self._out.glob(f".{stem}.{ext}.*.tmp"):
                        tmp.unlink(missing_ok=True)
        self._asked = []

    def close(self) -> None:
        """Stop the process (at once when it is still drawing, e.g. on Ctrl-C) and wait for
        it to exit; nothing when none was started."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if self._asked and proc.poll() is None:
            proc.terminate()  # still drawing (Ctrl-C, an error here): stop now
        else:
            _close(self._send)  # the end of its input: an idle process exits
        try:
            proc.wait(timeout=STOP_SECONDS)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if self._writer is not None:
            self._writer.join()  # the process is gone: a write still under way has failed
        _close(self._send)
        _close(self._receive)
        self._forget_unfinished()

    def __enter__(self) -> DrawingProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _close(pipe: IO[bytes] | None) -> None:
    try:
        if pipe is not None:
            pipe.close()
    except (OSError, ValueError):
        pass


def _stop(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: a file being written is removed (atomic_write)


def serve(read_fd: int, write_fd: int) -> None:
    """The drawing process: import what drawing needs, then draw each request read from
    ``read_fd`` (rows, summary, output folder, stems), answering per stem on ``write_fd``
    (True, stem, FigureFiles) or (False, stem, the error), until the input ends; then it
    exits at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the survey's process decides, and stops us
    signal.signal(signal.SIGTERM, _stop)
    figures.preload()
    with os.fdopen(read_fd, "rb") as receive, os.fdopen(write_fd, "wb") as send:
        while True:
            try:
                rows, summary, out, stems = pickle.load(receive)
            except EOFError:
                # Every file is closed and every answer flushed: exit without tearing down
                # matplotlib's objects one by one (about 0.2 s the survey's process waits).
                os._exit(0)
            for stem in stems:
                reply: tuple[bool, str, FigureFiles | str]
                try:
                    reply = (True, stem, figures.draw(rows, summary, Path(out), stem))
                except Exception as exc:  # handed back: the survey's process draws it again
                    reply = (False, stem, f"{type(exc).__name__}: {exc}")
                pickle.dump(reply, send, protocol=5)
                send.flush()
