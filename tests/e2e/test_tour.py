"""
README's tour exactly as printed, where ``make demo`` ran: its checked blocks, command by command, in that clone, with
``pin`` found the way README says (``source .venv/bin/activate`` puts .venv/bin first on PATH). .ci/run runs this
file after ``make demo`` twice without a terminal in its clone (``SISPIN_TOUR_ROOT``); the suite leaves it out (see
tests/conftest.py), as each run would need a ``make demo`` of its own. The tour edits config/demo.py: the test puts
it back.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Set

from documented import checked_steps, matches, plain

from conftest import PROJECT_ROOT, TOUR_HOME, TOUR_ROOT


def test_the_readme_tour_as_printed_after_make_demo():
    root = TOUR_ROOT
    assert (root / ".venv" / "bin" / "pin").is_file(), f"{root}: no .venv/bin/pin (make demo did not run there)"
    env = dict(os.environ, PATH=f"{root / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}", COLUMNS="120")
    env["HOME"] = TOUR_HOME  # the store make demo filled (~/.cache/sispin), as the user who ran it has it
    env.pop("PIN_HOME", None)
    edited_before = _edited(root)
    try:
        for command, expected in checked_steps((PROJECT_ROOT / "README.md").read_text()):
            result = subprocess.run(
                ["bash", "-c", command], cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT, text=True, timeout=600, check=False,
            )  # fmt: skip
            actual = [plain(line) for line in result.stdout.splitlines()]
            assert matches(expected, actual), (
                f"$ {command}\n--- README:\n" + "\n".join(expected) + "\n--- printed:\n" + "\n".join(actual)
            )
    finally:  # the tour edits config/demo.py: what it edited is put back, what was edited before is left alone
        restored = sorted(_edited(root) - edited_before)
        if restored:
            subprocess.run(["git", "checkout", "--", *restored], cwd=root, check=True)


def _edited(root: Path) -> Set[str]:
    """:return: the tracked files with changes in the clone's working tree"""
    listed = subprocess.run(["git", "diff", "--name-only"], cwd=root, capture_output=True, text=True, check=True)
    return set(listed.stdout.split())
