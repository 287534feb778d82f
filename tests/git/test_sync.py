"""``pin sync`` against real local repositories reached through file:// URLs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Callable, Tuple

import pytest

from conftest import git, git_commit
from sispin.cli.main import main
from sispin.errors import GitError
from sispin.git.store import Store
from sispin.lock.loading import load_lockfile
from sispin.ops.sync import SetupSyncResult, sync_sets, sync_setup


def synced(lock: Path) -> SetupSyncResult:
    """``pin sync``'s use case on the setup of ``lock``, and what it said of each checkout as it went"""
    told = []
    result = sync_setup(load_lockfile(lock), told.append)
    assert told == result.checkouts, "each checkout is told once it is done with, in order"
    return result


@pytest.fixture
def upstream(make_repo: Callable[..., Path]) -> Tuple[Path, str, str]:
    """A remote with two commits on main; returns (path, first commit, second commit)."""
    repo = make_repo("tool")
    first = git_commit(repo, {"tool.py": "VERSION = 1\n"}, "first")
    second = git_commit(repo, {"tool.py": "VERSION = 2\n"}, "second")
    return repo, first, second


def setup_lock(remote: Path, commit: str, path: str = "tools/tool") -> str:
    return f'version = 1\n\n[setup.tool]\nurl = "file://{remote}"\ncommit = "{commit}"\npath = "{path}"\n'


def test_sync_clones_at_the_pinned_commit_and_is_idempotent(upstream, write_lock, capsys):
    remote, first, _ = upstream
    lock = write_lock(setup_lock(remote, first))
    assert main(["sync"]) == 0
    checkout = lock.parent / "tools" / "tool"
    assert git(checkout, "rev-parse", "HEAD") == first
    assert (checkout / "tool.py").read_text() == "VERSION = 1\n"
    assert capsys.readouterr().out == f"tool  {first[:7]}  tools/tool  cloned\n"

    assert main(["sync"]) == 0
    assert capsys.readouterr().out == f"tool  {first[:7]}  tools/tool  ok\n"
    assert not list(checkout.parent.glob(".tool.pin-partial-*"))


def test_sync_reaches_a_commit_no_branch_points_to(upstream, write_lock):
    remote, first, _ = upstream
    git(remote, "checkout", "-q", "-b", "side", first)
    orphan = git_commit(remote, {"side.py": "x = 1\n"}, "side")
    git(remote, "checkout", "-q", "main")
    git(remote, "branch", "-q", "-D", "side")
    git(remote, "config", "uploadpack.allowAnySHA1InWant", "true")
    lock = write_lock(setup_lock(remote, orphan))
    assert [checkout.outcome for checkout in synced(lock).checkouts] == ["cloned"]
    assert git(lock.parent / "tools" / "tool", "rev-parse", "HEAD") == orphan


def test_sync_refuses_a_checkout_at_another_commit(upstream, write_lock, capsys):
    remote, first, second = upstream
    lock = write_lock(setup_lock(remote, first))
    assert main(["sync"]) == 0
    git(lock.parent / "tools" / "tool", "checkout", "-q", second)
    capsys.readouterr()
    assert main(["sync"]) == 6
    err = capsys.readouterr().err
    assert f"tools/tool is at {second[:12]}, pin.toml pins {first[:12]}" in err
    assert err.count("\n") == 1
    assert git(lock.parent / "tools" / "tool", "rev-parse", "HEAD") == second, "sync must not move a checkout"


@pytest.mark.parametrize(
    "tamper, listed",
    [
        (lambda checkout: (checkout / "tool.py").write_text("VERSION = 'edited'\n"), "tool.py (modified)"),
        (lambda checkout: (checkout / "extra.py").write_text("x = 1\n"), "extra.py (untracked)"),
    ],
    ids=["modified", "untracked"],
)
def test_sync_refuses_local_changes(upstream, write_lock, capsys, tamper, listed):
    remote, first, _ = upstream
    lock = write_lock(setup_lock(remote, first))
    assert main(["sync"]) == 0
    tamper(lock.parent / "tools" / "tool")
    capsys.readouterr()
    assert main(["sync"]) == 6
    assert f"tools/tool has local changes: {listed}; check out the pinned commit" in capsys.readouterr().err


