"""
The pre-commit hooks this project ships (.pre-commit-hooks.yaml), run by the real ``pre-commit`` from PyPI as a
user's ``git commit`` runs them, in a temporary setup repository with the real Sisyphus; and ``pin check
--lock-only``, the fast hook's command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import _GIT_FIXTURE_ENV, PROJECT_ROOT, git, git_commit
from sispin.cli.main import main

CONFIG = """\
from sisyphus import tk
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sispin import experiment_set

LEARNING_RATE = 1e-3


def py():
    root = experiment_set("exp").repo("rc")
    config = ReturnnConfig({"learning_rate": LEARNING_RATE, "rc_root": root}, black_formatting=False)
    tk.register_output("exp/config", WriteReturnnConfigJob(config).out_returnn_config_file)
"""


def test_lock_only_validates_lock_and_snapshot_without_git_or_sisyphus(history, store_dir, capsys):
    # no Sisyphus and no config file exists here: a full check could not build a single graph
    assert main(["check", "--lock-only"]) == 0
    assert capsys.readouterr().out == "pin check: lock ok (2 sets; the job graphs were not checked)\n"
    assert not store_dir.exists(), "no mirror was fetched or read"

    snapshot = history.lock.with_name("pin.snapshot.toml")
    snapshot.write_text("version = 1\n<<<<<<< HEAD\n")
    assert main(["check", "--lock-only"]) == 3
    assert capsys.readouterr().err == (
        "pin: error: pin.snapshot.toml: invalid TOML at line 2, column 1: a merge conflict marker: resolve the "
        "conflict (pin merge-driver --install merges these files)\n"
    )
    snapshot.unlink()

    history.lock.write_text(history.text().replace(history.c[0], history.c[0][:7]))
    assert main(["check", "--lock-only"]) == 3
    assert capsys.readouterr().out.splitlines() == [
        f'problem: pin.toml: sets.demo.rc: "{history.c[0][:7]}" is not a full 40-hex commit',
        "pin check: 1 problem",
    ]


def commit(root: Path, env: dict, message: str) -> subprocess.CompletedProcess:
    """`git add -A && git commit` in root, as a user would: git runs the installed pre-commit hook."""
    git(root, "add", "-A")
    return subprocess.run(
        ["git", "commit", "-m", message],
        cwd=root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # git shows the hooks' report on stderr
        text=True,
        timeout=300,
        check=False,
    )


def test_the_hooks_guard_commits_of_a_setup(real_setup, make_repo, tmp_path, capsys):
    pin = Path(sys.executable).parent / "pin"
    assert pin.is_file(), f"no `pin` beside {sys.executable}: install sispin into this environment"
    # the hook repository: this project's .pre-commit-hooks.yaml, committed as pre-commit needs it
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    git(hooks, "init", "-q", "-b", "main")
    shutil.copy(PROJECT_ROOT / ".pre-commit-hooks.yaml", hooks)
    git(hooks, "add", "-A")
    git(hooks, "commit", "-q", "-m", "hooks")
    rev = git(hooks, "rev-parse", "HEAD")

    remote = make_repo("rc")
    pinned = git_commit(remote, {"__init__.py": "V = 0\n"})
    tables = f'[repos.rc]\nurl = "file://{remote}"\n\n[sets.exp]\nconfigs = ["config/exp.py"]\nrc = "{pinned}"\n'
    root = real_setup(tables, {"exp.py": CONFIG})
    lock = (root / "pin.toml").read_text()
    (root / ".gitignore").write_text("/work/\n/tools/\n/recipe/\n*.lock\n")
    (root / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hooks}\n    rev: {rev}\n    hooks:\n      - id: pin-lock\n      - id: pin-check\n"
    )
    assert main(["snapshot"]) == 0
    capsys.readouterr()

    env = {
        **os.environ,
        **_GIT_FIXTURE_ENV,
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        # a `language: system` hook runs the `pin` of the environment the setup uses: this one
        "PATH": f"{pin.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    git(root, "init", "-q", "-b", "main")
    subprocess.run([sys.executable, "-m", "pre_commit", "install"], cwd=root, env=env, check=True, capture_output=True)

    first = commit(root, env, "the setup")
    assert first.returncode == 0, first.stdout
    assert "pin.toml and pin.snapshot.toml are valid" in first.stdout and "Passed" in first.stdout
    assert "every output keeps the job id pin.snapshot.toml records" in first.stdout
    assert "Failed" not in first.stdout

    # a semantic change of the config: the output's id changes, the commit is refused and says which
    config = root / "config" / "exp.py"
    config.write_text(CONFIG.replace("1e-3", "2e-3"))
    changed = commit(root, env, "another learning rate")
    assert changed.returncode == 1, changed.stdout
    assert (
        "problem: sets.exp: 1 output changed because returnn_config.config['learning_rate']: 0.001 -> 0.002 in "
        "WriteReturnnConfigJob." in changed.stdout
    )
    assert git(root, "rev-list", "--count", "HEAD") == "1", "nothing was committed"
    config.write_text(CONFIG)

    # a hand-edited lock with a short SHA: the fast hook refuses it in one line
    (root / "pin.toml").write_text(lock.replace(pinned, pinned[:7]))
    broken = commit(root, env, "a short sha")
    assert broken.returncode == 1, broken.stdout
    assert f'problem: pin.toml: sets.exp.rc: "{pinned[:7]}" is not a full 40-hex commit' in broken.stdout
    assert git(root, "rev-list", "--count", "HEAD") == "1"
    (root / "pin.toml").write_text(lock)

    # without the setup's Sisyphus the graphs cannot be checked: that refuses the commit too
    (root / "tools" / "sisyphus").unlink()
    config.write_text(CONFIG + "# a comment\n")
    unchecked = commit(root, env, "no sisyphus")
    assert unchecked.returncode == 1, unchecked.stdout
    assert "- exit code: 9" in unchecked.stdout  # a check that could not run: no finding, its own code
    assert "pin: error: setup.sisyphus: no Sisyphus checkout at tools/sisyphus (run `pin sync`)" in unchecked.stdout
    assert git(root, "rev-list", "--count", "HEAD") == "1"
