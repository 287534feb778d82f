"""
``make`` and ``make help`` list every target a user may run, from the Makefile's own header; the suite's ``-n auto``
starts a worker per core and one more.
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


@pytest.mark.parametrize("asked", ["", "1"])
def test_the_suite_runs_a_worker_per_core_and_one_more_unless_the_caller_says_how_many(
    asked, pytestconfig, monkeypatch
):
    from types import SimpleNamespace

    if not pytestconfig.pluginmanager.hasplugin("xdist"):
        pytest.skip("pytest-xdist is not loaded (-p no:xdist)")
    from xdist.plugin import pytest_xdist_auto_num_workers as per_core

    monkeypatch.setenv("PYTEST_XDIST_AUTO_NUM_WORKERS", asked)
    auto = SimpleNamespace(option=SimpleNamespace(numprocesses="auto"))
    # the hook as pytest-xdist calls it for -n auto: conftest's answer, else its own
    workers = pytestconfig.hook.pytest_xdist_auto_num_workers(config=auto)
    assert workers == (int(asked) if asked else per_core(auto) + 1)
