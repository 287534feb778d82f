"""
Long clones and fetches: git's progress is shown on a terminal (one updating line per repository) and nowhere else,
and a transfer is stopped only when it stops moving (no progress for INACTIVITY_TIMEOUT), however long it takes.
The remote is a real git daemon on 127.0.0.1 behind a relay that slows it down (tests/slow_remote.py).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from conftest import RECIPE_DIR, git
from scenarios import CHUNK, PAUSE, pin_on_a_terminal
from sispin.cli.main import main
from sispin.cli.progress import TerminalProgress
from sispin.errors import GitError
from sispin.git import process as sispin_git
from sispin.git.repo import clone_at_commit, update_mirror
from sispin.git.store import Store
from slow_remote import SlowRemote


@pytest.fixture
def slow(remotes: Path) -> Iterator[SlowRemote]:
    server = SlowRemote(remotes, CHUNK, PAUSE)
    yield server
    server.close()


@pytest.fixture
def stalling(remotes: Path) -> Iterator[SlowRemote]:
    """Answers the first 30 kB, then nothing more while keeping the connection open."""
    server = SlowRemote(remotes, CHUNK, PAUSE, stall_after=30_000)
    yield server
    server.close()


def test_a_slow_but_moving_clone_runs_past_the_inactivity_timeout(remotes, tmp_path, monkeypatch):
    # half the rate of `slow` (about 8 s for the 400 kB) against a 2.5 s time-out: a loaded machine (a CI run beside
    # other jobs) can starve the relay or the remote's pack-objects for 1.5 s, and this test is about a moving clone
    monkeypatch.setattr(sispin_git, "INACTIVITY_TIMEOUT", 2.5)
    commit = git(remotes / "a", "rev-parse", "HEAD")
    slower = SlowRemote(remotes, CHUNK // 2, PAUSE)
    started = time.monotonic()
    try:
        clone_at_commit(slower.url("a"), commit, tmp_path / "a")
    finally:
        slower.close()
    assert time.monotonic() - started > 2 * sispin_git.INACTIVITY_TIMEOUT, "the clone must outlast the time-out"
    assert git(tmp_path / "a", "rev-parse", "HEAD") == commit


def test_a_stalled_clone_is_stopped_after_the_inactivity_timeout(stalling, remotes, tmp_path, monkeypatch):
    monkeypatch.setattr(sispin_git, "INACTIVITY_TIMEOUT", 1.0)
    started = time.monotonic()
    with pytest.raises(GitError, match=rf"cannot clone {stalling.url('a')}: no progress for 1 s \(git was stopped\)"):
        clone_at_commit(stalling.url("a"), git(remotes / "a", "rev-parse", "HEAD"), tmp_path / "a")
    assert time.monotonic() - started < 15
    assert not list(tmp_path.glob("*a*")), "no checkout, no half-made clone beside it"


def test_a_stalled_store_fetch_is_stopped_and_named(stalling, remotes, write_lock, store_dir, monkeypatch, capsys):
    monkeypatch.setattr(sispin_git, "INACTIVITY_TIMEOUT", 1.0)
    write_lock(f'version = 1\n[repos.a]\nurl = "{stalling.url("a")}"\n[sets.s]\na = "{"0" * 40}"\n')
    assert main(["status", "--fetch"]) == 5
    error = capsys.readouterr().err
    assert f"cannot fetch {stalling.url('a')}: no progress for 1 s (git was stopped)" in error
    assert not list((store_dir / "mirrors").glob("*.git")), "no half-made mirror"


def test_a_remote_that_never_answers_the_question_before_a_fetch_is_stopped_and_named(remotes, tmp_path, monkeypatch):
    monkeypatch.setattr(sispin_git, "INACTIVITY_TIMEOUT", 1.0)
    mirror = Store(tmp_path / "store").fetch(f"file://{remotes / 'a'}")
    silent = SlowRemote(remotes, CHUNK, PAUSE, stall_after=0)
    heard = []
    try:
        git(mirror, "remote", "set-url", "origin", silent.url("a"))
        with sispin_git.progress_to(lambda who, line: heard.append(line)):
            with pytest.raises(
                GitError, match=rf"cannot fetch {silent.url('a')}: no answer for 1 s \(git was stopped\)"
            ):
                update_mirror(silent.url("a"), mirror)
    finally:
        silent.close()
    assert heard == ["git ls-remote: waiting for the remote", ""], "the line is cleared"


def test_a_git_that_cannot_start_leaves_no_line_behind(tmp_path):
    heard = []
    with sispin_git.progress_to(lambda who, line: heard.append(line)):
        with pytest.raises(GitError):
            sispin_git.remote_query(tmp_path / "gone.git", "file:///x", "fetch", "ls-remote", "origin")
    assert heard == []


def _setup(root: Path, remotes: Path) -> Path:
    """A setup whose [setup.*] entries a and b are clones of the two remotes (file://: no need to wait here)."""
    root.mkdir()
    entries = "".join(
        f'[setup.{name}]\nurl = "file://{remotes / name}"\ncommit = "{git(remotes / name, "rev-parse", "HEAD")}"\n'
        f'path = "checkouts/{name}"\n'
        for name in ("a", "b")
    )
    (root / "pin.toml").write_text(f"version = 1\n{entries}")
    return root


def test_progress_on_a_terminal_is_one_updating_line_per_repository(remotes, tmp_path):
    code, shown = pin_on_a_terminal(_setup(tmp_path / "setup", remotes), "sync")
    assert code == 0, shown
    updates = [update for update in shown.replace("\r\n", "\n").split("\r") if update.strip()]
    for name in ("a", "b"):
        progress = [update for update in updates if update.startswith(f"{name}: Receiving objects:")]
        assert len(progress) >= 2, f"{name}: the line is updated as data arrives:\n{shown!r}"
        assert all("\n" not in update for update in progress), "updates stay on one line"
        assert max(len(update) for update in progress) < 100, "no update is wider than the terminal"
    lines = [line.split("\r")[-1].strip() for line in shown.replace("\r\n", "\n").split("\n") if line.strip()]
    assert [line.split()[0::2] for line in lines] == [["a", "checkouts/a"], ["b", "checkouts/b"]], shown
    assert all(line.endswith("cloned") for line in lines), "the progress line is cleared before the result"


def test_no_progress_with_quiet_or_off_a_terminal(remotes, tmp_path):
    code, shown = pin_on_a_terminal(_setup(tmp_path / "quiet", remotes), "sync", "--quiet")
    assert code == 0, shown
    assert "Receiving" not in shown and "\r" not in shown.replace("\r\n", "\n"), shown

    environ = {**os.environ, "PYTHONPATH": str(RECIPE_DIR)}
    environ.pop("PIN_LOCK", None)
    result = subprocess.run(
        [sys.executable, "-m", "sispin", "sync"],
        cwd=_setup(tmp_path / "piped", remotes),
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert [line.split()[-1] for line in result.stdout.splitlines()] == ["cloned", "cloned"]


def test_the_line_says_what_git_waits_for_before_git_says_anything(remotes, tmp_path):
    heard = []
    with sispin_git.progress_to(lambda who, line: heard.append((who, line))):
        clone_at_commit(f"file://{remotes / 'a'}", git(remotes / "a", "rev-parse", "HEAD"), tmp_path / "a")
    assert heard[0] == ("a", "git clone: waiting for the remote"), heard[:3]
    assert heard[-1] == ("a", ""), "cleared when done"


def test_the_line_says_a_mirror_waits_for_the_remotes_answer_before_it_fetches(remotes, tmp_path):
    url = f"file://{remotes / 'a'}"
    mirror = Store(tmp_path / "store").fetch(url)
    heard = []
    with sispin_git.progress_to(lambda who, line: heard.append((who, line))):
        update_mirror(url, mirror)
    assert heard == [("a", "git ls-remote: waiting for the remote"), ("a", "")], "nothing new: no fetch"


def test_a_remotes_words_on_the_line_cannot_act_on_the_terminal():
    shown = io.StringIO()
    draw = TerminalProgress(shown)
    draw("a", "done")  # nothing to clear yet: the first line draws only itself
    draw("a", "")
    draw("a", "")  # nothing on the line: nothing written
    draw("a", "remote: \x1b[2J\x1b[1Acounting")
    assert shown.getvalue() == "\ra: done\r       \r\ra: remote: \\x1b[2J\\x1b[1Acounting", repr(shown.getvalue())