def test_sync_refuses_a_directory_that_is_not_a_checkout(upstream, write_lock, capsys):
    remote, first, _ = upstream
    lock = write_lock(setup_lock(remote, first))
    (lock.parent / "tools" / "tool").mkdir(parents=True)
    assert main(["sync"]) == 6
    assert "exists but is not a git checkout" in capsys.readouterr().err


def test_sync_of_a_missing_commit_fails_and_leaves_nothing(upstream, write_lock):
    remote, _, _ = upstream
    lock = write_lock(setup_lock(remote, "0" * 40))
    result = synced(lock)
    (checkout,) = result.checkouts
    assert isinstance(checkout.error, GitError) and checkout.outcome is None and result.exit_code == 5
    assert f"commit {'0' * 40} does not exist in file://{remote}" in str(checkout.error)
    assert list((lock.parent / "tools").iterdir()) == []


def test_sync_of_an_unreachable_remote_fails_clearly(tmp_path, write_lock, capsys):
    write_lock(setup_lock(tmp_path / "no-such-remote", "0" * 40))
    assert main(["sync"]) == 5
    err = capsys.readouterr().err
    assert "pin: error: setup.tool: cannot clone file://" in err and err.count("\n") == 1


def test_sync_goes_on_after_a_failure_and_reports_each(upstream, write_lock, capsys):
    remote, first, _ = upstream
    text = setup_lock(remote, "0" * 40, "tools/broken").replace("[setup.tool]", "[setup.broken]")
    lock = write_lock(text + setup_lock(remote, first).replace("version = 1\n", ""))
    result = synced(lock)
    assert [(c.entry.name, c.outcome, c.error is not None) for c in result.checkouts] == [
        ("broken", None, True),
        ("tool", "cloned", False),
    ]
    assert result.exit_code == 5
    assert (lock.parent / "tools" / "tool" / "tool.py").exists()
    assert main(["sync"]) == 5
    out = capsys.readouterr().out
    assert "broken  0000000  tools/broken  failed" in out
    assert f"tool    {first[:7]}  tools/tool    ok" in out


def test_sync_removes_leftovers_of_a_killed_run(upstream, write_lock):
    remote, first, _ = upstream
    lock = write_lock(setup_lock(remote, first))
    leftover = lock.parent / "tools" / ".tool.pin-partial-abc123"
    (leftover / ".git").mkdir(parents=True)
    assert synced(lock).exit_code == 0
    assert not leftover.exists()
    assert git(lock.parent / "tools" / "tool", "rev-parse", "HEAD") == first


def test_sync_of_sets_makes_each_store_checkout_once(upstream, write_lock, store_dir):
    remote, first, second = upstream
    lock = write_lock(
        f'version = 1\n\n[repos.tool]\nurl = "file://{remote}"\n\n[sets.a]\ntool = "{first}"\n\n'
        f'[sets.b]\ntool = "{second}"\n'
    )
    told: list = []
    made = sync_sets(load_lockfile(lock), ["a", "b", "a"], Store(), told.append)
    assert told == made, "each checkout is told once it is there, in order"
    assert [(s.set_name, s.repo, s.commit, s.made) for s in made] == [
        ("a", "tool", first, True),
        ("b", "tool", second, True),
    ]
    assert git(made[0].path, "rev-parse", "HEAD") == first and git(made[1].path, "rev-parse", "HEAD") == second
    (again,) = sync_sets(load_lockfile(lock), ["a"], Store(), told.append)
    assert again.path == made[0].path and not again.made


def test_sync_without_setup_entries(write_lock, capsys):
    write_lock("version = 1\n")
    assert main(["sync"]) == 0
    assert "has no [setup.*] entries: nothing to sync" in capsys.readouterr().out


def test_cli_errors_are_one_line_without_traceback(write_lock):
    lock = write_lock("version = 1\n[sets.demo]\nrc = 'd1fc1c7'\n")
    result = subprocess.run(
        [sys.executable, "-m", "sispin", "sync"], cwd=lock.parent, capture_output=True, text=True, check=False
    )
    assert result.returncode == 3
    assert (
        result.stderr
        == "pin: error: pin.toml: sets.demo.rc: repository 'rc' is not declared under [repos] (declared: none)\n"
    )
    assert result.stdout == ""


def test_cli_help_lists_commands_and_exit_codes(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    assert "sync" in out and "exit codes:" in out
