"""Helpers for tests that interrupt a child process with SIGINT (what Ctrl-C sends).

A process started in the background by a non-interactive shell (``pytest ... &``, nohup,
some CI runners) inherits SIGINT *ignored*, and a Python started with SIGINT ignored keeps
it ignored (it installs its ``KeyboardInterrupt`` handler only over the default action). A
child of such a test would then run to its end on Ctrl-C and exit 0, so the test would fail
for a reason that is not the code's. :func:`sigint_default` gives the child the default
action back before it starts, as an interactive terminal would.
"""

from __future__ import annotations

import signal


def sigint_default() -> None:
    """``preexec_fn`` of a child that a test will interrupt: SIGINT to its default action."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
