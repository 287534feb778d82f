"""
The config-facing API. Job-id tests use the real Sisyphus + i6_core of this setup and compare
``exp.clone_job()`` with the CloneGitRepositoryJob a person would write by hand.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import PROJECT_ROOT
from sispin import sets
from sispin.errors import HashOverwriteError, UnknownNameError
from sispin.lock import cache as lockcache
from sispin.lock.loading import load_lockfile, parse_lockfile
from sispin.sets import ExperimentSet, experiment_set

SHA_A = "f7ad63a588359543e7882db517a5eb7fd99ec670"
SHA_B = "d1fc1c7c2a8ca1d8d6ae9b43e1b7fde2e1a4a0b2"
PROJECT_LOCK = PROJECT_ROOT / "pin.toml"


def one_set(repo_table: str, pin: str, url: str = "https://github.com/rwth-i6/returnn_common") -> ExperimentSet:
    text = f'version = 1\n[repos.rc]\nurl = "{url}"\n{repo_table}\n[sets.s]\nrc = {pin}\n'
    return ExperimentSet(parse_lockfile(text, Path("pin.toml").absolute()), "s")


def hand_written(*args, **kwargs):
    from i6_core.tools.git import CloneGitRepositoryJob

    return CloneGitRepositoryJob(*args, **kwargs)


URL = "https://github.com/rwth-i6/returnn_common"

# (repo table, pin, the hand-written call's args and kwargs)
EQUIVALENT_CALLS = {
    "plain": ("", f'"{SHA_A}"', (URL,), {"commit": SHA_A}),
    "all positional": ("", f'"{SHA_A}"', (URL, None, SHA_A, "repository"), {}),
    "checkout folder": (
        'checkout = "returnn_common"',
        f'"{SHA_A}"',
        (URL,),
        {"commit": SHA_A, "checkout_folder_name": "returnn_common"},
    ),
    "followed branch is no job argument": ('branch = "main"', f'"{SHA_A}"', (URL,), {"commit": SHA_A}),
    "branch kwarg kept for hash compatibility": (
        "",
        f'{{ commit = "{SHA_A}", branch = "master" }}',
        (URL,),
        {"branch": "master", "commit": SHA_A},
    ),
    "all extra kwargs": (
        'checkout = "rc"',
        f'{{ commit = "{SHA_A}", clone_submodules = true, files_to_checkout = ["nn"], patches = ["diff"] }}',
        (),
        {
            "url": URL,
            "commit": SHA_A,
            "checkout_folder_name": "rc",
            "clone_submodules": True,
            "files_to_checkout": ["nn"],
            "patches": ["diff"],
        },
    ),
}


@pytest.mark.parametrize("repo_table, pin, args, kwargs", EQUIVALENT_CALLS.values(), ids=list(EQUIVALENT_CALLS))
def test_repo_job_id_equals_the_hand_written_call(real_sisyphus, repo_table, pin, args, kwargs):
    exp = one_set(repo_table, pin)
    job = exp.clone_job("rc")
    assert job.job_id() == hand_written(*args, **kwargs).job_id()
    assert exp.repo("rc") is job.out_repository


def test_the_compared_ids_really_depend_on_the_arguments(real_sisyphus):
    ids = {one_set(table, pin).clone_job("rc").job_id() for table, pin, _, _ in EQUIVALENT_CALLS.values()}
    # plain, all positional and followed-branch are one job; the other three differ from it and each other
    assert len(ids) == 4


def test_demo_job_id_is_the_one_sisyphus_computed_for_the_real_run(real_sisyphus):
    # recorded from `sis manager -r config/demo.py` on this setup: an independent check of the whole chain
    exp = ExperimentSet(load_lockfile(PROJECT_LOCK), "demo")
    assert exp.commit("returnn_common") == SHA_A
    assert exp.clone_job("returnn_common").job_id() == "i6_core/tools/git/CloneGitRepositoryJob.no3kSKlFHHxs"


def test_two_commits_give_two_ids(real_sisyphus):
    first = one_set("", f'"{SHA_A}"').clone_job("rc").job_id()
    second = one_set("", f'"{SHA_B}"').clone_job("rc").job_id()
    assert first != second
    assert first.startswith("i6_core/tools/git/CloneGitRepositoryJob.")


def test_hash_overwrite_on_the_pinned_path_is_refused(real_sisyphus):
    url = "https://example.org/hash-overwrite-test"
    exp = one_set("", f'"{SHA_A}"', url=url)
    assert exp.repo("rc").hash_overwrite is None
    # other code sets it on the same (singleton) job
    hand_written(url, commit=SHA_A).out_repository.hash_overwrite = "RETURNN_COMMON_ROOT"
    with pytest.raises(HashOverwriteError, match=r"experiment set 's', repository 'rc': .*hash_overwrite="):
        exp.repo("rc")


def test_commit_and_unknown_names_need_no_sisyphus():
    exp = one_set("", f'"{SHA_A}"')
    assert exp.commit("rc") == SHA_A
    with pytest.raises(UnknownNameError, match=r"set 's' pins no repository 'returnn' \(it pins: rc\)"):
        exp.commit("returnn")


def test_experiment_set_reads_the_lockfile_once_per_process(tmp_path, monkeypatch):
    lock = tmp_path / "pin.toml"
    lock.write_text(f'version = 1\n[repos.rc]\nurl = "{URL}"\n[sets.demo]\nrc = "{SHA_A}"\n')
    monkeypatch.setenv("PIN_LOCK", str(lock))
    sets._forget()
    calls = []
    load = lockcache.load_cached
    monkeypatch.setattr(lockcache, "load_cached", lambda path: calls.append(path) or load(path))

    first = experiment_set("demo")
    lock.write_text(f'version = 1\n[repos.rc]\nurl = "{URL}"\n[sets.demo]\nrc = "{SHA_B}"\n')
    assert experiment_set("demo") is first
    assert first.commit("rc") == SHA_A, "a running process keeps the lock it started with"
    assert calls == [lock]
    with pytest.raises(UnknownNameError, match=r"no experiment set 'other' \(known sets: demo\)"):
        experiment_set("other")
    assert calls == [lock]

    # it is found once too: another $PIN_LOCK or working directory later in the process changes nothing
    other = tmp_path / "other" / "pin.toml"
    other.parent.mkdir()
    other.write_text(f'version = 1\n[repos.rc]\nurl = "{URL}"\n[sets.demo]\nrc = "{SHA_B}"\n')
    monkeypatch.setenv("PIN_LOCK", str(other))
    monkeypatch.chdir(other.parent)
    assert experiment_set("demo") is first
    assert calls == [lock]


def test_importing_sispin_does_not_import_sisyphus():
    import subprocess
    import sys

    code = "import sys, sispin, sispin.cli.main; print('sisyphus' in sys.modules or 'i6_core' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
