"""
The version matrix: the graph commands with the Sisyphus and i6_core commits a setup may pin, each checked out by
``pin sync`` from the histories of this setup's own checkouts (tools/sisyphus and recipe/i6_core hold them in full).

Every sampled pair runs the same end-to-end checks: the snapshot's ids equal the ids that version's own plain load
computes, ``pin check`` passes, a changed argument is caught with its cause (``check --full``, ``explain --against
HEAD``), a hidden commit is refused, and an upgrade's dry run prices the move. ``make test`` takes the pairs of
:data:`SAMPLE` marked for it (the pinned pair and the oldest ones); ``SISPIN_MATRIX=sample`` (``make test-matrix``,
which CI runs too) the whole sample: one commit each side of every change the adapter follows.
``SISPIN_MATRIX=all`` (``make test-matrix MATRIX=all``) takes every first-parent commit of each since the oldest
supported, with the other at its pinned commit, and ``SISPIN_MATRIX=N`` every Nth of them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, List, Optional, Tuple

import pytest

from conftest import PROJECT_ROOT, RECIPE_DIR, SISYPHUS_DIR, git, git_commit
from sispin.cli.main import main
from sispin.git.versions import OLDEST, PYTHON_311_SINCE
from sispin.lock.loading import parse_toml

I6_CORE_DIR = RECIPE_DIR / "i6_core"

#: (Sisyphus commit, i6_core commit; None: the one this setup pins), whether ``make test`` takes the pair too (the
#: ends of the range: a change that breaks an old version mostly breaks the oldest), what the pair tests
SAMPLE: List[Tuple[Optional[str], Optional[str], bool, str]] = [
    (None, None, True, "the pinned pair"),
    ("dec9ab9", None, False, "Sisyphus before SISGraph.jobs(update_graph=) (297701e, 2026-02-26)"),
    ("bc80ae7", None, False, "Sisyphus before verbatim environment variables (af0edef, 2024-02-13)"),
    ("0eaaf37", None, False, "Sisyphus before hash_overwrite became a property (a5b9c46, 2022-07-16)"),
    ("9620433", None, True, "the oldest Sisyphus that loads configs on Python 3.11"),
    ("d68b7ce", None, False, "the oldest Sisyphus supported (Python 3.9 and 3.10 only)"),
    (None, "663687e", False, "i6_core before CloneGitRepositoryJob's patches (236d72f, 2024-01-24)"),
    (None, "4bc8074", False, "i6_core before files_to_checkout (dbb2e35, 2023-10-19)"),
    (None, "9689c8e", False, "i6_core before clone_submodules (33f2b70, 2023-09-27)"),
    (None, "96f1330", False, "i6_core whose ReturnnConfig imports black (b5a51cf 2021-10-21 to 8c25c89 2023-08-24)"),
    (None, "358b489", True, "the oldest i6_core supported"),
    ("d68b7ce", "358b489", True, "the oldest pair"),
]

#: the demo without black_formatting=False (older i6_core has no such argument, and formats with black by default)
CONFIG = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk
from sisyphus.delayed_ops import DelayedFormat

from sispin import experiment_set


def py():
    root = experiment_set("demo").repo("rc")
    config = ReturnnConfig(
        config={"task": "train", "learning_rate": 1e-3},
        python_prolog=["import os, sys", DelayedFormat("sys.path.insert(0, os.path.dirname({!r}))", root)],
    )
    tk.register_output("demo/returnn.config", WriteReturnnConfigJob(config).out_returnn_config_file)
    tk.register_output("demo/rc", root)
"""

#: a setup's own clone, written by hand with a legacy hash_overwrite, for ``pin import --config`` to adopt
HAND_WRITTEN = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import tk
from sisyphus.delayed_ops import DelayedFormat


def py():
    root = CloneGitRepositoryJob("file://{remote}", commit="{commit}").out_repository
    root.hash_overwrite = "RC_ROOT"
    tk.register_output("hand/rc", root)
    # a path derived from it carries the overwrite on (with its suffix since Sisyphus a5b9c46, as it was before; no
    # Sisyphus before 90b6b85, 2022-01, derives one)
    derived = root.join_right("pkg") if hasattr(root, "join_right") else root
    prolog = [DelayedFormat("sys.path.insert(0, {{!r}})", derived)]
    config = ReturnnConfig(config={{"task": "train"}}, python_prolog=prolog)
    tk.register_output("hand/returnn.config", WriteReturnnConfigJob(config).out_returnn_config_file)
