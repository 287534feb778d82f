"""``pin upgrade`` against real local repositories: heads, tags, SHAs, refusals, and safe rewrites of pin.toml."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import _real_required, git, git_commit
from results import upgraded
from sispin.cli.main import main
from sispin.errors import RefusedMoveError


def pinned_text(history, old: str, new: str) -> str:
    """The lock text with exactly one value changed."""
    text = history.text()
    assert text.count(old) == 1
    return text.replace(old, new)


def test_upgrade_to_branch_head_shows_the_log_and_rewrites_only_the_value(history, capsys):
    c = history.c
    expected = pinned_text(history, c[0], c[4])
    assert main(["upgrade", "demo"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        f"rc  {c[0][:7]} -> {c[4][:7]}  (+4 commits)",
        f"    + {c[4][:7]} change 4",
        f"    + {c[3][:7]} change 3",
        f"    + {c[2][:7]} change 2",
        f"    + {c[1][:7]} change 1",
        "Every job of set 'demo' that depends on rc will get a new id.",
        "Blast radius: not computed (sets.demo.configs: config/demo.py does not exist)",
        "pin.toml: updated sets.demo",
    ]
    assert history.text() == expected, "comments, order and formatting survive byte for byte"


def test_upgrade_to_a_tag(history):
    expected = pinned_text(history, history.c[0], history.c[1])
    result = upgraded(history.lock, ["demo"], ["rc"], to="v1")
    (move,) = [report.move for report in result.sets[0].moves]
    assert (move.kind, move.new, move.tag, move.added) == ("forward", history.c[1], "v1", 1)
    assert result.written.sets == ("demo",) and result.written.changed
    assert history.text() == expected


def test_upgrade_to_a_short_sha_writes_the_full_sha(history):
    expected = pinned_text(history, history.c[0], history.c[3])
    result = upgraded(history.lock, ["demo"], ["rc"], to=history.c[3][:7])
    assert result.sets[0].moves[0].move.new == history.c[3]
    assert history.text() == expected


def test_upgrade_of_a_pin_table_changes_only_its_commit(history):
    expected = pinned_text(history, history.c[2], history.c[4])
    assert upgraded(history.lock, ["other"]).written.sets == ("other",)
    assert history.text() == expected
    assert "clone_submodules = true" in history.text()


def test_ambiguous_short_sha_is_refused(history, capsys):
    # 1000 deterministic commits on a side branch: some pair shares its first 4 hex digits
    lines = []
    for i in range(1000):
        lines += ["commit refs/heads/many", f"committer t <t@t> {1_600_000_000 + i} +0000", "data 2", f"{i % 10}\n"]
        if i == 0:
            lines.append(f"from {history.c[4]}")
        lines += [f"M 644 inline f{i}", "data 1", "x"]
    subprocess.run(
        ["git", "fast-import", "--quiet"], cwd=history.remote, input="\n".join(lines) + "\n", text=True, check=True
    )
    shas = git(history.remote, "rev-list", "many").split()
    by_prefix = {}
    prefix = next(sha[:4] for sha in shas if by_prefix.setdefault(sha[:4], sha) != sha)
    before = history.text()
    assert main(["upgrade", "demo", "rc", "--to", prefix]) == 5
    err = capsys.readouterr().err
    assert f"repos.rc (file://{history.remote}): {prefix!r} is ambiguous: commit" in err
    assert history.text() == before


def test_a_tag_and_a_branch_of_one_name_on_different_commits_are_ambiguous(history, capsys):
    git(history.remote, "branch", "v1", history.c[3])
    assert main(["upgrade", "demo", "rc", "--to", "v1"]) == 5
    assert f"'v1' is ambiguous: tag {history.c[1][:12]}, branch {history.c[3][:12]}" in capsys.readouterr().err


@pytest.mark.parametrize("revision", ["nope", "-x", "main..v1", "HEAD@{1}", "deadbeef"])
def test_unknown_or_malformed_revisions_are_refused(history, capsys, revision):
    before = history.text()
    assert main(["upgrade", "demo", "rc", f"--to={revision}"]) == 5
    err = capsys.readouterr().err
    assert err.startswith("pin: error: ") and err.count("\n") == 1
    assert history.text() == before


def test_downgrade_needs_a_flag_and_is_named(history, capsys):
    upgraded(history.lock, ["other"])
    before = history.text()
    result = upgraded(history.lock, ["other"], ["rc"], to="v1")
    move = result.sets[0].moves[0].move
    assert (move.kind, move.dropped, [line[:7] for line in move.log]) == (
        "downgrade",
        3,
        [c[:7] for c in history.c[4:1:-1]],
    )
    assert isinstance(result.refusal, RefusedMoveError) and "--allow-downgrade" in str(result.refusal)
    assert result.written is None and history.text() == before
    # the wording, and the exit code
    assert main(["upgrade", "other", "rc", "--to", "v1"]) == 8
    captured = capsys.readouterr()
    assert f"rc  {history.c[4][:7]} -> {history.c[1][:7]}  (downgrade: 3 commits back, tag v1)" in captured.out
    assert f"    - {history.c[4][:7]} change 4" in captured.out
    assert "is a downgrade: pass --allow-downgrade to move anyway (nothing written)" in captured.err
    assert history.text() == before

    assert upgraded(history.lock, ["other"], ["rc"], to="v1", downgrade=True).refusal is None
    assert f'commit = "{history.c[1]}"' in history.text()


def force_push(history) -> str:
    """Rewrite main on the remote: drop c[2..4], add one other commit on top of c[1]."""
    git(history.remote, "checkout", "-q", "-b", "rewritten", history.c[1])
    rewritten = git_commit(history.remote, {"nn.py": "VERSION = 'rewritten'\n"}, "rewritten history")
    git(history.remote, "branch", "-q", "-f", "main", rewritten)
    git(history.remote, "checkout", "-q", "main")
    return rewritten


def test_force_pushed_branch_is_unrelated_history_and_needs_a_flag(history, capsys):
    assert main(["status", "--fetch"]) == 0, "the store saw the old history"
    rewritten = force_push(history)
    assert main(["upgrade", "other"]) == 8
    captured = capsys.readouterr()
    assert f"rc  {history.c[2][:7]} -> {rewritten[:7]}  (unrelated history: +1, -1 commits)" in captured.out
    # both sides of the move, what the set loses first
    lines = captured.out.splitlines()
    at = lines.index(f"rc  {history.c[2][:7]} -> {rewritten[:7]}  (unrelated history: +1, -1 commits)")
    assert lines[at + 1].startswith(f"    - {history.c[2][:7]} ") and lines[at + 2].startswith(
        f"    + {rewritten[:7]} "
    )
    assert "is a move to unrelated history: pass --allow-unrelated" in captured.err
    # for scripts: one document, the refusal in it, the same exit code
    assert main(["upgrade", "other", "--json"]) == 8
    document = json.loads(capsys.readouterr().out)
    assert document["refused"]["exit_code"] == 8 and document["written"] == [] and document["committed"] is None
    (move,) = document["sets"][0]["moves"]
    assert (move["kind"], move["added"], move["dropped"], move["new"]) == ("unrelated", 1, 1, rewritten)
    result = upgraded(history.lock, ["other"], unrelated=True)
    move = result.sets[0].moves[0].move
    assert (move.kind, move.added, move.dropped, result.refusal) == ("unrelated", 1, 1, None)
    assert rewritten in history.text()


def test_pinned_commit_unknown_to_the_remote_is_named(history, capsys):
    rewritten = force_push(history)
    assert main(["upgrade", "other"]) == 8
    out = capsys.readouterr().out
    assert (
        f"{history.c[2][:7]} -> {rewritten[:7]}  (unrelated history: the pinned commit is no longer in the remote)"
        in out
    )


def test_dry_run_writes_nothing(history):
    before = history.lock.stat().st_mtime_ns, history.text()
    result = upgraded(history.lock, ["demo"], dry_run=True)
    assert result.plan.moving["demo"][0].added == 4
    assert result.sets[0].unbuilt == "sets.demo.configs: config/demo.py does not exist", "no blast radius, said why"
    assert result.written is None and result.refusal is None
    assert (history.lock.stat().st_mtime_ns, history.text()) == before


def test_already_up_to_date_writes_nothing(history, capsys):
    assert main(["upgrade", "demo"]) == 0
    capsys.readouterr()
    before = history.lock.stat().st_mtime_ns
    assert main(["upgrade", "demo"]) == 0
    assert capsys.readouterr().out == f"rc  {history.c[4][:7]}  already up to date\n"
    assert history.lock.stat().st_mtime_ns == before


def test_long_logs_are_capped_with_a_count(history):
    for i in range(12):
        git_commit(history.remote, {"more.py": f"x = {i}\n"}, f"more {i}")
    move = upgraded(history.lock, ["demo"], dry_run=True).sets[0].moves[0].move
    assert (move.added, len(move.log)) == (16, 10)


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (["upgrade", "nope"], 4, "no experiment set 'nope' (known sets: demo, other)"),
        (["upgrade", "demo", "returnn"], 4, "set 'demo' pins no repository 'returnn' (it pins: rc)"),
        (["upgrade", "demo", "--to", "v1", "rc", "rc2"], 2, "--to needs exactly one REPO"),
    ],
)
def test_bad_arguments(history, capsys, argv, code, message):
    before = history.text()
    assert main(argv) == code
    assert message in capsys.readouterr().err
    assert history.text() == before


def test_unreachable_remote_leaves_the_lock_untouched(history, capsys):
    history.remote.rename(history.remote.with_name("gone"))
    before = history.text()
    assert main(["upgrade", "demo"]) == 5
    assert "cannot fetch file://" in capsys.readouterr().err
    assert history.text() == before


def test_interrupted_write_leaves_the_old_file_intact(history, monkeypatch):
    before = history.text()

    def crash(fd):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", crash)
    assert main(["upgrade", "demo"]) == 130
    assert history.text() == before
    assert sorted(p.name for p in history.lock.parent.iterdir()) == [".sispin-cache", "pin.toml"]


def test_a_killed_writer_leaves_the_old_file_and_no_stale_lock(history):
    before = history.text()
    # a writer killed while it holds the file lock, between reading and replacing the file
    code = (
        "import time, sys\n"
        "from sispin.lock.editing import edit_lockfile\n"
        "def edit(current, doc):\n"
        "    doc['sets']['demo']['rc'] = 'f' * 40\n"
        "    print('editing', flush=True)\n"
        "    time.sleep(60)\n"
        f"edit_lockfile({str(history.lock)!r}, edit)\n"
    )
    writer = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline() == "editing\n"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=10)
    assert history.text() == before
    assert main(["upgrade", "demo"]) == 0, "the lock of a dead process does not block"
    assert history.c[4] in history.text()


def test_concurrent_upgrades_of_different_sets_both_land(history):
    env = {**os.environ, "PIN_LOCK": str(history.lock)}
    started = time.monotonic()
    processes = [
        subprocess.Popen([sys.executable, "-m", "sispin", "upgrade", name], env=env, stdout=subprocess.PIPE)
        for name in ("demo", "other")
    ]
    assert [p.wait(timeout=60) for p in processes] == [0, 0]
    assert time.monotonic() - started < 60
    text = history.text()
    assert f'rc = "{history.c[4]}"  # keep this comment' in text
    assert f'rc = {{ commit = "{history.c[4]}", clone_submodules = true }}' in text


def test_the_default_branch_is_followed_after_the_remote_renames_it(make_repo, write_lock, store_dir, capsys):
    remote = make_repo("renamed")
    git(remote, "checkout", "-q", "-b", "master")
    first = git_commit(remote, {"a.py": "a = 1\n"}, "first")
    lock = write_lock(f'version = 1\n[repos.rc]\nurl = "file://{remote}"\n[sets.demo]\nrc = "{first}"\n')
    assert main(["status", "--fetch"]) == 0, "the store's mirror now knows master as the default branch"
    git(remote, "branch", "-q", "-m", "master", "main")  # the remote's HEAD follows the rename
    newer = git_commit(remote, {"a.py": "a = 2\n"}, "on main")
    move = upgraded(lock, ["demo"]).sets[0].moves[0].move
    assert (move.old, move.new, move.added) == (first, newer, 1)
    assert newer in lock.read_text()
    assert main(["new", "fresh"]) == 0
    assert f"rc  {newer[:7]}  (default branch head)" in capsys.readouterr().out


def test_a_commit_only_the_store_still_has_needs_a_flag(history, capsys):
    assert main(["status", "--fetch"]) == 0
    force_push(history)
    git(history.remote, "reflog", "expire", "--expire=now", "--all")
    git(history.remote, "gc", "-q", "--prune=now")
    capsys.readouterr()
    assert main(["upgrade", "demo", "rc", "--to", history.c[3]]) == 8
    captured = capsys.readouterr()
    assert f"    ! {history.c[3][:7]} is on no branch or tag of {history.url}" in captured.out
    assert "pass --allow-unreachable to move anyway (nothing written)" in captured.err
    result = upgraded(history.lock, ["demo"], ["rc"], to=history.c[3], unreachable=True)
    assert not result.sets[0].moves[0].planned.on_remote and result.refusal is None
    assert history.c[3] in history.text()


@pytest.mark.parametrize(
    "quoted",
    ["'{}'", '"""{}"""', "'''{}'''", '"{}"'],
    ids=["literal", "multi-line basic", "multi-line literal", "basic"],
)
@pytest.mark.parametrize("newline", ["\n", "\r\n"], ids=["LF", "CRLF"])
def test_a_rewrite_changes_only_the_shas_characters(history, quoted, newline):
    text = history.text().replace(f'"{history.c[0]}"', quoted.format(history.c[0]))
    history.lock.write_bytes(text.replace("\n", newline).encode())
    before = history.lock.read_bytes()
    upgraded(history.lock, ["demo"])
    assert history.lock.read_bytes() == before.replace(history.c[0].encode(), history.c[4].encode())


def test_lines_a_command_adds_to_a_crlf_file_end_in_crlf(history):
    history.lock.write_bytes(history.text().replace("\n", "\r\n").encode())
    before = history.lock.read_bytes()
    assert main(["new", "fresh"]) == 0
    after = history.lock.read_bytes()
    assert after.startswith(before) and b"[sets.fresh]\r\n" in after
    assert after.count(b"\n") == after.count(b"\r\n"), "no line ends in LF alone"


def test_a_symlinked_lockfile_is_written_through_to_its_target(history, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    target = shared / "team-pin.toml"
    history.lock.rename(target)
    history.lock.symlink_to(target)
    expected = target.read_text().replace(history.c[0], history.c[4])
    assert main(["upgrade", "demo"]) == 0
    assert history.lock.is_symlink() and os.readlink(history.lock) == str(target), "the link stays a link"
    assert target.read_text() == expected, "the shared target changed"
    assert not [p for p in shared.iterdir() if p.name.endswith(".tmp")]
    assert main(["new", "fresh"]) == 0
    assert history.lock.is_symlink() and "[sets.fresh]" in target.read_text()


def test_temporary_files_of_a_killed_writer_are_removed(history):
    leftovers = [history.lock.parent / f".pin.toml.{n}k1ll3d.tmp" for n in range(3)]
    leftovers.append(history.lock.parent / ".pin.snapshot.toml.x.tmp")
    for leftover in leftovers:
        leftover.write_text("half a lockfile\n")
    assert main(["status"]) == 0, "even a command that writes nothing cleans them (under the file lock)"
    assert not [p.name for p in history.lock.parent.iterdir() if p.name.endswith(".tmp")]
    leftovers[0].write_text("half a lockfile\n")
    assert main(["upgrade", "demo"]) == 0
    assert not leftovers[0].exists()


def test_a_read_only_lockfile_is_refused_before_anything_is_fetched(history, store_dir, capsys):
    history.lock.chmod(0o444)
    assert main(["upgrade", "demo"]) == 10
    assert main(["new", "fresh"]) == 10
    assert capsys.readouterr().out == "", "nothing planned, nothing printed"
    assert not (store_dir / "mirrors").exists(), "nothing fetched"
    assert main(["upgrade", "demo", "--dry-run"]) == 0, "a dry run writes nothing, so it may run"


def _dated_commits(remote, dates):
    """Commits of nn.py on main, each committed (and authored) at its date."""
    shas = []
    for i, date in enumerate(dates):
        env = {"GIT_COMMITTER_DATE": date, "GIT_AUTHOR_DATE": date}
        (remote / "nn.py").write_text(f"VERSION = 'dated {i}'\n")
        git(remote, "add", "-A")
        subprocess.run(["git", "commit", "-q", "-m", f"dated {i}"], cwd=remote, env={**os.environ, **env}, check=True)
        shas.append(git(remote, "rev-parse", "HEAD"))
    return shas


def test_upgrade_and_new_as_of_a_date_take_the_branch_as_it_was_then(history, capsys):
    dated = _dated_commits(
        history.remote, ["2031-01-10T12:00:00+00:00", "2031-02-01T09:30:00+02:00", "2031-03-01T00:00:00+00:00"]
    )
    # the moment in UTC unless it says its offset; a day means all of it
    assert main(["upgrade", "demo", "--as-of", "2031-02-01T07:29:59"]) == 0
    assert f'rc = "{dated[0]}"' in history.text()
    assert main(["upgrade", "demo", "--as-of", "2031-02-01T09:30:00+02:00"]) == 0
    assert f'rc = "{dated[1]}"' in history.text()
    assert main(["new", "paper", "--as-of", "2031-02-28"]) == 0
    assert f'[sets.paper]\nconfigs = []\nrc = "{dated[1]}"' in history.text()
    capsys.readouterr()
    assert main(["upgrade", "demo", "--as-of", "1999-01-01"]) == 5
    assert "repos.rc (file://" in capsys.readouterr().err
    assert main(["upgrade", "demo", "--as-of", "9999-12-31", "--dry-run"]) == 0, "git's own dates end in 2100"
    assert f"-> {dated[2][:7]}" in capsys.readouterr().out
    assert main(["upgrade", "demo", "--as-of", "0001-01-01T00:00+01:00"]) == 5
    capsys.readouterr()
    for wrong in ("2031-02-30", "yesterday", "2031-02-01 10:00"):
        assert main(["upgrade", "demo", "--as-of", wrong]) == 2
        assert f"--as-of: '{wrong}'" in capsys.readouterr().err
    assert main(["upgrade", "demo", "rc", "--to", "main", "--as-of", "2031-02-28"]) == 2
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_returnn_release_is_its_commit_time_on_master(github, write_lock, store_dir, capsys):
    """RETURNN's version 1.20230426.105022 is the time master's commit 88cdc20 was made (in its committer's zone)."""
    release = "88cdc20baf9ecc51eec63d96f452bc8d0ff429d8"
    write_lock(
        'version = 1\n[repos.returnn]\nurl = "https://github.com/rwth-i6/returnn"\nbranch = "master"\n'
        f'[sets.paper]\nreturnn = "{release}"\n'
    )
    code = main(["upgrade", "paper", "--as-of", "2023-04-26T10:50:22+02:00", "--dry-run"])
    out, err = capsys.readouterr()
    if code == 5 and not _real_required():
        pytest.skip(f"the real RETURNN history is not reachable: {err.strip()}")
    assert code == 0 and "returnn  88cdc20  already up to date" in out, (out, err)
    assert main(["upgrade", "paper", "--as-of", "2023-04-26T10:50:21+02:00", "--dry-run"]) == 0
    assert "returnn  88cdc20 -> " in capsys.readouterr().out, "a second earlier: the commit before it"


def test_text_from_the_remote_reaches_the_terminal_as_text(history, capsys):
    # a commit subject that would clear the screen and rewrite the review's lines, and a file name with a carriage
    # return: shown as their escapes, every other character as it is
    subject = "fix \x1b[2J\x1b[1Aall good\r\u202egnp.exe é"
    git_commit(history.remote, {"a\rb.py": "x\n"}, subject)
    assert main(["upgrade", "demo", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "fix \\x1b[2J\\x1b[1Aall good\\r\\u202egnp.exe é" in out, repr(out)
    assert not any(character in out for character in "\x1b\r\u202e")
