"""
Fast pinned checkouts: settings.py makes git take locked URLs from the store's mirrors (same URLs, same job ids),
proven with real ``sis manager`` runs whose workers clone while the remote is gone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import git, git_commit, make_setup, run, run_manager
from scenarios import task_environment
from sispin.cli.main import main
from sispin.git.store import Store
from sispin.lock.loading import load_lockfile
from sispin.sets import ExperimentSet
from sispin.settings_hook import redirect_entries, store_redirects


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
    before = dict(os.environ)
    assert use_store_mirrors() == {
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "user.name",
        "GIT_CONFIG_VALUE_0": "someone",
        "SISPIN_STORE_REDIRECTS": str(history.lock),
    }
    assert dict(os.environ) == before, "the hook changes no process environment"

    Store(store_dir).fetch(history.url)
    mirror = str(Store(store_dir).mirror_path(history.url))
    assert "SISPIN_STORE_REDIRECTS" not in os.environ, "a new manager decides anew"
    env = use_store_mirrors()
    entries = [(env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"]) for i in range(int(env["GIT_CONFIG_COUNT"]))]
    assert entries[0] == (f"url.{mirror}.insteadOf", history.url), "before inherited redirects of the same URL"
    assert entries[-1] == ("user.name", "someone"), "the user's own entries are kept"
    assert (f"url.{history.url}_.insteadOf", f"{history.url}_") in entries, "longer URLs keep their own remote"
    # a task's process, where Sisyphus set the job's environment (expanding $NAME: the values write $ as $$), keeps
    # the decision of the manager that created the job: pin.toml broken meanwhile does not reach it
    for key, value in task_environment(env).items():
        monkeypatch.setenv(key, value)
    history.lock.write_text("this is [not toml")
    assert use_store_mirrors() == env, "a task loading settings.py again keeps the manager's decision"
    # git itself follows it: a clone of the URL works while the remote is gone
    history.remote.rename(history.remote.with_name("away"))
    clone = history.lock.parent / "clone"
    subprocess.run(["git", "clone", "-q", history.url, str(clone)], check=True)
    assert git(clone, "rev-parse", "HEAD") == history.c[4]


def _git_config_env(entries) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_CONFIG_")}
    env["GIT_CONFIG_COUNT"] = str(len(entries))
    for i, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{i}"], env[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return env


def test_a_redirect_sends_exactly_its_url_to_the_mirror(tmp_path):
    url = "https://github.com/rwth-i6/returnn"
    mirror = str(tmp_path / "mirrors" / "returnn.git")
    env = _git_config_env(redirect_entries([(mirror, url)]))
    expected = {
        url: mirror,
        f"{url}_common": f"{url}_common",
        f"{url}.git": f"{url}.git",
        f"{url}/": f"{url}/",
        f"{url}-fork": f"{url}-fork",
    }
    for asked, answer in expected.items():
        got = subprocess.run(
            ["git", "ls-remote", "--get-url", asked], env=env, capture_output=True, text=True, check=True
        ).stdout.strip()
        assert got == answer, asked


CLONES_SIDE_BY_SIDE = """\
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import tk

from sispin import experiment_set


def py():
    tk.register_output("returnn", experiment_set("s").repo("returnn"))
    common = CloneGitRepositoryJob("{common_url}", commit="{common_commit}", checkout_folder_name="returnn_common")
    tk.register_output("returnn_common", common.out_repository)
