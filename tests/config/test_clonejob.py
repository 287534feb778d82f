"""What sispin knows about CloneGitRepositoryJob (sispin.clonejob) against the real i6_core class, and the keyword
arguments each pin form produces (these need no Sisyphus)."""

from __future__ import annotations

import inspect
from pathlib import Path

from sispin.clonejob import PARAMETERS, PIN_KWARGS, REQUIRED, checkout_folder, checkout_of, job_kwargs, pin_kwargs_of
from sispin.lock.loading import parse_lockfile
from sispin.sets import ExperimentSet

SHA = "f7ad63a588359543e7882db517a5eb7fd99ec670"
URL = "https://github.com/rwth-i6/returnn_common"


def test_parameters_equal_the_real_signature(real_sisyphus):
    from i6_core.tools.git import CloneGitRepositoryJob

    real = [
        (name, REQUIRED if parameter.default is inspect.Parameter.empty else parameter.default)
        for name, parameter in inspect.signature(CloneGitRepositoryJob.__init__).parameters.items()
        if name != "self"
    ]
    assert list(PARAMETERS) == real, "i6_core changed CloneGitRepositoryJob's arguments: update sispin.clonejob"


def test_pin_tables_carry_every_argument_but_url_commit_and_checkout_folder():
    assert set(PIN_KWARGS) == {name for name, _ in PARAMETERS} - {"url", "commit", "checkout_folder_name"}


def _kwargs(lock: str, repo: str = "rc") -> dict:
    lockfile = parse_lockfile(lock, Path("/setup/pin.toml"))
    return ExperimentSet(lockfile, "s").clone_kwargs(repo)


def test_a_sha_pin_gives_url_and_commit_only():
    lock = f'version = 1\n[repos.rc]\nurl = "{URL}"\nbranch = "main"\n[sets.s]\nrc = "{SHA}"\n'
    assert _kwargs(lock) == {"url": URL, "commit": SHA}, "branch is what upgrades follow, never a job argument"


def test_a_checkout_gives_checkout_folder_name():
    lock = f'version = 1\n[repos.rc]\nurl = "{URL}"\ncheckout = "returnn_common"\n[sets.s]\nrc = "{SHA}"\n'
    assert _kwargs(lock) == {"url": URL, "commit": SHA, "checkout_folder_name": "returnn_common"}


def test_a_pin_table_adds_its_arguments_verbatim():
    lock = (
        f'version = 1\n[repos.rc]\nurl = "{URL}"\n[sets.s]\n'
        f'rc = {{ commit = "{SHA}", branch = "master", clone_submodules = true, patches = ["a.patch"] }}\n'
    )
    assert _kwargs(lock) == {
        "url": URL,
        "commit": SHA,
        "branch": "master",
        "clone_submodules": True,
        "patches": ["a.patch"],
    }


def test_the_url_is_passed_verbatim():
    url = "git@github.com:rwth-i6/returnn_common.git/"
    lock = f'version = 1\n[repos.rc]\nurl = "{url}"\n[sets.s]\nrc = "{SHA}"\n'
    assert _kwargs(lock)["url"] == url


def test_call_arguments_back_to_a_pin():
    call = {"url": URL, "commit": SHA, "branch": None, "clone_submodules": False, "checkout_folder_name": "repository"}
    assert pin_kwargs_of(call) == {}, "arguments at their defaults need no pin table"
    assert checkout_of(call) is None
    call.update(clone_submodules=True, checkout_folder_name="rc")
    assert pin_kwargs_of(call) == {"clone_submodules": True}
    assert checkout_of(call) == "rc"
    assert job_kwargs(URL, SHA, checkout_of(call), pin_kwargs_of(call)) == {
        "url": URL,
        "commit": SHA,
        "checkout_folder_name": "rc",
        "clone_submodules": True,
    }


def test_the_default_checkout_folder():
    assert checkout_folder(None) == "repository"
    assert checkout_folder("returnn_common") == "returnn_common"
