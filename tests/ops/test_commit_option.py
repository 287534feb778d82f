"""
``--commit`` on the commands that write pin.toml and pin.snapshot.toml: a commit of exactly those files (with real
git), whatever else is staged staying staged, with a message that says what moved.
"""

from __future__ import annotations

from conftest import commit_setup, git, git_commit
from sispin.cli.main import main


def _setup_repository(history):
    """The setup directory as a git repository: pin.toml committed, another file staged, one modified."""
    root = history.lock.parent
    git(root, "init", "-q", "-b", "main")
    (root / "notes.txt").write_text("first\n")
    git(root, "add", "pin.toml", "notes.txt")
    git(root, "commit", "-q", "-m", "the setup")
    (root / "notes.txt").write_text("second\n")
    (root / "staged.txt").write_text("staged\n")
    git(root, "add", "staged.txt")
    return root


def test_commit_takes_only_the_lock_files_and_says_what_moved(history, capsys):
    root = _setup_repository(history)
    assert main(["upgrade", "demo", "--commit"]) == 0
    message = git(root, "log", "-1", "--format=%B")
    summary = f"pin upgrade demo: rc {history.c[0][:7]} -> {history.c[4][:7]}"
    assert message.splitlines()[0] == summary and f"rc {history.c[0][:7]} -> {history.c[4][:7]} (+4 commits)" in message
    assert "--as-of" not in message and "--to" not in message
    assert f"committed {git(root, 'rev-parse', '--short=7', 'HEAD')}: {summary}" in capsys.readouterr().out
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "pin.toml"
    # what the user had staged stays staged, what they changed stays changed
    assert git(root, "diff", "--cached", "--name-only") == "staged.txt"
    assert git(root, "diff", "--name-only") == "notes.txt"
    for command, summary in (
        (["freeze", "other", "--commit"], "pin freeze other"),
        (["thaw", "other", "--commit"], "pin thaw other"),
        (["configs", "other", "--add", "notes.txt", "--commit"], "pin configs other: +notes.txt"),
    ):
        assert main(command) == 0, command
        assert git(root, "log", "-1", "--format=%s") == summary
        assert git(root, "show", "--name-only", "--format=", "HEAD") == "pin.toml"
    # where a move was asked to go is part of the record
    assert main(["upgrade", "demo", "rc", "--to", "v1", "--allow-downgrade", "--commit"]) == 0
    assert git(root, "log", "-1", "--format=%B").splitlines()[-1] == "--to v1"
    # a new set's starter config goes into the commit that lists it
    # (no Sisyphus here: the starter cannot be loaded, exit 9; the set and its starter are committed all the same)
    assert main(["new", "paper", "--config", "config/paper.py", "--commit"]) == 9
    assert git(root, "log", "-1", "--format=%s") == f"pin new paper: rc {history.c[4][:7]}"
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["config/paper.py", "pin.toml"]
    capsys.readouterr()
    assert main(["thaw", "other", "--commit"]) == 0
    assert "--commit: nothing to commit (as committed already)" in capsys.readouterr().out


def test_commit_outside_a_repository_is_one_line_before_anything_is_written(history, capsys):
    before = history.text()
    assert main(["freeze", "other", "--commit"]) == 5
    err = capsys.readouterr().err
    assert err.startswith("pin: error: --commit: ") and err.rstrip().endswith("is in no git repository"), err
    assert history.text() == before


def test_a_refused_commit_says_why_and_nothing_is_committed(history, capsys):
    root = _setup_repository(history)
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'pin-check: 1 problem' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = git(root, "rev-parse", "HEAD")
    assert main(["freeze", "other", "--commit"]) == 5
    err = capsys.readouterr().err
    assert "pin-check: 1 problem" in err and "the files are written; nothing was committed" in err, err
    assert git(root, "rev-parse", "HEAD") == before and "freeze = true" in history.text()


def test_an_upgrade_commit_names_its_blast_radius(real_setup, make_repo):
    from scenarios import FREEZE_CONFIG

    remote = make_repo("rc")
    commits = [git_commit(remote, {"__init__.py": f"X = {i}\n"}) for i in range(2)]
    tables = f'[repos.rc]\nurl = "file://{remote}"\n\n[sets.a]\nconfigs = ["config/a.py"]\nrc = "{commits[0]}"\n'
    root = real_setup(tables, {"a.py": FREEZE_CONFIG.format(name="a")})
    assert main(["snapshot"]) == 0
    commit_setup(root, "pin.toml", "pin.snapshot.toml")
    assert main(["upgrade", "a", "--commit"]) == 0
    message = git(root, "log", "-1", "--format=%B").splitlines()
    assert message[-1] == "Blast radius: 2 of 2 jobs get new ids", message
    assert git(root, "show", "--name-only", "--format=", "HEAD").split() == ["pin.snapshot.toml", "pin.toml"]


def test_commit_refuses_before_writing_when_it_could_not_be_exact(history, capsys, tmp_path):
    root = _setup_repository(history)
    assert main(["upgrade", "demo", "--dry-run", "--commit"]) == 2
    assert "--commit: a dry run writes nothing to commit" in capsys.readouterr().err
    # a hand edit not committed would go into the command's commit: refused, nothing written
    history.lock.write_text(history.text() + "# a note\n")
    before = history.text()
    assert main(["freeze", "other", "--commit"]) == 5
    assert "--commit: pin.toml has changes not committed" in capsys.readouterr().err
    assert history.text() == before
    git(root, "commit", "-q", "-am", "the note")
    # a refusing hook leaves the index as it was: the new snapshot file is not left half-added
    (root / ".git" / "hooks" / "pre-commit").write_text("#!/bin/sh\nexit 1\n")
    (root / ".git" / "hooks" / "pre-commit").chmod(0o755)
    staged = git(root, "diff", "--cached", "--name-only")
    assert main(["freeze", "other", "--commit"]) == 5
    assert git(root, "diff", "--cached", "--name-only") == staged


def test_commit_follows_a_symlinked_lockfile(history, capsys):
    root = _setup_repository(history)
    (root / "real").mkdir()
    history.lock.rename(root / "real" / "pin.toml")
    history.lock.symlink_to("real/pin.toml")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "pin.toml moved")
    assert main(["freeze", "other", "--commit"]) == 0
    assert git(root, "show", "--name-only", "--format=", "HEAD") == "real/pin.toml"


def test_commit_of_a_lockfile_git_ignores_is_refused_before_anything_is_written(history, capsys):
    root = history.lock.parent
    git(root, "init", "-q", "-b", "main")
    (root / ".gitignore").write_text("pin.toml\n")
    git(root, "add", ".gitignore")
    git(root, "commit", "-q", "-m", "ignore the lock")
    before = history.text()
    assert main(["freeze", "other", "--commit"]) == 5
    assert capsys.readouterr().err.strip() == (
        "pin: error: --commit: pin.toml is ignored by git (`git check-ignore -v pin.toml` says why): add it once with "
        "`git add -f`, or leave out --commit"
    )
    assert history.text() == before
    git(root, "add", "-f", "pin.toml")
    git(root, "commit", "-q", "-m", "the lock after all")
    assert main(["freeze", "other", "--commit"]) == 0  # tracked: ignoring no longer applies
    assert git(root, "log", "-1", "--format=%s") == "pin freeze other"
