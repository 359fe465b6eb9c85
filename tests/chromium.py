"""Drive headless Chromium over the DevTools protocol, with the standard library only.

Chromium is started with ``--remote-debugging-pipe``: it reads protocol messages from file
descriptor 3 and writes to descriptor 4, each message JSON terminated by a NUL byte. No
websocket and no port are needed. Used by the browser test of the HTML report.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

INSTALL_COMMAND = "apt-get update && apt-get install -y chromium"
ENV_BINARY = "NASFILTER_CHROMIUM"


class ChromiumMissing(RuntimeError):
    """No Chromium binary was found."""


class ProtocolError(RuntimeError):
    """Chromium answered a command with an error, or not in time."""


def find_chromium() -> str:
    """The Chromium binary: ``$NASFILTER_CHROMIUM``, else ``chromium`` on PATH."""
    override = os.environ.get(ENV_BINARY)
    if override:
        if shutil.which(override) is None:
            raise ChromiumMissing(
                f"${ENV_BINARY}={override!r} is not an executable; unset it, or install "
                f"Debian's Chromium: `{INSTALL_COMMAND}`"
            )
        return override
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise ChromiumMissing(
        "headless Chromium is required by the report's browser test and was not found on "
        f"PATH. Install Debian's package: `{INSTALL_COMMAND}` (or point ${ENV_BINARY} at a "
        "Chromium binary)."
    )


def _high_dup(fd: int) -> int:
    """Duplicate ``fd`` to a descriptor >= 10 so it cannot collide with 3 or 4."""
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)


class Chromium:
    """One headless Chromium process and one page session, driven over the pipe."""

    def __init__(self, width: int = 1280, height: int = 900, timeout: float = 30.0) -> None:
        binary = find_chromium()
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="nasfilter-chromium-")
        to_chrome_r, to_chrome_w = os.pipe()
        from_chrome_r, from_chrome_w = os.pipe()
        child_in, child_out = _high_dup(to_chrome_r), _high_dup(from_chrome_w)
        os.close(to_chrome_r)
        os.close(from_chrome_w)

        def wire_fds() -> None:  # runs in the child, before exec
            os.dup2(child_in, 3)
            os.dup2(child_out, 4)

        args = [
            binary,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--hide-scrollbars",
            "--remote-debugging-pipe",
            f"--user-data-dir={self._profile.name}",
            f"--window-size={width},{height}",
            "about:blank",
        ]
        self._stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self._stderr,
            close_fds=False,
            preexec_fn=wire_fds,
        )
        os.close(child_in)
        os.close(child_out)
        self._write_fd = to_chrome_w
        self._read_fd = from_chrome_r
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        try:
            self._attach()
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------- protocol
    def _stderr_tail(self) -> str:
        self._stderr.seek(0)
        return self._stderr.read().decode("utf-8", "replace")[-2000:]

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ProtocolError(
                    f"Chromium did not answer in time; stderr:\n{self._stderr_tail()}"
                )
            ready, _, _ = select.select([self._read_fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._read_fd, 1 << 20)
            if not chunk:
                raise ProtocolError(f"Chromium closed the pipe; stderr:\n{self._stderr_tail()}")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, params: dict[str, Any] | None = None, page: bool = True) -> Any:
        """Send one command (to the page session unless ``page`` is False); return its result."""
        self._next_id += 1
        ident = self._next_id
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if page and self.session is not None:
            message["sessionId"] = self.session
        os.write(self._write_fd, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise ProtocolError(f"{method} failed: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        """Wait for the next event named ``method`` (one already received counts)."""
        for k, event in enumerate(self.events):
            if event["method"] == method:
                return self.events.pop(k)
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read_message(deadline)
            if message.get("method") == method:
                return message
            if "method" in message:
                self.events.append(message)

    def _attach(self) -> None:
        targets = self.send("Target.getTargets", page=False)["targetInfos"]
        pages = [t for t in targets if t["type"] == "page"]
        if pages:
            target = pages[0]["targetId"]
        else:
            target = self.send("Target.createTarget", {"url": "about:blank"}, page=False)[
                "targetId"
            ]
        self.session = self.send(
            "Target.attachToTarget", {"targetId": target, "flatten": True}, page=False
        )["sessionId"]
        self.send("Page.enable")
        self.send("Network.enable")

    # ------------------------------------------------------------- helpers
    def open(self, path: Path) -> None:
        """Navigate to a local file and wait for its load event."""
        self.events.clear()
        result = self.send("Page.navigate", {"url": path.resolve().as_uri()})
        if result.get("errorText"):
            raise ProtocolError(f"navigating to {path} failed: {result['errorText']}")
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """Evaluate a JavaScript expression in the page (awaiting a promise); return its value."""
        result = self.send(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            raise ProtocolError(f"script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def requested_urls(self) -> list[str]:
        """URLs the page requested since the last :meth:`open`."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def screenshot_full_page(self) -> bytes:
        """A PNG of the whole page, not only the viewport."""
        metrics = self.send("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.send(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True, "clip": clip},
        )
        return base64.b64decode(shot["data"])

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.send("Browser.close", page=False)
                except (ProtocolError, OSError):
                    pass
                try:
                    self.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait(timeout=5)
        finally:
            for fd in (self._write_fd, self._read_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._stderr.close()
            self._profile.cleanup()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
