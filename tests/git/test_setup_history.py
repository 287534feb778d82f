"""
The setup directory at a revision (what ``pin explain --against REV`` builds the old graph in): every file exactly as
git checks it out of the revision, those the working tree holds byte for byte as committed linked, not written.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict, Tuple

import pytest

from conftest import git
from sispin.git.setup_history import export_setup


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A repository whose setup lives in its folder setup/, committed: three files, one of them executable."""
    top = tmp_path / "repo"
    root = top / "setup"
    (root / "config").mkdir(parents=True)
    (root / "config" / "exp.py").write_text("LR = 1\n")
    (root / "recipe.py").write_text("X = 1\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "-A")
    git(top, "commit", "-q", "-m", "the setup")
    return root


def _empty(folder: Path) -> Path:
    folder.mkdir()
    return folder


def _tree(folder: Path) -> Dict[str, Tuple[bytes, bool]]:
    """:return: every file below folder: its bytes, and whether it is executable"""
    return {
        str(path.relative_to(folder)): (path.read_bytes(), os.access(path, os.X_OK))
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def _checked_out(root: Path, folder: Path) -> Path:
    """The setup directory as git itself checks the revision HEAD out, every file written (no link)."""
    top = Path(git(root, "rev-parse", "--show-toplevel"))
    index = folder / "index"
    git(root, "read-tree", f"--index-output={index}", f"HEAD:{root.relative_to(top)}")
    environment = {**os.environ, "GIT_INDEX_FILE": str(index)}
    subprocess.run(
        ["git", "checkout-index", "--all", f"--prefix={folder}/files/"], cwd=top, env=environment, check=True
    )
    return folder / "files"


def _exported(root: Path, tmp_path: Path) -> Tuple[Path, Dict[str, bool]]:
    """:return: the export of HEAD (the same as git's own checkout), and per file whether it was linked"""
    copy = export_setup(root, "HEAD", _empty(tmp_path / "out"))
    assert _tree(copy) == _tree(_checked_out(root, _empty(tmp_path / "reference")))
    files = _tree(copy)
    return copy, {name: (root / name).exists() and os.path.samefile(copy / name, root / name) for name in files}


def test_files_the_working_tree_holds_as_committed_are_linked_the_others_written(repository, tmp_path):
    (repository / "config" / "exp.py").write_text("LR = 2\n")  # changed since
    (repository / "recipe.py").write_text("X = 2\n")
    git(repository, "add", "recipe.py")  # changed and staged
    _, linked = _exported(repository, tmp_path)
    assert linked == {"config/exp.py": False, "recipe.py": False, "run.sh": True}
    assert git(repository, "status", "--porcelain") == "M setup/config/exp.py\nM  setup/recipe.py"


def test_a_file_the_index_does_not_vouch_for_is_written_as_committed(repository, tmp_path):
    # assumed unchanged: git diff trusts the index, not the file; skipped (sparse): the file may not be there at all
    git(repository, "update-index", "--assume-unchanged", "config/exp.py")
    (repository / "config" / "exp.py").write_text("LR = 2\n")
    git(repository, "update-index", "--skip-worktree", "recipe.py")
    (repository / "recipe.py").unlink()
    copy, linked = _exported(repository, tmp_path)
    assert (copy / "config" / "exp.py").read_text() == "LR = 1\n" and (copy / "recipe.py").read_text() == "X = 1\n"
    assert linked == {"config/exp.py": False, "recipe.py": False, "run.sh": True}


@pytest.mark.parametrize("where", ["an untracked attributes file", "the repository's attributes", "core.autocrlf"])
def test_a_file_a_checkout_converts_is_written_by_git(repository, tmp_path, where):
    # a checkout writes CRLF into these files: the working tree's LF file, which git diff calls unchanged, is no copy
    top = repository.parent
    if where == "an untracked attributes file":
        (top / ".gitattributes").write_text("*.py eol=crlf\n")
    elif where == "the repository's attributes":
        (top / ".git" / "info").mkdir(exist_ok=True)
        (top / ".git" / "info" / "attributes").write_text("*.py eol=crlf\n")
    else:
        git(repository, "config", "core.autocrlf", "true")
    copy, linked = _exported(repository, tmp_path)
    assert (copy / "config" / "exp.py").read_bytes() == b"LR = 1\r\n" and not linked["config/exp.py"]


def test_a_revision_with_attributes_links_nothing(repository, tmp_path):
    # the checkout reads the revision's attributes, which the working tree and index no longer hold
    (repository / ".gitattributes").write_text("*.py eol=crlf\n")
    git(repository, "add", ".gitattributes")
    git(repository, "commit", "-q", "-m", "attributes")
    git(repository, "rm", "-q", ".gitattributes")
    copy, linked = _exported(repository, tmp_path)
    assert (copy / "recipe.py").read_bytes() == b"X = 1\r\n" and not any(linked.values())


def test_a_copy_on_another_filesystem_is_written(repository, tmp_path):
    # a cluster's TMPDIR is often a local disk, the setup on shared storage: no link reaches across, nor a rename
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem here (/dev/shm)")
    out = Path(os.path.realpath(shm)) / f"sispin-test-{os.getpid()}"
    out.mkdir()
    try:
        copy = export_setup(repository, "HEAD", out)
        assert (copy / "recipe.py").read_text() == "X = 1\n"
        assert os.stat(copy / "recipe.py").st_ino != os.stat(repository / "recipe.py").st_ino
    finally:
        shutil.rmtree(out)
