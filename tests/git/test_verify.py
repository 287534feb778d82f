"""
``pin verify``: a checkout is exactly its commit, as git sees it with nothing hiding a difference, and Python's
bytecode caches in it count only when they run the code of the source beside them.
"""

from __future__ import annotations

import importlib.util
import os
import py_compile
import sys
from pathlib import Path

import pytest

from conftest import git, git_commit
from sispin.cli.main import main
from sispin.git.store import Store
from sispin.lock.loading import find_lockfile
from sispin.ops.verify import VerifyResult, verify

SOURCE = "VALUE = 'pinned'\n"


@pytest.fixture
def checkout(make_repo, write_lock, capsys) -> Path:
    """A [setup.tool] checkout made by `pin sync`, at the pinned commit, clean."""
    remote = make_repo("tool")
    commit = git_commit(remote, {"tool/__init__.py": SOURCE, "tool/other.py": "OTHER = 1\n", ".gitignore": "*.log\n"})
    lock = write_lock(
        f'version = 1\n\n[setup.tool]\nurl = "file://{remote}"\ncommit = "{commit}"\npath = "tools/tool"\n'
    )
    assert main(["sync"]) == 0
    assert main(["verify"]) == 0
    capsys.readouterr()
    return lock.parent / "tools" / "tool"


def verified(*sets: str) -> VerifyResult:
    """What ``pin verify`` finds, as its operation returns it."""
    return verify(find_lockfile(), sets, Store())


def problems(capsys) -> str:
    """:return: the problems ``pin verify`` finds, one line each (there must be one)"""
    found = verified().problems
    assert found
    return "\n".join(f"{checkout.label}: {checkout.problem}" for checkout in found)


def bytecode(source: Path, mode: py_compile.PycInvalidationMode = py_compile.PycInvalidationMode.TIMESTAMP) -> Path:
    return Path(
        py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)), invalidation_mode=mode)
    )


def test_bytecode_python_writes_for_the_sources_is_accepted(checkout, capsys):
    bytecode(checkout / "tool" / "__init__.py")
    bytecode(checkout / "tool" / "other.py", py_compile.PycInvalidationMode.CHECKED_HASH)
    assert not verified().problems


def test_unchecked_hash_bytecode_is_reported(checkout, capsys):
    # Python runs it whatever the source says
    pyc = bytecode(checkout / "tool" / "__init__.py", py_compile.PycInvalidationMode.UNCHECKED_HASH)
    assert f"{pyc.relative_to(checkout)} (untracked)" in problems(capsys)


def test_bytecode_of_other_code_with_the_sources_stamp_is_reported(checkout, capsys):
    source = checkout / "tool" / "__init__.py"
    stats = source.stat()
    os.chmod(source.parent, 0o755)
    source.write_text(SOURCE.replace("pinned", "placed"))  # same size
    os.utime(source, ns=(stats.st_atime_ns, stats.st_mtime_ns))
    pyc = bytecode(source)
    source.write_text(SOURCE)
    os.utime(source, ns=(stats.st_atime_ns, stats.st_mtime_ns))
    # its header matches the source, so Python would run 'placed'
    assert f"{pyc.relative_to(checkout)} (untracked)" in problems(capsys)


def test_stale_bytecode_is_accepted_as_python_ignores_it(checkout, capsys):
    pyc = bytecode(checkout / "tool" / "__init__.py")
    data = bytearray(pyc.read_bytes())
    data[8:12] = (int.from_bytes(data[8:12], "little") - 5).to_bytes(4, "little")  # another source mtime
    data[16:] = bytecode_of("VALUE = 'other code'\n")
    pyc.write_bytes(bytes(data))
    assert not verified().problems


def bytecode_of(text: str) -> bytes:
    import marshal

    return marshal.dumps(compile(text, "x", "exec"))


def test_bytecode_of_another_python_with_the_sources_stamp_is_accepted(checkout, capsys):
    # a second Python on the same checkout (a venv of 3.9 beside 3.11): its caches cannot be compiled here
    pyc = bytecode(checkout / "tool" / "__init__.py")
    data = bytearray(pyc.read_bytes())
    data[:2] = (int.from_bytes(data[:2], "little") - 1).to_bytes(2, "little")  # another magic number
    other = pyc.with_name(pyc.name.replace(sys.implementation.cache_tag, "cpython-30"))
    other.write_bytes(bytes(data))
    pyc.unlink()
    assert not verified().problems


def test_bytecode_without_its_source_and_other_untracked_files_are_reported(checkout, capsys):
    stray = checkout / "tool" / "__pycache__" / "gone.cpython-311.pyc"
    stray.parent.mkdir()
    stray.write_bytes(b"\0" * 16)
    out = problems(capsys)
    assert "tool/__pycache__/gone.cpython-311.pyc (untracked)" in out


def test_files_git_ignores_are_reported(checkout, capsys):
    (checkout / "run.log").write_text("a .gitignore of the commit hides it\n")
    (checkout / ".git" / "info" / "exclude").write_text("secret.py\n")
    (checkout / "secret.py").write_text("import os\n")
    out = problems(capsys)
    assert "run.log (ignored by git)" in out and "secret.py (ignored by git)" in out


def test_files_marked_skip_worktree_or_assume_unchanged_are_compared_all_the_same(checkout, capsys):
    git(checkout, "update-index", "--skip-worktree", "tool/other.py")
    git(checkout, "update-index", "--assume-unchanged", "tool/__init__.py")
    (checkout / "tool" / "other.py").write_text("OTHER = 2\n")
    (checkout / "tool" / "__init__.py").write_text(SOURCE.replace("pinned", "edited"))
    out = problems(capsys)
    assert "tool/other.py (modified)" in out and "tool/__init__.py (modified)" in out


