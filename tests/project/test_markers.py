"""
The markers tests/conftest.py puts on every test, which ``make test-fast`` selects by: a test that uses the real
Sisyphus (the real_sisyphus fixture, directly or through any fixture built on it) is ``real``, whatever its file, so
the fast loop never runs it; a slurm test is ``cluster``, a GitHub one ``network``, a measured one ``slow``. Checked by
collecting a small suite of such tests with this conftest in a pytest of its own.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import List

from conftest import PROJECT_ROOT, SLOW_TESTS

#: one test per way of reaching what the fast loop must not need, and two that need nothing
TESTS = """\
import pytest


@pytest.fixture
def built_on_sisyphus(real_sisyphus):
    return real_sisyphus


@pytest.fixture
def built_on_that(built_on_sisyphus):
    return built_on_sisyphus


@pytest.fixture(scope="module")
def slurm():
    return None


def test_direct(real_sisyphus):
    pass


def test_through_fixtures(built_on_that):
    pass


def test_through_the_setup_builder(real_setup):
    pass


@pytest.mark.parametrize("n", [1, 2])
def test_parametrized(n, built_on_sisyphus):
    pass


def test_cluster(slurm):
    pass


def test_github(github):
    pass


def {slow}():
    pass


def test_plain(tmp_path, history):
    pass
"""


#: appended to the suite's copy of the conftest: each test's name and the markers it ends up with, one line each
REPORT = """

def pytest_collection_finish(session):
    for item in session.items:
        print("marks:", item.name, *sorted(mark.name for mark in item.iter_markers()))
"""


def collected(suite: Path, *args: str) -> List[List[str]]:
    """The tests a ``pytest --collect-only`` in suite selects, each as its name and its markers."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *args, str(suite)],
        cwd=suite,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return sorted(line.split()[1:] for line in result.stdout.splitlines() if line.startswith("marks: "))


def test_every_test_needing_sisyphus_slurm_or_github_is_marked_and_left_out_of_the_fast_loop(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text((Path(__file__).parent.parent / "conftest.py").read_text() + REPORT)
    slow = sorted(SLOW_TESTS)[0]
    (suite / "test_kinds.py").write_text(TESTS.format(slow=slow))
    assert collected(suite) == sorted(
        [
            ["test_cluster", "cluster"],
            ["test_direct", "real"],
            ["test_github", "network"],
            ["test_parametrized[1]", "parametrize", "real"],
            ["test_parametrized[2]", "parametrize", "real"],
            ["test_plain"],
            ["test_through_fixtures", "real"],
            ["test_through_the_setup_builder", "real"],
            [slow, "slow"],
        ]
    )
    # what make test-fast selects
    fast = re.search(r"^FAST = (.*)$", (PROJECT_ROOT / "Makefile").read_text(), re.M)
    assert fast and collected(suite, "-m", fast.group(1)) == [["test_plain"]]
