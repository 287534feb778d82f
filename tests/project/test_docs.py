"""
The documented command output is real: every fenced block that a ``<!-- checked -->`` line introduces, in README.md
and docs/*.md, is run, command by command (``$ ...`` lines, through bash), in a copy of the shipped setup (real
Sisyphus, i6_core, and the returnn_common/RETURNN history of the bundles), the blocks of one file in order; what each
command prints (stdout and stderr) must match the lines shown under it. A line ``...`` stands for any lines, and
``...`` inside a line for any text (a time, a temporary path).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

from conftest import PROJECT_ROOT, commit_setup, copy_shipped_mirrors, make_setup

#: the line that marks a block as checked
MARK = "<!-- checked -->"
DOCUMENTS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]

#: a command and the lines documented under it
Step = Tuple[str, List[str]]


def checked_steps(text: str) -> List[Step]:
    """The commands of a document's checked blocks, in order, each with its documented output."""
    steps: List[Step] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        fence = lines[index + 1]
        assert fence.lstrip().startswith("```"), f"{MARK} must stand right above a fenced block (line {index + 1})"
        indent = len(fence) - len(fence.lstrip())  # a block in a list item is indented with it
        end = next(i for i in range(index + 2, len(lines)) if lines[i].lstrip().startswith("```"))
        for body in (line[indent:] for line in lines[index + 2 : end]):
            if body.startswith("$ "):
                steps.append((body[2:], []))
            else:
                assert steps, f"output before the first command in the block at line {index + 2}"
                steps[-1][1].append(body)
    return steps


def matches(expected: List[str], actual: List[str]) -> bool:
    """Whether the actual lines are the expected ones, ``...`` lines (indented or not) standing for any lines."""
    patterns = [
        None if line.strip() == "..." else re.compile(".*".join(map(re.escape, line.split("...")))) for line in expected
    ]
    memo: Dict[Tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(patterns):
                memo[i, j] = j == len(actual)
            elif patterns[i] is None:
                memo[i, j] = match(i + 1, j) or (j < len(actual) and match(i, j + 1))
            else:
                memo[i, j] = j < len(actual) and bool(patterns[i].fullmatch(actual[j])) and match(i + 1, j + 1)
        return memo[i, j]

    return match(0, 0)


def test_the_matching_of_documented_lines():
    assert matches(["a ... c", "..."], ["a b c", "x", "y"])
    assert matches(["...", "end"], ["end"]) and not matches(["a"], ["a", "b"]) and not matches(["a ... c"], ["a b"])


DOCUMENTED = [path for path in DOCUMENTS if MARK in path.read_text()]


@pytest.mark.parametrize("document", DOCUMENTED, ids=[path.name for path in DOCUMENTED])
def test_documented_output_is_what_the_commands_print(document, real_sisyphus, shipped_mirrors, tmp_path):
    from scenarios import mirrors_redirect

    root = tmp_path / "setup"
    configs = {path.name: path.read_text() for path in (PROJECT_ROOT / "config").glob("*.py")}
    make_setup(root, (PROJECT_ROOT / "pin.toml").read_text(), real_sisyphus, configs)
    shutil.copy(PROJECT_ROOT / "pin.snapshot.toml", root)
    # the setup as shipped, its own git repository (the tour commits and merges)
    (root / ".gitignore").write_text((PROJECT_ROOT / ".gitignore").read_text())
    commit_setup(root)
    env = {key: value for key, value in os.environ.items() if key not in ("PIN_LOCK", "PYTHONPATH")}
    env.update(mirrors_redirect())
    # a store of the document's own, its mirrors fetched already: no block shows the first clone
    store = copy_shipped_mirrors(shipped_mirrors, tmp_path / "store")
    env.update(PIN_HOME=str(store), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", COLUMNS="120")
    for command, expected in checked_steps(document.read_text()):
        result = subprocess.run(
            ["bash", "-c", command], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            timeout=600, check=False,
        )  # fmt: skip
        actual = [_plain(line) for line in result.stdout.splitlines()]
        assert matches(expected, actual), (
            f"{document.name}: $ {command}\n--- documented:\n"
            + "\n".join(expected)
            + "\n--- printed:\n"
            + "\n".join(actual)
        )


def _plain(line: str) -> str:
    """A line as a reader sees it: without terminal colours, without trailing spaces."""
    return re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip()


def test_the_readme_fits_on_a_page_or_two_and_links_into_the_site():
    lines = (PROJECT_ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    linked = set(re.findall(r"\]\(docs/([a-z0-9-]+\.md)", "\n".join(lines)))
    pages = {path.name for path in (PROJECT_ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= linked, sorted(pages - linked)
