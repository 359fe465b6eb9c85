"""Extract the code blocks of the Markdown docs and run them, in document order.

What runs: every fenced block whose language is ``python``, ``sh``, ``bash`` or ``console``
in ``README.md`` and ``docs/*.md``. Other languages (``text``, ``toml``, ...) are not run.

- ``python`` blocks of one file share one namespace and run in order in one interpreter,
  like a notebook; tracebacks point at the Markdown file and line.
- ``sh`` / ``bash`` blocks run through ``bash -euo pipefail``; ``console`` blocks run only
  their ``$ ``-prefixed lines (the other lines are sample output and are not compared).
- A block whose info string names a file, such as ```` ```python file=my_searcher.py ````,
  is not run: its code is written to that file (in document order), for later blocks and
  commands to import or run.
- Every block of a file runs in one fresh temporary directory, shared by the file's blocks
  (so a later block can read what an earlier one wrote). The repository's ``examples``,
  ``tests``, ``docs``, ``scripts`` and ``benchmarks`` folders are linked into it, so a
  command such as ``python examples/custom_searcher.py`` works; ``.venv/bin`` is first on
  PATH and the package is importable.

A block that must not run is preceded (on the nearest non-blank line) by a comment giving
the reason, for example before a download of the real NATS archive::

    <!-- no-run: needs the real NATS-Bench archive, not reachable from CI -->

Run by ``tests/test_docs.py``; ``python tests/docs_runner.py FILE.md`` runs one file.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUN_LANGUAGES = {"python": "python", "py": "python", "sh": "sh", "bash": "sh", "console": "console"}
LINKED = ("examples", "tests", "docs", "scripts", "benchmarks")
NO_RUN = re.compile(r"^<!--\s*no-run:(?P<reason>.*?)-->\s*$")
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^`]*)$")


@dataclass(frozen=True)
class Block:
    """One fenced code block. ``line`` is the 1-based line of its first code line."""

    path: str
    line: int
    language: str  # "python", "sh", "console", or the raw info word of other blocks
    code: str
    runs: bool
    reason: str = ""  # why it does not run, from its no-run comment
    file: str = ""  # write the code to this file (relative to the work dir) instead of running

    @property
    def where(self) -> str:
        return f"{self.path}:{self.line}"


def doc_files(repo: Path = REPO) -> list[Path]:
    """README.md and docs/*.md, in a fixed order."""
    files = [repo / "README.md"] if (repo / "README.md").is_file() else []
    return files + sorted((repo / "docs").glob("*.md"))


def extract_blocks(text: str, path: str) -> list[Block]:
    """Every fenced block of a Markdown text, with its language and no-run status.

    Raises ValueError naming the line for a no-run comment without a reason, one not
    followed by a block, and an unclosed fence.
    """
    lines = text.splitlines()
    blocks: list[Block] = []
    pending: tuple[int, str] | None = None  # (line, reason) of a no-run comment
    k = 0
    while k < len(lines):
        line = lines[k]
        marker = NO_RUN.match(line.strip())
        if marker:
            reason = marker.group("reason").strip()
            if not reason:
                raise ValueError(f"{path}:{k + 1}: a no-run comment must give a reason")
            pending = (k + 1, reason)
            k += 1
            continue
        fence = FENCE.match(line)
        if not fence:
            if line.strip() and pending is not None:
                raise ValueError(
                    f"{path}:{pending[0]}: a no-run comment must come right before a code block"
                )
            k += 1
            continue
        info = fence.group("info").strip()
        words = info.split()
        word = words[0].lower() if words else ""
        options = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        file_name = options.get("file", "")
        if file_name and (Path(file_name).is_absolute() or ".." in Path(file_name).parts):
            raise ValueError(
                f"{path}:{k + 1}: file={file_name} must be a relative path in the work dir"
            )
        closing = fence.group("fence")
        body: list[str] = []
        start = k + 2
        k += 1
        while k < len(lines) and not lines[k].strip().startswith(closing):
            body.append(lines[k])
            k += 1
        if k >= len(lines):
            raise ValueError(f"{path}:{start - 1}: code block is never closed")
        k += 1  # the closing fence
        language = RUN_LANGUAGES.get(word, word)
        runnable = language in ("python", "sh", "console") and not file_name
        blocks.append(
            Block(
                path=path,
                line=start,
                language=language,
                code="\n".join(body) + "\n",
                runs=runnable and pending is None,
                reason=pending[1] if pending else "",
                file=file_name if pending is None else "",
            )
        )
        pending = None
    if pending is not None:
        raise ValueError(
            f"{path}:{pending[0]}: a no-run comment must come right before a code block"
        )
    return blocks


def console_commands(code: str) -> str:
    """The shell commands of a console block: its ``$ `` lines, joined by newlines."""
    commands = [ln.strip()[2:] for ln in code.splitlines() if ln.strip().startswith("$ ")]
    return "\n".join(commands) + "\n"


def docs_env(repo: Path = REPO) -> dict[str, str]:
    """The environment blocks run in: .venv/bin first on PATH, the package importable."""
    env = dict(os.environ)
    bins = [str(repo / ".venv" / "bin"), str(Path(sys.executable).parent)]
    env["PATH"] = os.pathsep.join([*bins, env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join([str(repo), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["MPLBACKEND"] = "Agg"
    env.setdefault("PYTHONHASHSEED", "0")
    return env


# ---------------------------------------------------------------- the driver
def _run_blocks(blocks: list[Block], workdir: Path) -> int:
    """Run ``blocks`` in order inside ``workdir``; print a FAILED line and return 1 on failure."""
    os.chdir(workdir)
    sys.path[0] = str(workdir)  # as if a script in the work dir, not in tests/
    namespace: dict[str, object] = {"__name__": "__main__"}
    for block in blocks:
        if block.file:
            target = workdir / block.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
            print(f"--- {block.where}: wrote {block.file}", flush=True)
            continue
        if not block.runs:
            continue
        print(f"--- {block.where} ({block.language})", flush=True)
        if block.language == "python":
            # Pad so that tracebacks give the block's lines in the Markdown file.
            source = "\n" * (block.line - 1) + block.code
            try:
                exec(compile(source, block.path, "exec"), namespace)
            except BaseException:
                traceback.print_exc()
                print(f"FAILED {block.where} (python block)", flush=True)
                return 1
            sys.stdout.flush()
            continue
        script = block.code if block.language == "sh" else console_commands(block.code)
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], check=False)
        if done.returncode != 0:
            print(
                f"FAILED {block.where} ({block.language} block, exit {done.returncode})",
                flush=True,
            )
            return 1
    return 0


def run_file(
    path: Path, repo: Path = REPO, timeout: float = 600.0
) -> subprocess.CompletedProcess[str]:
    """Run one Markdown file's blocks in a fresh interpreter and temp dir; capture output."""
    relative = str(path.resolve().relative_to(repo)) if path.is_absolute() else str(path)
    blocks = extract_blocks(path.read_text(encoding="utf-8"), relative)
    with tempfile.TemporaryDirectory(prefix="nasfilter-docs-") as tmp:
        work = Path(tmp)
        for name in LINKED:
            if (repo / name).exists():
                (work / name).symlink_to(repo / name)
        spec = work / ".blocks.json"
        spec.write_text(json.dumps([asdict(b) for b in blocks]), encoding="utf-8")
        return subprocess.run(
            [sys.executable, str(Path(__file__).resolve()), "--driver", str(spec)],
            cwd=work,
            env=docs_env(repo),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--driver":
        spec = Path(argv[1])
        blocks = [Block(**b) for b in json.loads(spec.read_text(encoding="utf-8"))]
        return _run_blocks(blocks, spec.parent)
    code = 0
    for name in argv or [str(p) for p in doc_files()]:
        done = run_file(Path(name).resolve())
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        code |= done.returncode
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