"""


def test_a_locked_returnn_mirror_leaves_returnn_common_alone(
    real_sisyphus, make_repo, tmp_path, store_dir, monkeypatch
):
    returnn = make_repo("returnn")
    pinned = git_commit(returnn, {"__init__.py": "NAME = 'returnn'\n"})
    common = make_repo("returnn_common")
    common_commit = git_commit(common, {"__init__.py": "NAME = 'returnn_common'\n"})
    lock = f'version = 1\n\n[repos.returnn]\nurl = "file://{returnn}"\n\n[sets.s]\nreturnn = "{pinned}"\n'
    config = CLONES_SIDE_BY_SIDE.format(common_url=f"file://{common}", common_commit=common_commit)
    root = make_setup(tmp_path / "setup", lock, real_sisyphus, {"s.py": config})
    monkeypatch.chdir(root)
    assert main(["status", "--fetch"]) == 0
    returnn.rename(returnn.with_name("away"))  # only the mirror can serve returnn now
    log = run_manager(root, "config/s.py")
    assert "All output calculated" in log, log
    assert git(root / "output" / "returnn", "rev-parse", "HEAD") == pinned
    checkout = root / "output" / "returnn_common"
    assert git(checkout, "rev-parse", "HEAD") == common_commit, "cloned from its own remote, not <mirror>_common"


def test_sisyphus_starts_outside_a_setup_and_says_no_redirect_is_active(real_sisyphus, tmp_path):
    config = 'from sisyphus import tk\n\n\ndef py():\n    tk.register_output("x", tk.Path("/dev/null"))\n'
    root = make_setup(tmp_path / "setup", "version = 1\n", real_sisyphus, {"plain.py": config})
    (root / "pin.toml").unlink()
    env = {**os.environ, "PIN_LOCK": str(tmp_path / "missing.toml")}
    env.pop("SISPIN_STORE_REDIRECTS", None)
    result = run([sys.executable, root / "tools" / "sisyphus" / "sis", "manager", "-r", "config/plain.py"], root, env)
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    # the lines sispin's logger wrote (the setup's own path may hold "sispin" too)
    lines = [line for line in log.splitlines() if "sispin: " in line]
    assert (
        len(lines) == 1 and f"no store redirect active: PIN_LOCK={tmp_path / 'missing.toml'}: no such file" in lines[0]
    )


def test_a_task_never_reads_pin_toml(history, store_dir):
    history.lock.write_text("[broken")
    env = {**os.environ, "SISPIN_STORE_REDIRECTS": str(history.lock), "GIT_CONFIG_COUNT": "1"}
    env.update(GIT_CONFIG_KEY_0="url./mirror.insteadOf", GIT_CONFIG_VALUE_0="https://example.org/x")
    code = "import json, sispin; print(json.dumps(sispin.use_store_mirrors()))"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert json.loads(result.stdout)["GIT_CONFIG_KEY_0"] == "url./mirror.insteadOf"
    assert result.stderr == ""


def test_the_store_wins_over_an_inherited_redirect_of_the_same_url(history, store_dir, monkeypatch):
    from sispin.settings_hook import use_store_mirrors

    Store(store_dir).fetch(history.url)
    # an offline setup (like CI's) already sends the URL to a bundle: the store's local mirror must still win
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "url./somewhere/rc.bundle.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", history.url)
    monkeypatch.delenv("SISPIN_STORE_REDIRECTS", raising=False)
    env = task_environment(use_store_mirrors())
    got = subprocess.run(["git", "ls-remote", "--get-url", history.url], env=env, capture_output=True, text=True)
    assert got.stdout.strip() == str(Store(store_dir).mirror_path(history.url))


def test_urls_that_continue_a_redirected_one_keep_the_users_own_redirect(tmp_path):
    url = "file:///srv/repo"
    mirror = str(tmp_path / "mirrors" / "repo.git")
    users = [("url./alt/.insteadOf", "file:///srv/")]  # an offline setup sending a whole host to local copies
    env = _git_config_env(redirect_entries([(mirror, url)], users) + users)
    expected = {url: mirror, f"{url}2": "/alt/repo2", f"{url} old": "/alt/repo old", f"{url}\t": "/alt/repo\t"}
    expected[f"{url}\x7f"] = "/alt/repo\x7f"
    for asked, answer in expected.items():
        got = subprocess.run(["git", "ls-remote", "--get-url", asked], env=env, capture_output=True, text=True)
        assert got.stdout.rstrip("\n") == answer, repr(asked)


def test_a_manager_asks_git_about_a_mirror_only_when_its_object_store_changed(history, store_dir, monkeypatch):
    store = Store(store_dir)
    mirror = store.fetch(history.url)
    lock = load_lockfile(history.lock)
    past = time.time() - 60  # a fetch a minute ago: its directory times can no longer change unseen
    for directory in (mirror / "objects", *(mirror / "objects").iterdir()):
        os.utime(directory, (past, past))
    assert store_redirects(lock, store) == [(str(mirror), history.url)]
    assert (mirror / "sispin-commits.json").is_file()
    # git's answer is kept: a manager where no git can run (nothing else changed) still redirects
    monkeypatch.setenv("PATH", str(history.lock.parent / "no-git-here"))
    assert store_redirects(lock, store) == [(str(mirror), history.url)]
    # a repack changes objects/pack: git is asked again (and here cannot answer: no redirect, the remote is used)
    subprocess.run(
        ["/usr/bin/env", "git", "-C", str(mirror), "repack", "-adq"], env={**os.environ, "PATH": "/usr/bin:/bin"}
    )
    assert store_redirects(lock, store) == []


def test_the_settings_hook_takes_the_validated_lock_from_its_cache(history, store_dir, monkeypatch):
    from sispin.lock import cache, loading
    from sispin.settings_hook import use_store_mirrors

    cache.load_cached(history.lock)  # as after an earlier manager start
    for module in (cache, loading):
        monkeypatch.setattr(module, "parse_lockfile", lambda text, path: pytest.fail("validated again"))
    monkeypatch.delenv("SISPIN_STORE_REDIRECTS", raising=False)
    assert use_store_mirrors()["SISPIN_STORE_REDIRECTS"] == str(history.lock)