def test_an_edit_that_keeps_the_size_and_the_times_is_seen(checkout, capsys):
    # git status trusts its stat cache: same size, times put back, ctime not trusted
    git(checkout, "config", "core.trustctime", "false")
    source = checkout / "tool" / "__init__.py"
    stats = source.stat()
    os.chmod(source.parent, 0o755)
    source.write_text(SOURCE.replace("pinned", "placed"))
    os.utime(source, ns=(stats.st_atime_ns, stats.st_mtime_ns))
    assert "tool/__init__.py (modified)" in problems(capsys)


def test_a_core_worktree_that_points_elsewhere_is_not_followed(checkout, tmp_path, capsys):
    clean = tmp_path / "clean"
    git(tmp_path, "clone", "-q", str(checkout), str(clean))
    git(checkout, "config", "core.worktree", str(clean))
    os.chmod(checkout / "tool", 0o755)
    (checkout / "tool" / "__init__.py").write_text("VALUE = 222\n")
    assert "tool/__init__.py (modified)" in problems(capsys)


def test_a_tree_of_another_commit_under_a_replaced_head_is_reported(checkout, capsys):
    head = git(checkout, "rev-parse", "HEAD")
    other = git_commit(checkout, {"tool/__init__.py": "VALUE = 'other'\n"}, "other")
    git(checkout, "checkout", "-q", "--detach", head)
    git(checkout, "replace", head, other)  # HEAD now reads as the other commit's tree
    git(checkout, "read-tree", "-u", "--reset", head)
    assert "tool/__init__.py (modified)" in problems(capsys)


def test_a_missing_checkout_says_so(checkout, capsys):
    import shutil

    shutil.rmtree(checkout)
    assert "tools/tool does not exist (`pin sync` makes it)" in problems(capsys)


def test_sync_accepts_files_git_ignores_in_a_checkout_at_its_pin(checkout, capsys):
    (checkout / "run.log").write_text("a log of a run\n")
    assert main(["sync"]) == 0
    assert "  ok" in capsys.readouterr().out


SPARSE_CONFIG = """\
from sisyphus import tk

from sispin import experiment_set


def py():
    tk.register_output("s/tool", experiment_set("s").repo("tool"))
"""


def test_a_sparse_clone_job_is_verified_against_its_files_of_the_commit(real_setup, make_repo, capsys):
    # i6_core's files_to_checkout clones without checking out, then checks out the listed files of the commit: HEAD
    # stays at the branch's head, and only those files are there
    from conftest import run_manager

    remote = make_repo("tool")
    pinned = git_commit(remote, {"a.py": "A = 1\n", "b.py": "B = 1\n", "dir/c.py": "C = 1\n"})
    git_commit(remote, {"a.py": "A = 2\n"}, "the branch moved on")
    tables = (
        f'[repos.tool]\nurl = "file://{remote}"\n\n[sets.s]\nconfigs = ["config/s.py"]\n'
        f'tool = {{ commit = "{pinned}", files_to_checkout = ["a.py", "dir"] }}\n'
    )
    root = real_setup(tables, {"s.py": SPARSE_CONFIG})
    assert "All output calculated" in run_manager(root, "config/s.py")
    result = verified("s")
    # the finished clone job in work/ is among the checkouts verified
    assert not result.problems and any("work" in checkout.path.parts for checkout in result.checkouts)
    clone = (root / "output" / "s" / "tool").resolve()
    assert sorted(p.name for p in clone.iterdir() if p.name != ".git") == ["a.py", "dir"]
    (clone / "a.py").write_text("A = 3\n")
    (clone / "b.py").write_text("B = 1\n")
    [problem] = verified("s").problems
    assert "a.py (modified)" in problem.problem and "b.py (untracked)" in problem.problem


TWIN_CONFIG = """\
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import tk

from sispin import experiment_set


def py():
    exp = experiment_set("s")
    tk.register_output("s/tool", exp.repo("tool"))
    twin = CloneGitRepositoryJob(exp.lockfile.repos["tool"].url + "/", commit=exp.commit("tool"))
    tk.register_output("s/twin", twin.out_repository)
"""


def test_every_clone_of_a_pin_is_verified_also_a_twin_and_a_cleaned_up_job(real_setup, make_repo, capsys):
    from conftest import run_manager

    remote = make_repo("tool")
    pinned = git_commit(remote, {"a.py": "A = 1\n"})
    tables = f'[repos.tool]\nurl = "file://{remote}"\n\n[sets.s]\nconfigs = ["config/s.py"]\ntool = "{pinned}"\n'
    root = real_setup(tables, {"s.py": TWIN_CONFIG})
    assert "All output calculated" in run_manager(root, "config/s.py")
    assert main(["verify", "s"]) == 0, capsys.readouterr().out
    tool, twin = (root / "output" / "s" / "tool").resolve(), (root / "output" / "s" / "twin").resolve()
    for checkout in (tool, twin):
        (checkout / "a.py").write_text("A = 2\n")
    # Sisyphus's clean-up leaves finished.tar.gz instead of finished
    job = tool.parent.parent
    (job / "finished").rename(job / "finished.tar.gz")
    assert main(["verify", "s"]) == 1
    out = capsys.readouterr().out
    assert out.count("a.py (modified)") == 2, out
