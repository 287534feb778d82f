"""
The documented command output is real: every checked block (tests/documented.py says how one is read), in README.md
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

import pytest
from documented import MARK, checked_steps, matches, plain

from conftest import PROJECT_ROOT, commit_setup, copy_shipped_mirrors, make_setup, run
from sispin.lock.files import cache_directory

DOCUMENTS = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
#: the line that marks a block of commands as shown, not run: its output is from a setup the tests do not have
ILLUSTRATIVE = "<!-- illustrative -->"


def test_the_matching_of_documented_lines():
    assert matches(["a ... c", "..."], ["a b c", "x", "y"])
    assert matches(["...", "end"], ["end"]) and not matches(["a"], ["a", "b"]) and not matches(["a ... c"], ["a b"])


DOCUMENTED = [path for path in DOCUMENTS if MARK in path.read_text()]


@pytest.mark.parametrize("document", DOCUMENTED, ids=[path.name for path in DOCUMENTED])
def test_documented_output_is_what_the_commands_print(document, real_sisyphus, shipped_mirrors, tmp_path):
    from scenarios import age_files, mirrors_redirect

    root = tmp_path / "setup"
    configs = {path.name: path.read_text() for path in (PROJECT_ROOT / "config").glob("*.py")}
    make_setup(root, (PROJECT_ROOT / "pin.toml").read_text(), real_sisyphus, configs)
    shutil.copy(PROJECT_ROOT / "pin.snapshot.toml", root)
    # the setup as shipped, its own git repository (the tour commits and merges)
    (root / ".gitignore").write_text((PROJECT_ROOT / ".gitignore").read_text())
    commit_setup(root)
    # used before, some time ago (sispin's cache directory made): a build's pass is kept from the first (its root's
    # entries changed seconds before would make it racy)
    cache_directory(root)
    age_files(root)
    env = {key: value for key, value in os.environ.items() if key not in ("PIN_LOCK", "PYTHONPATH")}
    env.update(mirrors_redirect())
    # a store of the document's own, its mirrors fetched already: no block shows the first clone
    store = copy_shipped_mirrors(shipped_mirrors, tmp_path / "store")
    env.update(PIN_HOME=str(store), PATH=f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", COLUMNS="120")
    if document.name == "README.md":  # its tour is what a user sees after `make demo`, which ran the demo set
        demo = run([sys.executable, "-m", "sispin", "run", "demo", "--", "-r"], root, env)
        assert demo.returncode == 0, demo.stdout + demo.stderr
    for command, expected in checked_steps(document.read_text()):
        result = subprocess.run(
            ["bash", "-c", command], cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, text=True,
            timeout=600, check=False,
        )  # fmt: skip
        actual = [plain(line) for line in result.stdout.splitlines()]
        assert matches(expected, actual), (
            f"{document.name}: $ {command}\n--- documented:\n"
            + "\n".join(expected)
            + "\n--- printed:\n"
            + "\n".join(actual)
        )


def test_the_readme_fits_on_a_page_or_two_and_links_into_the_site():
    lines = (PROJECT_ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    linked = set(re.findall(r"\]\(docs/([a-z0-9-]+\.md)", "\n".join(lines)))
    pages = {path.name for path in (PROJECT_ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= linked, sorted(pages - linked)


def test_every_example_of_commands_is_checked_or_marked_illustrative():
    # an illustrative block shows what needs more than the shipped setup (a real i6_experiments pipeline, SLURM,
    # another setup sharing the store): the reader and the next maintainer can tell it from a checked one
    unmarked = []
    for document in DOCUMENTS:
        lines = document.read_text().splitlines()
        fences = [index for index, line in enumerate(lines) if line.lstrip().startswith("```")]
        for start, end in zip(fences[::2], fences[1::2]):
            commands = any(line.lstrip().startswith("$ ") for line in lines[start + 1 : end])
            if commands and lines[start - 1].strip() not in (MARK, ILLUSTRATIVE):
                unmarked.append(f"{document.name}:{start + 1}")
    assert not unmarked, unmarked
