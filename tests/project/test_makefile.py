"""
``make`` and ``make help`` list every target a user may run, from the Makefile's own header; the suite's ``-n auto``
starts a worker per processor and one more.
"""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import PROJECT_ROOT


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_bare_make_and_make_help_list_every_target():
    makefile = (PROJECT_ROOT / "Makefile").read_text()
    targets = set(re.search(r"^\.PHONY: (.*)$", makefile, re.M).group(1).split()) - {"venv"}
    for command in (["make"], ["make", "help"]):
        shown = subprocess.run(command, cwd=PROJECT_ROOT, capture_output=True, text=True, check=True).stdout
        assert {word for word in targets if f"  make {word} " in shown} == targets, command


@pytest.mark.skipif(shutil.which("make") is None, reason="no make on this machine")
def test_a_pip_step_shows_what_is_installed_and_keeps_pips_failure(tmp_path):
    import sys

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "python").symlink_to(sys.executable)  # a venv as the venv step finds it: not made again
    pip = "sh -c 'echo Collecting tomlkit; echo Requirement already satisfied: x; exit 3' --"
    made = subprocess.run(
        ["make", "demo", f"VENV={tmp_path}", f"PIP={pip}"], cwd=PROJECT_ROOT, capture_output=True, text=True
    )
    assert made.returncode != 0, "pip failed: so does the step"
    assert "Collecting tomlkit" in made.stdout and "already satisfied" not in made.stdout
    assert "== pin sync" not in made.stdout


#: a test of a second or less, for a run that only shows how many workers it starts
_QUICK_TEST = f"{PROJECT_ROOT / 'tests' / 'project' / 'test_docs.py'}::test_the_matching_of_documented_lines"


@pytest.mark.parametrize("asked", ["", "1"])
def test_the_suite_runs_a_worker_per_processor_and_one_more_unless_the_caller_says_how_many(asked):
    import os
    import sys

    from sispin.graph.build import processors

    env = {**os.environ, "PYTEST_XDIST_AUTO_NUM_WORKERS": asked}
    started = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "auto", "-p", "no:cacheprovider", _QUICK_TEST],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    workers = int(asked) if asked else len(processors()) + 1
    assert f"created: {workers}/{workers} worker" in started, started
