"""
``pin upgrade`` of several sets at once (``SET SET ...``, ``--all [REPO ...]``): one combined plan, one write of the
lock, one commit; and the remotes fetched side by side.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from conftest import git, git_commit
from results import upgraded
from scenarios import CHUNK, PAUSE
from sispin.cli.main import main
from sispin.errors import RefusedMoveError, UnknownNameError, UsageError
from sispin.git.store import Store
from sispin.lock.loading import parse_lockfile
from sispin.ops.upgrade import Selection, select_sets
from slow_remote import SlowRemote


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
    assert select_sets(history.lock, ["rc"], True) == Selection(("demo",), ("rc",), ("other",))
    assert main(["upgrade", "--all", "rc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "sets.other: frozen, left out" in out and "sets.demo:" not in out, out
    assert f"rc  {c[0][:7]} -> {c[4][:7]}  (+4 commits)" in out and "dry run: pin.toml not changed" in out
    assert upgraded(history.lock, select_sets(history.lock, [], True).sets).written.sets == ("demo",)
    assert _pins(history) == {"demo": c[4], "other": c[2]}


def test_names_are_checked_before_anything_moves(history):
    before = history.text()
    selection = select_sets(history.lock, ["demo", "other", "nope"], False)
    assert selection == Selection(("demo", "other"), ("nope",), ())
    with pytest.raises(UnknownNameError, match="none of the sets demo, other pins a repository 'nope'"):
        upgraded(history.lock, selection.sets, selection.repos)
    with pytest.raises(UnknownNameError, match="no repository 'nope'"):
        select_sets(history.lock, ["nope"], True)
    with pytest.raises(UsageError, match=r"upgrade needs SET \(or --all\)"):
        select_sets(history.lock, [], False)
    history.lock.write_text(before.replace("[sets.other]", "[repos.other]\nurl = 'file:///x'\n\n[sets.other]"))
    with pytest.raises(UsageError, match="'other' names a set and a repository"):
        select_sets(history.lock, ["demo", "other"], False)
    history.lock.write_text(before)
    result = upgraded(history.lock, ["demo", "other"], to="v1")  # to an ancestor of other's pin: refused for both
    assert isinstance(result.refusal, RefusedMoveError) and [report.name for report in result.sets] == ["demo", "other"]
    assert history.text() == before


def test_one_commit_lists_every_set(history):
    c = history.c
    summary, body = upgraded(history.lock, ["demo", "other"]).commit_message()
    assert summary == f"pin upgrade demo other: demo rc {c[0][:7]} -> {c[4][:7]}; other rc {c[2][:7]} -> {c[4][:7]}"
    assert body == [
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
    with pytest.raises(UsageError, match=r"--to needs exactly one REPO \(the sets pin: rc, second\)"):
        upgraded(history.lock, ["demo", "third"], to="v1")
    result = upgraded(history.lock, ["demo", "third"], ["rc"], dry_run=True)
    assert result.plan.left_out == ("third",) and [report.name for report in result.sets] == ["demo"]
    assert main(["upgrade", "demo", "third", "rc", "--dry-run"]) == 0
    assert "sets.third: pins none of rc, left out" in capsys.readouterr().out
    with pytest.raises(UsageError, match="'demo' is a set: with --all, name repositories"):
        select_sets(history.lock, ["demo"], True)
    assert history.text() == before
