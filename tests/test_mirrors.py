"""
Fast pinned checkouts: settings.py makes git take locked URLs from the store's mirrors (same URLs, same job ids),
proven with real ``sis manager`` runs whose workers clone while the remote is gone.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from conftest import git, git_commit, make_setup, run_manager
from sispin.cli.main import main
from sispin.lockfile import load_lockfile
from sispin.sets import ExperimentSet
from sispin.settings_hook import store_redirects
from sispin.store import Store


def demo_setup(root: Path, remote: Path, pinned: str, sisyphus: Path) -> Path:
    """A copy of this setup (settings.py with the mirror redirection, the demo config) pinning remote at pinned."""
    lock = (
        "version = 1\n\n"
        f'[repos.returnn_common]\nurl = "file://{remote}"\nbranch = "main"\ncheckout = "returnn_common"\n\n'
        f'[sets.demo]\nconfigs = ["config/demo.py"]\nreturnn_common = "{pinned}"\n'
    )
    return make_setup(root, lock, sisyphus)


def test_workers_clone_from_the_mirror_and_fall_back_without_it(
    real_sisyphus, make_repo, tmp_path, store_dir, monkeypatch
):
    remote = make_repo("returnn_common")
    pinned = git_commit(remote, {"__init__.py": "VERSION = 'pinned'\n", "nn/base.py": "x = 1\n"}, "pinned")
    git_commit(remote, {"__init__.py": "VERSION = 'newer'\n"}, "newer")

    first = demo_setup(tmp_path / "first", remote, pinned, real_sisyphus)
    monkeypatch.chdir(first)
    assert main(["status", "--fetch"]) == 0
    hidden = remote.with_name("away")
    remote.rename(hidden)  # only the mirror can serve the clone now
    log = run_manager(first, "config/demo.py")
    assert "All output calculated" in log, log
    checkout = first / "output" / "demo" / "returnn_common"
    assert git(checkout, "rev-parse", "HEAD") == pinned
    assert (checkout / "__init__.py").read_text() == "VERSION = 'pinned'\n"
    assert git(checkout, "config", "remote.origin.url") == f"file://{remote}", "the URL itself is unchanged"
    objects = [p for p in (checkout / ".git" / "objects").rglob("*") if p.is_file()]
    assert any(p.stat().st_nlink > 1 for p in objects), "objects are hardlinked from the mirror"
    job = ExperimentSet(load_lockfile(first / "pin.toml"), "demo").clone_job("returnn_common")
    assert checkout.resolve() == (first / "work" / job.job_id() / "output" / "returnn_common").resolve()

    # without a mirror, the same setup clones from the remote, into a job of the same id
    hidden.rename(remote)
    shutil.rmtree(store_dir)
    second = demo_setup(tmp_path / "second", remote, pinned, real_sisyphus)
    log = run_manager(second, "config/demo.py")
    assert "All output calculated" in log, log
    checkout = second / "output" / "demo" / "returnn_common"
    assert git(checkout, "rev-parse", "HEAD") == pinned
    assert checkout.resolve() == (second / "work" / job.job_id() / "output" / "returnn_common").resolve()


def test_only_complete_mirrors_are_used(history, store_dir):
    store = Store(store_dir)
    lock = load_lockfile(history.lock)
    assert store_redirects(lock, store) == [], "no mirror yet: the remote is used"
    store.fetch(history.url)
    assert store_redirects(lock, store) == [(str(store.mirror_path(history.url)), history.url)]

    newer = git_commit(history.remote, {"nn.py": "VERSION = 'newer'\n"}, "newer")
    history.lock.write_text(history.text().replace(history.c[0], newer))
    assert store_redirects(load_lockfile(history.lock), Store(store_dir)) == [], "a stale mirror is not used"


def test_settings_variables_for_sisyphus(history, store_dir, monkeypatch):
    from sispin.settings_hook import use_store_mirrors

    stale = f"url.{store_dir}/mirrors/gone.git.insteadOf"
    for key in [k for k in os.environ if k.startswith("GIT_CONFIG_")]:
        monkeypatch.delenv(key)
    # inherited: one entry of the user's, and a redirection to a mirror that no longer exists
    for key, value in {
        "GIT_CONFIG_COUNT": "3",
        "GIT_CONFIG_KEY_0": stale,
        "GIT_CONFIG_VALUE_0": "https://example.org/gone",
        "GIT_CONFIG_KEY_1": "user.name",
        "GIT_CONFIG_VALUE_1": "someone",
        "GIT_CONFIG_KEY_2": stale,
        "GIT_CONFIG_VALUE_2": "https://example.org/gone",
    }.items():
        monkeypatch.setenv(key, value)
    assert use_store_mirrors() == {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "someone",
    }
    assert "GIT_CONFIG_KEY_2" not in os.environ

    Store(store_dir).fetch(history.url)
    mirror = str(Store(store_dir).mirror_path(history.url))
    env = use_store_mirrors()
    assert env == {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "someone",
        "GIT_CONFIG_KEY_1": f"url.{mirror}.insteadOf",
        "GIT_CONFIG_VALUE_1": history.url,
    }
    assert all(os.environ[k] == v for k, v in env.items())
    assert use_store_mirrors() == env, "a worker loading settings.py again decides the same"
    # git itself follows it: a clone of the URL works while the remote is gone
    history.remote.rename(history.remote.with_name("away"))
    clone = history.lock.parent / "clone"
    subprocess.run(["git", "clone", "-q", history.url, str(clone)], check=True)
    assert git(clone, "rev-parse", "HEAD") == history.c[4]
