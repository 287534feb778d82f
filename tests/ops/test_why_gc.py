"""
``pin why`` and ``pin gc``: what uses a commit, and removing the store checkouts nothing pins, with several setups
sharing one store, real git repositories, and (for work/) a real ``sis manager`` run.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import List, Tuple

import pytest
from filelock import FileLock

from conftest import git_commit, run_manager
from sispin.cli.main import main
from sispin.git.gc import sweep
from sispin.git.registry import register_lockfile, registered_lockfiles
from sispin.git.store import Store
from sispin.lock.loading import load_lockfile
from sispin.ops.gc import gc
from sispin.ops.why import why
from sispin.sets import ExperimentSet


class Shared:
    """
    Two setups, A and B, using one store: A's set ``a`` pins c[0]; B's set ``b`` pins c[0] too and ``b2`` pins
    c[2]. Both made their store checkouts with ``pin sync SET``.
    """

    def __init__(self, root: Path, remote: Path, commits: List[str], store: Path):
        self.root = root
        self.remote = remote
        self.c = commits
        self.store = store
        self.a = root / "A" / "pin.toml"
        self.b = root / "B" / "pin.toml"

    def checkout(self, commit: str) -> Path:
        return Store(self.store).checkout_path(f"file://{self.remote}", commit, "repository")


def lock_text(url: str, sets: List[Tuple[str, str]]) -> str:
    text = f'version = 1\n\n[repos.rc]\nurl = "{url}"\nbranch = "main"\n'
    return text + "".join(f'\n[sets.{name}]\nrc = "{commit}"\n' for name, commit in sets)


def pin(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, where: Path, *argv: str) -> Tuple[int, str]:
    """Run `pin` in a setup directory; return its exit code and what it printed (stdout, then stderr)."""
    monkeypatch.chdir(where)
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out + captured.err


@pytest.fixture
def shared(tmp_path, make_repo, store_dir, monkeypatch, capsys) -> Shared:
    remote = make_repo("rc")
    # files big enough that the space a checkout takes shows in whole blocks
    commits = [git_commit(remote, {"nn.py": f"V = {i}\n", f"data{i}.bin": "x" * 200_000}) for i in range(3)]
    url = f"file://{remote}"
    setups = Shared(tmp_path, remote, commits, store_dir)
    for lock, sets in ((setups.a, [("a", commits[0])]), (setups.b, [("b", commits[0]), ("b2", commits[2])])):
        lock.parent.mkdir()
        lock.write_text(lock_text(url, sets))
    assert pin(monkeypatch, capsys, setups.a.parent, "sync", "a")[0] == 0
    assert pin(monkeypatch, capsys, setups.b.parent, "sync", "b", "b2")[0] == 0
    return setups


def test_a_store_records_every_lockfile_that_makes_a_checkout(shared, tmp_path):
    assert registered_lockfiles(shared.store) == sorted([shared.a.resolve(), shared.b.resolve()])
    # the config path records too, before the checkout is made
    third = tmp_path / "C" / "pin.toml"
    third.parent.mkdir()
    third.write_text(lock_text(f"file://{shared.remote}", [("c", shared.c[1])]))
    path = ExperimentSet(load_lockfile(third), "c").checkout("rc")
    assert path == shared.checkout(shared.c[1])
    assert third.resolve() in registered_lockfiles(shared.store)


def test_gc_never_removes_what_another_lockfile_pins(shared, monkeypatch, capsys):
    # A moves on: its old commit c[0] is still B's pin, so it stays
    shared.a.write_text(lock_text(f"file://{shared.remote}", [("a", shared.c[1])]))
    assert pin(monkeypatch, capsys, shared.a.parent, "sync", "a")[0] == 0
    result = gc(shared.a, Store(shared.store), dry_run=False)
    assert result.sweep.removed == [] and result.freed == 0 and result.sweep.gone == []
    assert result.sweep.kept[shared.checkout(shared.c[0])] == [f"{shared.b}: sets.b.rc"]
    assert len(result.sweep.kept) == 3 and len(result.sweep.users) == 2
    assert result.name_of(shared.checkout(shared.c[0]).parent.parent.name) == "rc"
    for commit in shared.c:
        assert (shared.checkout(commit) / ".git").is_dir()


def test_gc_forgets_a_removed_setup_and_frees_what_only_it_pinned(shared, monkeypatch, capsys):
    mirror = Store(shared.store).mirror_path(f"file://{shared.remote}")
    # what only these checkouts hold, as du counts it: du counts a file linked from the mirror only once
    du = subprocess.run(
        ["du", "-s", "-B1", str(mirror), str(shared.checkout(shared.c[2]))], capture_output=True, text=True, check=True
    )
    only_in_c2 = int(du.stdout.splitlines()[1].split()[0])
    shutil.rmtree(shared.b.parent)

    code, out = pin(monkeypatch, capsys, shared.a.parent, "gc", "--dry-run")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"would forget  {shared.b.resolve()}  (no longer exists)"
    assert lines[-1] == (
        f"pin gc: dry run: would free {only_in_c2 / 1024:.1f} KiB ({only_in_c2} bytes) in 1 checkout; "
        "kept 1 checkout pinned by 1 lockfile; nothing changed"
    )
    assert (shared.checkout(shared.c[2]) / ".git").is_dir(), "a dry run removes nothing"
    assert shared.b.resolve() in registered_lockfiles(shared.store), "and forgets nothing"

    result = run_without_root_powers([sys.executable, "-m", "sispin", "gc"], shared.a.parent)
    assert result.returncode == 0, result.stderr
    assert f"removed  rc  {shared.c[2][:7]}  {shared.checkout(shared.c[2])}  " in result.stdout
    assert f"pin gc: freed {only_in_c2 / 1024:.1f} KiB ({only_in_c2} bytes) in 1 checkout" in result.stdout
    assert not shared.checkout(shared.c[2]).parent.exists()
    assert Path(f"{shared.checkout(shared.c[2]).parent}.lock").is_file(), "lock files stay"
    assert (shared.checkout(shared.c[0]) / ".git").is_dir(), "A's pin stays"
    assert registered_lockfiles(shared.store) == [shared.a.resolve()]
    assert mirror.is_dir(), "mirrors are kept"


def test_gc_reports_a_checkout_it_cannot_remove(shared, capsys):
    shared.a.write_text(lock_text(f"file://{shared.remote}", []))
    shutil.rmtree(shared.b.parent)
    # a commit directory gc may not change (in a shared store: another user's)
    locked = shared.checkout(shared.c[2]).parent
    os.chmod(locked, 0o555)
    try:
        result = run_without_root_powers([sys.executable, "-m", "sispin", "gc"], shared.a.parent)
    finally:
        os.chmod(locked, 0o755)
    assert result.returncode == 10, result.stdout + result.stderr
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    assert len(failed) == 1 and failed[0].startswith(f"FAILED  rc  {shared.c[2][:7]}  {shared.checkout(shared.c[2])}  ")
    assert failed[0].endswith(": Permission denied")
    assert result.stderr.splitlines() == [f"pin: error: 1 checkout in {shared.store} could not be removed (see above)"]
    assert f"removed  rc  {shared.c[0][:7]}" in result.stdout, "the others are removed all the same"
    assert (shared.checkout(shared.c[2]) / ".git").is_dir()


def test_gc_holds_the_lock_store_checkout_takes_and_decides_under_it(shared, tmp_path, monkeypatch):
    monkeypatch.chdir(shared.a.parent)
    shutil.rmtree(shared.b.parent)
    url = f"file://{shared.remote}"
    # c[2] now holds B's old checkout "repository" and a checkout "x" nobody pins yet
    Store(shared.store).checkout(url, shared.c[2], "x")
    commit_dir = shared.checkout(shared.c[2]).parent
    lock = FileLock(str(commit_dir) + ".lock")
    lock.acquire()
    try:
        # Store.checkout makes a checkout under this very lock: it waits ...
        made = threading.Thread(target=Store(shared.store).checkout, args=(url, shared.c[2], "y"))
        made.start()
        # ... and so does gc, before it decides on c[2]
        swept: list = []
        gc = threading.Thread(
            target=lambda: swept.append(sweep(Store(shared.store), load_lockfile(shared.a), dry_run=False))
        )
        gc.start()
        gc.join(1.5)
        made.join(0.1)
        assert gc.is_alive() and made.is_alive(), "both wait for the lock"
        # meanwhile A pins c[2] too, and another setup that pins it as "x" records itself
        shared.a.write_text(lock_text(url, [("a", shared.c[0]), ("a2", shared.c[2])]))
        late = tmp_path / "late" / "pin.toml"
        late.parent.mkdir()
        late.write_text(lock_text(url, [("late", shared.c[2])]).replace('branch = "main"', 'checkout = "x"'))
        register_lockfile(shared.store, late)
    finally:
        lock.release()
    gc.join(30)
    made.join(30)
    assert (shared.checkout(shared.c[2]) / ".git").is_dir(), "A's new pin counted: gc decided under the lock"
    assert (commit_dir / "x" / ".git").is_dir(), "the setup recorded meanwhile counted"
    # only the checkout nobody pins may have gone, if Store.checkout made it before gc looked
    assert {removal.path.name for removal in swept[0].removed} <= {"y"}


def test_gc_with_a_broken_recorded_lockfile_removes_nothing(shared, monkeypatch, capsys):
    shared.a.write_text(lock_text(f"file://{shared.remote}", []))
    shared.b.write_text(shared.b.read_text().replace(shared.c[2], shared.c[2][:7]))
    code, out = pin(monkeypatch, capsys, shared.a.parent, "gc")
    assert code == 3
    assert out.splitlines() == [
        f'pin: error: {shared.b}: sets.b2.rc: "{shared.c[2][:7]}" is not a full 40-hex commit (the store '
        f"{shared.store} serves this lockfile, so what it pins is kept: fix it, or remove it if that setup is gone)"
    ]
    for commit in (shared.c[0], shared.c[2]):
        assert (shared.checkout(commit) / ".git").is_dir()
    code, out = pin(monkeypatch, capsys, shared.a.parent, "why", "rc")
    assert code == 3 and out.startswith(f"pin: error: {shared.b}: sets.b2.rc: ")


def test_a_store_that_cannot_be_written_is_one_line_and_exit_10(history, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("PIN_HOME", str(blocker / "store"))
    code, out = pin(monkeypatch, capsys, history.lock.parent, "sync", "demo")
    assert code == 10
    assert out.splitlines() == [
        f"pin: error: cannot record {history.lock.resolve()} as a user of the store {blocker / 'store'}: "
        "Not a directory"
    ]


def uses(shared: Shared, target: str) -> list:
    """What ``pin why TARGET`` finds from setup A: per commit, the repository, the commit, the pins, the checkouts."""
    result = why(shared.a, target, Store(shared.store))
    return [(usage.name, usage.commit, [pin.key for pin in usage.pins], usage.checkouts) for usage in result.usages]


def test_why_answers_from_every_lockfile_of_the_store_and_its_checkouts(shared, monkeypatch, capsys):
    url = f"file://{shared.remote}"
    code, out = pin(monkeypatch, capsys, shared.a.parent, "why", shared.c[0][:7])
    assert code == 0
    assert out.splitlines() == [
        f"rc {shared.c[0]}  {url}",
        "  pinned by  sets.a.rc  (pin.toml)",
        f"  pinned by  sets.b.rc  ({shared.b})",
        f"  store      {shared.checkout(shared.c[0])}",
    ]
    assert uses(shared, "rc") == [
        ("rc", shared.c[0], ["sets.a.rc", "sets.b.rc"], [shared.checkout(shared.c[0])]),
        ("rc", shared.c[2], ["sets.b2.rc"], [shared.checkout(shared.c[2])]),
    ]
    shutil.rmtree(shared.b.parent)
    assert uses(shared, shared.c[2].upper()) == [("rc", shared.c[2], [], [shared.checkout(shared.c[2])])]
    code, out = pin(monkeypatch, capsys, shared.a.parent, "why", shared.c[1])
    assert (code, out) == (
        0,
        f"nothing uses {shared.c[1]}: no pin in pin.toml, no finished clone job in work/, no store checkout\n",
    )
    # a [setup.*] entry is a pin too, and its name a repository name
    setup = f'\n[setup.tool]\nurl = "{url}"\ncommit = "{shared.c[1]}"\npath = "tools/rc"\n'
    shared.a.write_text(shared.a.read_text() + setup)
    code, out = pin(monkeypatch, capsys, shared.a.parent, "why", "tool")
    assert out.splitlines() == [
        f"rc {shared.c[0]}  {url}",
        "  pinned by  sets.a.rc  (pin.toml)",
        f"  store      {shared.checkout(shared.c[0])}",
        f"tool {shared.c[1]}  {url}",
        "  pinned by  setup.tool  (pin.toml)",
        f"rc {shared.c[2]}  {url}",
        "  pinned by  no set  (`pin gc` removes its store checkout)",
        f"  store      {shared.checkout(shared.c[2])}",
    ]


def test_why_names_what_in_work_it_could_not_read(shared):
    hidden = shared.a.parent / "work" / "i6_core"
    hidden.mkdir(parents=True)
    os.chmod(hidden, 0)
    try:
        result = run_without_root_powers([sys.executable, "-m", "sispin", "why", "rc"], shared.a.parent)
    finally:
        os.chmod(hidden, 0o755)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "note: work/i6_core cannot be read: jobs below it are not counted"


@pytest.mark.parametrize(
    "argv, code, message",
    [
        (
            ["why", "nope"],
            4,
            "pin: error: pin.toml: 'nope' is neither a repository (known: rc) nor a commit (4 to 40 hex digits)",
        ),
        (
            ["why", "abc"],
            4,
            "pin: error: pin.toml: 'abc' is neither a repository (known: rc) nor a commit (4 to 40 hex digits)",
        ),
        (["why"], 2, "pin: error: pin why: the following arguments are required: COMMIT|REPO (see pin why --help)"),
        (["gc", "demo"], 2, "pin: error: pin gc: unrecognized arguments: demo (see pin gc --help)"),
    ],
)
def test_why_and_gc_refuse_bad_input_in_one_line(history, monkeypatch, capsys, argv, code, message):
    assert pin(monkeypatch, capsys, history.lock.parent, *argv) == (code, message + "\n")


CONFIG = """\
from sisyphus import tk
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.text.processing import WriteToTextFileJob
from sispin import experiment_set