"""

#: what ``sis manager`` computes before its engine starts: the configs loaded, each output's job id
PLAIN_LOAD = """\
import asyncio, sys
sys.path.insert(0, "tools/sisyphus")
import sisyphus.toolkit as tk
from sisyphus.loader import config_manager
tk._sis_running_in_manager = True
asyncio.set_event_loop(asyncio.new_event_loop())
config_manager.load_configs(["config/demo.py"])
for target in sorted(tk.sis_graph.targets, key=lambda t: t.name):
    print(target.name, target._sis_path.creator._sis_id())
sys.stdout.flush()
"""


def _commit(checkout: Path, revision: Optional[str]) -> str:
    return git(checkout, "rev-parse", f"{revision or 'HEAD'}^{{commit}}")


def _loads_here(sisyphus: str) -> bool:
    """:return: whether this Sisyphus commit loads configs on this Python (older ones need 3.10 at most)"""
    if sys.version_info < (3, 11):
        return True
    return (
        subprocess.run(
            ["git", "-C", str(SISYPHUS_DIR), "merge-base", "--is-ancestor", PYTHON_311_SINCE.commit, sisyphus],
            capture_output=True,
        ).returncode
        == 0
    )


def _first_parents(checkout: Path, oldest: str) -> List[str]:
    return git(checkout, "rev-list", "--first-parent", f"{oldest}^..HEAD").split()


def _pairs() -> List[Any]:
    """:return: (Sisyphus commit, i6_core commit) of the pairs this run tests, named by them"""
    if not (SISYPHUS_DIR / ".git").exists() or not (I6_CORE_DIR / ".git").exists():
        return [pytest.param("HEAD", "HEAD", id="pinned")]  # the real_sisyphus fixture says what is missing
    chosen = os.environ.get("SISPIN_MATRIX", "")
    if chosen in ("", "sample"):
        chosen_ones = [(s, i) for s, i, in_make_test, _ in SAMPLE if chosen or in_make_test]
        pairs = [(_commit(SISYPHUS_DIR, s), _commit(I6_CORE_DIR, i)) for s, i in chosen_ones]
    else:
        sisyphus_head, i6_core_head = _commit(SISYPHUS_DIR, None), _commit(I6_CORE_DIR, None)
        step = 1 if chosen == "all" else int(chosen)
        pairs = [(s, i6_core_head) for s in _first_parents(SISYPHUS_DIR, OLDEST["sisyphus"].commit)[::step]]
        pairs += [(sisyphus_head, i) for i in _first_parents(I6_CORE_DIR, OLDEST["i6_core"].commit)[::step]]
    unique = dict.fromkeys((s, i) for s, i in pairs if _loads_here(s))
    return [pytest.param(s, i, id=f"sisyphus-{s[:7]}-i6_core-{i[:7]}") for s, i in unique]


def _setup(root: Path, sisyphus: str, i6_core: str, remote: Path, pinned: str, pin: Optional[str] = None) -> Path:
    (root / "config").mkdir(parents=True)
    (root / "recipe").mkdir()
    (root / "work").mkdir()
    (root / "config" / "demo.py").write_text(CONFIG)
    (root / "settings.py").write_text((PROJECT_ROOT / "settings.py").read_text())
    (root / "recipe" / "sispin").symlink_to(RECIPE_DIR / "sispin")
    (root / ".gitignore").write_text("/recipe/i6_core/\n/tools/\n/work/\n/output/\n/alias/\n")
    (root / "pin.toml").write_text(
        "version = 1\n\n"
        f'[repos.rc]\nurl = "file://{remote}"\nbranch = "main"\ncheckout = "rc"\n\n'
        f'[sets.demo]\nconfigs = ["config/demo.py"]\nrc = {pin or repr(pinned)}\n\n'
        f'[setup.sisyphus]\nurl = "file://{SISYPHUS_DIR}"\ncommit = "{sisyphus}"\npath = "tools/sisyphus"\n\n'
        f'[setup.i6_core]\nurl = "file://{I6_CORE_DIR}"\ncommit = "{i6_core}"\npath = "recipe/i6_core"\n'
    )
    return root


def _plain_ids(root: Path) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("PIN_LOCK", "PYTHONPATH")}
    result = subprocess.run([sys.executable, "-c", PLAIN_LOAD], cwd=root, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return dict(line.split() for line in result.stdout.splitlines())


def _pin(capsys: pytest.CaptureFixture, *args: str) -> Tuple[int, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.mark.parametrize("sisyphus, i6_core", _pairs())
def test_the_graph_commands_work_with_this_sisyphus_and_i6_core(
    sisyphus, i6_core, real_sisyphus, make_repo, store_dir, tmp_path, monkeypatch, capsys
):
    remote = make_repo("rc")
    pinned = git_commit(remote, {"__init__.py": "VERSION = 1\n"}, "the pinned state")
    newer = git_commit(remote, {"__init__.py": "VERSION = 2\n"}, "newer")
    root = _setup(tmp_path / "setup", sisyphus, i6_core, remote, pinned)
    monkeypatch.chdir(root)
    code, said = _pin(capsys, "sync")
    assert code == 0, said
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the setup")

    # the ids sispin records are the ones this Sisyphus and i6_core compute themselves
    plain = _plain_ids(root)
    code, said = _pin(capsys, "snapshot", "demo")
    assert code == 0, said
    recorded = parse_toml((root / "pin.snapshot.toml").read_text(), "pin.snapshot.toml")["sets"]["demo"]["outputs"]
    assert {name: output["job"] for name, output in recorded.items()} == plain
    assert _pin(capsys, "check", "--offline") == (0, "pin check: ok (1 set, 2 outputs)\n")

    # a changed argument is caught, with its cause
    config = root / "config" / "demo.py"
    config.write_text(CONFIG.replace("1e-3", "2e-3"))
    cause = "returnn_config.config['learning_rate']: 0.001 -> 0.002"
    code, said = _pin(capsys, "check", "--offline", "--full")
    assert code == 1 and cause in said, said
    code, said = _pin(capsys, "explain", "--against", "HEAD")
    assert code == 1 and cause in said, said

    # a commit hidden behind a hash_overwrite is refused
    config.write_text(CONFIG.replace('repo("rc")', 'repo("rc")\n    root.hash_overwrite = "RC"'))
    code, said = _pin(capsys, "snapshot", "demo")
    assert code == 7 and "hash_overwrite 'RC' set at config/demo.py:10" in said, said
    git(root, "checkout", "-q", "config/demo.py")

    # a move's dry run says what it renews, and so does the status of what moving to the branch head would change
    code, said = _pin(capsys, "upgrade", "demo", "rc", "--to", newer, "--dry-run")
    assert code == 0 and "Blast radius: 2 of 2 jobs of set 'demo' get new ids" in said, said
    code, said = _pin(capsys, "status", "--changes")
    # behind by one commit, which touches what the set uses
    assert code == 0 and said.splitlines()[1].split()[:3] + said.splitlines()[1].split()[4:6] == [
        "demo",
        "rc",
        pinned[:7],
        "1",
        "1",
    ], said

    # a hand-written clone with its legacy hash_overwrite is adopted without a new id
    (root / "config" / "hand.py").write_text(HAND_WRITTEN.format(remote=remote, commit=pinned))
    code, said = _pin(capsys, "import", "config/hand.py", "--set", "hand", "--config", "config/hand.py", "--write")
    assert code == 0 and "2 of 2 outputs keep their job id\npin.toml: sets.hand adopted" in said, said


def _pinned_setup(tmp_path: Path, make_repo: Any, sisyphus: str, i6_core: str, pin: Optional[str] = None) -> Path:
    """A setup of the demo at these commits (``pin``: the pin's TOML value instead of the commit), ``pin sync``ed."""
    remote = make_repo("rc")
    pinned = git_commit(remote, {"__init__.py": "VERSION = 1\n"}, "the pinned state")
    root = _setup(tmp_path / "setup", _commit(SISYPHUS_DIR, sisyphus), _commit(I6_CORE_DIR, i6_core), remote, pinned,
                  pin and pin.replace("PINNED", pinned))  # fmt: skip
    os.chdir(root)
    return root


def test_a_pin_argument_the_setups_i6_core_cannot_take_is_one_line(
    real_sisyphus, make_repo, store_dir, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    _pinned_setup(tmp_path, make_repo, "HEAD", "663687e", '{commit = "PINNED", patches = ["--- a\\n"]}')
    assert _pin(capsys, "sync")[0] == 0
    said = (
        "pin: error: sets.demo.rc: patches needs an i6_core whose CloneGitRepositoryJob takes it (added in i6_core "
        "236d72f, 2024-01-24); this setup's has no such parameter: move [setup.i6_core] to a newer commit, or drop "
        "patches from the pin\n"
    )
    assert _pin(capsys, "snapshot", "demo") == (13, said)
    assert _pin(capsys, "check", "--offline") == (13, said), "a check that cannot run is no problem of the set's"


def test_a_sisyphus_older_than_supported_is_said_at_sync_and_at_first_use(
    real_sisyphus, make_repo, store_dir, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    _pinned_setup(tmp_path, make_repo, "4348fcd", "HEAD")  # 2021-05-17: puts no recipe/ on sys.path
    code, said = _pin(capsys, "sync")
    older = (
        "pin: error: setup.sisyphus: Sisyphus at tools/sisyphus is older than sispin supports (Sisyphus from d68b7ce "
        "(2021-07-05; on Python 3.11 and newer from 9620433, 2022-06-20), i6_core from 358b489 (2021-07-01)): pin a "
        "newer commit in pin.toml's [setup.*] and run `pin sync`\n"
    )
    assert code == 13 and said.endswith(older) and "sisyphus  4348fcd  tools/sisyphus  cloned" in said, said
    assert _pin(capsys, "snapshot", "demo") == (13, older), "not: loading the configs failed"


def test_a_sisyphus_that_needs_an_older_python_says_which(real_sisyphus, tmp_path, monkeypatch):
    from sispin.git import versions

    monkeypatch.chdir(tmp_path)
    old = _commit(SISYPHUS_DIR, "d68b7ce")
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(SISYPHUS_DIR), "sisyphus"], check=True)
    git(tmp_path / "sisyphus", "checkout", "-q", old)
    monkeypatch.setattr(versions.sys, "version_info", (3, 11, 7))
    assert versions.unsupported("sisyphus", tmp_path / "sisyphus", "tools/sisyphus") == (
        "Sisyphus at tools/sisyphus loads configs on Python 3.9 and 3.10 only, not on this Python 3.11 (from "
        "9620433, 2022-06-20, it does): run pin with Python 3.9 or 3.10, or pin a newer Sisyphus"
    )
    monkeypatch.setattr(versions.sys, "version_info", (3, 10, 13))
    assert versions.unsupported("sisyphus", tmp_path / "sisyphus", "tools/sisyphus") is None
    git(tmp_path / "sisyphus", "checkout", "-q", _commit(SISYPHUS_DIR, "9620433"))
    monkeypatch.setattr(versions.sys, "version_info", (3, 13, 0))
    assert versions.unsupported("sisyphus", tmp_path / "sisyphus", "tools/sisyphus") is None


def test_a_setup_checkout_at_another_commit_builds_nothing(
    real_sisyphus, make_repo, store_dir, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    root = _pinned_setup(tmp_path, make_repo, "HEAD", "HEAD")
    assert _pin(capsys, "sync")[0] == 0
    other = _commit(SISYPHUS_DIR, "bc80ae7")
    git(root / "tools" / "sisyphus", "checkout", "-q", other)  # the pin stays: a build would be another version's
    pinned = _commit(SISYPHUS_DIR, None)
    said = (
        f"pin: error: setup.sisyphus: tools/sisyphus is at {other[:12]}, pin.toml pins {pinned[:12]}: a build there "
        "would record another version's ids; check out the pinned commit (or pin that one), then rerun\n"
    )
    assert _pin(capsys, "snapshot", "demo") == (6, said)
    assert _pin(capsys, "check", "--offline") == (6, said)
