"""
``pin upgrade`` of several sets at once (``SET SET ...``, ``--all [REPO ...]``): one combined plan, one write of the
lock, one commit; and the remotes fetched side by side.
"""

from __future__ import annotations

import time
from pathlib import Path

from slow_remote import SlowRemote
from test_progress import CHUNK, PAUSE, remotes  # noqa: F401  (a fixture)

from conftest import commit_setup, git, git_commit
from sispin.cli.main import main
from sispin.git.store import Store
from sispin.lock.lockfile import parse_lockfile


def _pins(history):
    lock = parse_lockfile(history.text(), history.lock)
    return {name: spec.pins["rc"].commit for name, spec in lock.sets.items()}


def test_two_sets_move_in_one_write(history, capsys):
    c = history.c
    assert main(["upgrade", "demo", "other"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "sets.demo:" and f"rc  {c[0][:7]} -> {c[4][:7]}  (+4 commits)" in out
    assert "sets.other:" in out and f"rc  {c[2][:7]} -> {c[4][:7]}  (+2 commits)" in out
    assert out[-1] == "pin.toml: updated sets.demo, sets.other"
    assert _pins(history) == {"demo": c[4], "other": c[4]}
    assert "# keep this comment" in history.text() and "clone_submodules = true" in history.text()


def test_all_moves_every_set_that_pins_the_repository_and_leaves_frozen_ones(history, capsys):
    c = history.c
    assert main(["freeze", "other"]) == 0
    assert main(["upgrade", "--all", "rc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "sets.other: frozen, left out" in out and "sets.demo:" not in out, out
    assert f"rc  {c[0][:7]} -> {c[4][:7]}  (+4 commits)" in out and "dry run: pin.toml not changed" in out
    assert main(["upgrade", "--all"]) == 0
    assert _pins(history) == {"demo": c[4], "other": c[2]}


def test_names_are_checked_before_anything_moves(history, capsys):
    before = history.text()
    assert main(["upgrade", "demo", "other", "nope"]) == 4
    assert "none of the sets demo, other pins a repository 'nope'" in capsys.readouterr().err
    assert main(["upgrade", "--all", "nope"]) == 4
    assert "no repository 'nope'" in capsys.readouterr().err
    assert main(["upgrade"]) == 2
    assert "upgrade needs SET (or --all)" in capsys.readouterr().err
    history.lock.write_text(before.replace("[sets.other]", "[repos.other]\nurl = 'file:///x'\n\n[sets.other]"))
    assert main(["upgrade", "demo", "other"]) == 2
    assert "'other' names a set and a repository" in capsys.readouterr().err
    history.lock.write_text(before)
    assert main(["upgrade", "demo", "other", "--to", "v1"]) == 8  # to an ancestor of other's pin: refused for both
    assert history.text() == before


def test_one_commit_lists_every_set(history, capsys):
    root = history.lock.parent
    commit_setup(root, "pin.toml")
    c = history.c
    assert main(["upgrade", "demo", "other", "--commit"]) == 0
    message = git(root, "log", "-1", "--format=%B").splitlines()
    assert message[0] == f"pin upgrade demo other: demo rc {c[0][:7]} -> {c[4][:7]}; other rc {c[2][:7]} -> {c[4][:7]}"
    assert message[2:] == [
        f"demo: rc {c[0][:7]} -> {c[4][:7]} (+4 commits)",
        f"other: rc {c[2][:7]} -> {c[4][:7]} (+2 commits)",
    ]


def test_remotes_are_fetched_side_by_side(remotes, tmp_path):  # noqa: F811
    server = SlowRemote(remotes, CHUNK, PAUSE)
    urls = [server.url("a"), server.url("b")]
    try:
        started = time.monotonic()
        Store(tmp_path / "one").fetch_all(urls[:1])
        one = time.monotonic() - started
        started = time.monotonic()
        mirrors = Store(tmp_path / "both").fetch_all(urls)
        both = time.monotonic() - started
    finally:
        server.close()
    assert list(mirrors) == urls
    for name, url in zip("ab", urls):
        assert git(mirrors[url], "rev-parse", "HEAD") == git(Path(remotes / name), "rev-parse", "HEAD")
    # two transfers of the same size at once take about as long as one (each ~4 s at the relay's rate)
    assert both < 1.5 * one, (one, both)


def test_to_names_one_repository_across_the_sets(history, make_repo, capsys):
    second = make_repo("second")
    git_commit(second, {"a.py": "a = 1\n"})
    git(second, "tag", "v1")
    history.lock.write_text(
        history.text().replace("[sets.demo]", f'[repos.second]\nurl = "file://{second}"\n\n[sets.demo]')
        + f'\n[sets.third]\nsecond = "{git(second, "rev-parse", "HEAD")}"\n'
    )
    before = history.text()
    assert main(["upgrade", "demo", "third", "--to", "v1"]) == 2
    assert "--to needs exactly one REPO (the sets pin: rc, second)" in capsys.readouterr().err
    assert main(["upgrade", "demo", "third", "rc", "--dry-run"]) == 0
    assert "sets.third: pins none of rc, left out" in capsys.readouterr().out
    assert main(["upgrade", "--all", "demo"]) == 2
    assert "'demo' is a set: with --all, name repositories" in capsys.readouterr().err
    assert history.text() == before