def py():
    root = experiment_set("exp").repo("rc")
    config = WriteReturnnConfigJob(ReturnnConfig({"rc_root": root}, black_formatting=False))
    tk.register_output("exp/config", config.out_returnn_config_file)
    tk.register_output("exp/copy", WriteToTextFileJob(config.out_returnn_config_file).out_file)
    tk.register_output("exp/independent", WriteToTextFileJob("no repository here").out_file)
"""


def test_why_names_the_finished_jobs_and_outputs_in_work(real_setup, make_repo, store_dir, monkeypatch, capsys):
    remote = make_repo("rc")
    c = [git_commit(remote, {"__init__.py": f"V = {i}\n"}) for i in range(2)]
    tables = f'[repos.rc]\nurl = "file://{remote}"\n\n[sets.exp]\nconfigs = ["config/exp.py"]\nrc = "{c[0]}"\n'
    root = real_setup(tables, {"exp.py": CONFIG})
    log = run_manager(root, "config/exp.py")
    assert "All output calculated" in log, log
    assert pin(monkeypatch, capsys, root, "snapshot")[0] == 0
    clone = [
        p.relative_to(root / "work").as_posix()
        for p in (root / "work").glob("i6_core/tools/git/CloneGitRepositoryJob.*")
    ]
    assert len(clone) == 1
    from sispin.graph.snapshot import read_snapshot

    ids = {name: output.job for name, output in read_snapshot(root / "pin.snapshot.toml")["exp"].items()}

    code, out = pin(monkeypatch, capsys, root, "why", c[0][:7])
    assert code == 0
    assert out.splitlines() == [
        f"rc {c[0]}  file://{remote}",
        "  pinned by  sets.exp.rc  (pin.toml)",
        # by hand: the config and its copy use the checkout; the independent job does not
        f"  work       {clone[0]}  finished, 2 finished jobs built on it",
        f"  output     exp: exp/config  ({ids['exp/config']})",
        f"  output     exp: exp/copy  ({ids['exp/copy']})",
    ]

    # the set moves on: the old outputs are still in work/, but no set and no recorded output uses them now
    (root / "pin.toml").write_text((root / "pin.toml").read_text().replace(c[0], c[1]))
    assert pin(monkeypatch, capsys, root, "snapshot")[0] == 0
    result = why(root / "pin.toml", "rc", Store(store_dir))
    assert [(usage.commit, [pin.key for pin in usage.pins], usage.outputs) for usage in result.usages] == [
        (c[1], ["sets.exp.rc"], []),
        (c[0], [], []),
    ]
    assert [(clone.job, len(built_on)) for clone, built_on in result.usages[1].clones] == [(clone[0], 2)]
    assert result.unreadable == [] and result.other_lockfiles == 0


def _drop_root_powers() -> None:  # pragma: no cover - runs in the child between fork and exec
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP: gone from the bounding set after exec
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_without_root_powers(command: List[str], cwd: Path) -> subprocess.CompletedProcess:
    """
    Run command with the file permissions of an ordinary user: as root (CI), without the capabilities that let root
    ignore permission bits and ownership; after proving that such a process cannot delete a read-only tree.
    """
    kwargs = {"preexec_fn": _drop_root_powers} if os.geteuid() == 0 else {}
    probe = cwd.parent / "read-only-probe"
    (probe / "sub").mkdir(parents=True)
    (probe / "sub" / "file").write_text("x")
    os.chmod(probe / "sub", 0o555)
    attempt = subprocess.run(["rm", "-rf", str(probe)], capture_output=True, text=True, **kwargs)
    assert attempt.returncode != 0 and (probe / "sub" / "file").exists(), "the restricted process must obey permissions"
    os.chmod(probe / "sub", 0o755)
    shutil.rmtree(probe)
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, **kwargs)
