"""
The setup directory at a revision (what ``pin explain --against REV`` builds the old graph in): every file as git
checks it out of the revision, written into a temporary directory through an index of its own, never the user's.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from conftest import git
from sispin.git.setup_history import export_setup


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A repository whose setup lives in its folder setup/, committed, then changed."""
    top = tmp_path / "repo"
    root = top / "setup"
    (root / "config").mkdir(parents=True)
    (root / "config" / "exp.py").write_text("LR = 1\n")
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "the setup")
    (root / "config" / "exp.py").write_text("LR = 2\n")
    return root


def test_the_revision_is_written_while_the_user_holds_the_index_lock(repository, tmp_path):
    # a git command of the user's holds .git/index.lock: the export must neither wait for it nor take it
    lock = repository.parent / ".git" / "index.lock"
    lock.write_text("")
    (tmp_path / "out").mkdir()
    copy = export_setup(repository, "HEAD", tmp_path / "out")
    assert (copy / "config" / "exp.py").read_text() == "LR = 1\n"
    assert lock.read_text() == "" and (repository / "config" / "exp.py").read_text() == "LR = 2\n"


def test_the_revision_is_written_to_another_filesystem(repository, tmp_path):
    # a cluster's TMPDIR is often a local disk, the setup on shared storage: git's own index file cannot be moved there
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem here (/dev/shm)")
    out = Path(os.path.realpath(shm)) / f"sispin-test-{os.getpid()}"
    out.mkdir()
    try:
        assert (export_setup(repository, "HEAD", out) / "config" / "exp.py").read_text() == "LR = 1\n"
    finally:
        shutil.rmtree(out)
