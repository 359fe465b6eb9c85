"""Every command and code block in README.md and docs/*.md runs (see tests/docs_runner.py).

A block that must not run carries ``<!-- no-run: reason -->`` on the line before it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs_runner import REPO, console_commands, doc_files, extract_blocks, run_file

DOCS = doc_files()


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("path", DOCS, ids=[str(p.relative_to(REPO)) for p in DOCS])
def test_doc_code_runs(path: Path) -> None:
    done = run_file(path)
    if done.returncode != 0:
        failed = [ln for ln in done.stdout.splitlines() if ln.startswith("FAILED ")]
        where = (
            failed[-1] if failed else f"FAILED {path.relative_to(REPO)} (exit {done.returncode})"
        )
        pytest.fail(
            f"{where}\n--- stdout (tail)\n{done.stdout[-4000:]}\n--- stderr (tail)\n"
            f"{done.stderr[-4000:]}",
            pytrace=False,
        )


def test_docs_exist_and_have_code() -> None:
    names = {p.name for p in DOCS}
    assert "README.md" in names
    n_run = sum(b.runs for p in DOCS for b in extract_blocks(p.read_text("utf-8"), p.name))
    assert n_run > 0


def test_exemptions_are_few_and_justified() -> None:
    exempt = [
        b
        for p in DOCS
        for b in extract_blocks(p.read_text("utf-8"), str(p.relative_to(REPO)))
        if b.reason
    ]
    for block in exempt:
        assert len(block.reason) >= 15, f"{block.where}: give a real reason, not {block.reason!r}"
    # Exemptions are for what CI cannot do (the real archive, a GPU, the make targets that
    # build the environment itself); keep the list short.
    assert len(exempt) <= 8, [b.where for b in exempt]


# ------------------------------------------------------------------ the extractor
DOC = """# Title

```python
x = 1
```

<!-- no-run: downloads the real archive over the network -->
```sh
curl https://example.invalid
```

```console
$ echo one
one
$ echo two
```

```text
not code
```
"""


def test_extract_blocks_languages_lines_and_exemptions() -> None:
    blocks = extract_blocks(DOC, "doc.md")
    assert [(b.language, b.line, b.runs) for b in blocks] == [
        ("python", 4, True),
        ("sh", 9, False),
        ("console", 13, True),
        ("text", 19, False),
    ]
    assert blocks[0].code == "x = 1\n"
    assert blocks[1].reason == "downloads the real archive over the network"
    assert console_commands(blocks[2].code) == "echo one\necho two\n"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- no-run: -->\n```sh\nls\n```\n", "must give a reason"),
        ("<!-- no-run: a good reason here -->\ntext\n```sh\nls\n```\n", "right before"),
        ("<!-- no-run: a good reason here -->\n", "right before"),
        ("```python\nx = 1\n", "never closed"),
    ],
)
def test_extract_blocks_rejects_bad_markup(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as info:
        extract_blocks(text, "bad.md")
    assert "bad.md:1" in str(info.value)


def test_longer_fence_holds_a_shorter_one() -> None:
    text = "````markdown\n```python\nx\n```\n````\n"
    (block,) = extract_blocks(text, "m.md")
    assert block.language == "markdown" and "```python" in block.code


# ------------------------------------------------------------------ the runner
def _write_doc(tmp_path: Path, text: str) -> Path:
    (tmp_path / "docs").mkdir()
    doc = tmp_path / "docs" / "sample.md"
    doc.write_text(text, encoding="utf-8")
    return doc


@pytest.mark.subprocess
def test_runner_shares_state_and_files_in_order(tmp_path: Path) -> None:
    doc = _write_doc(
        tmp_path,
        "```sh\necho 41 > n.txt\n```\n\n```python\nn = int(open('n.txt').read())\n```\n\n"
        "```python\nimport nasfilter\nprint('answer', n + 1)\n```\n",
    )
    done = run_file(doc, repo=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "answer 42" in done.stdout


@pytest.mark.subprocess
@pytest.mark.parametrize(
    ("text", "where", "kind"),
    [
        (
            "text\n\n```python\nok = 1\nraise SystemExit('boom')\n```\n",
            "docs/sample.md:4",
            "python",
        ),
        ("```python\nx = 1\n```\n```sh\ntrue\nfalse\necho never\n```\n", "docs/sample.md:5", "sh"),
        ("```console\n$ true\n$ exit 3\n```\n", "docs/sample.md:2", "console"),
    ],
)
def test_runner_failure_names_file_and_line(
    tmp_path: Path, text: str, where: str, kind: str
) -> None:
    doc = _write_doc(tmp_path, text)
    done = run_file(doc, repo=tmp_path)
    assert done.returncode == 1
    assert f"FAILED {where} ({kind} block" in done.stdout
    assert "never" not in done.stdout


@pytest.mark.subprocess
def test_python_traceback_points_at_the_markdown_line(tmp_path: Path) -> None:
    doc = _write_doc(tmp_path, "# t\n\n```python\na = 1\nb = a / 0\n```\n")
    done = run_file(doc, repo=tmp_path)
    assert done.returncode == 1
    assert 'File "docs/sample.md", line 5' in done.stderr
    assert "ZeroDivisionError" in done.stderr


@pytest.mark.subprocess
def test_file_block_is_written_not_run(tmp_path: Path) -> None:
    doc = _write_doc(
        tmp_path,
        "```python file=pkg/mod.py\nprint('module body ran')\nVALUE = 7\n```\n\n"
        "```python\nimport pkg.mod\nprint('value', pkg.mod.VALUE)\n```\n",
    )
    (block, _) = extract_blocks(doc.read_text("utf-8"), "d.md")
    assert block.file == "pkg/mod.py" and not block.runs
    done = run_file(doc, repo=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("module body ran") == 1  # once, by the import
    assert "value 7" in done.stdout and "wrote pkg/mod.py" in done.stdout


@pytest.mark.subprocess
def test_no_run_block_is_skipped(tmp_path: Path) -> None:
    doc = _write_doc(
        tmp_path, "<!-- no-run: needs a GPU that CI does not have -->\n```sh\nexit 1\n```\n"
    )
    done = run_file(doc, repo=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
