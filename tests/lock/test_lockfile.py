"""pin.toml parsing and validation: the good file, and one clear error per kind of bad file."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sispin.errors import LockfileError, UnknownNameError
from sispin.lock.loading import find_lockfile, load_lockfile, parse_lockfile
from sispin.lock.urls import check_url

SHA_A = "f7ad63a588359543e7882db517a5eb7fd99ec670"
SHA_B = "81d2a067f8a8b02cb714857d89f378e2e39a78f7"

GOOD = f"""\
version = 1  # format version

[repos.returnn_common]
url = "https://github.com/rwth-i6/returnn_common"
branch = "main"
checkout = "returnn_common"

[repos.returnn]
url = "git@github.com:rwth-i6/returnn.git"

[sets.demo]
configs = ["config/demo.py"]
returnn_common = "{SHA_A}"
returnn = {{ commit = "{SHA_B}", branch = "master", clone_submodules = true }}

[sets.empty]

[setup.i6_core]
url = "https://github.com/rwth-i6/i6_core"
commit = "{SHA_B}"
path = "recipe/i6_core"
"""


def parse(text: str):
    return parse_lockfile(text, Path("pin.toml").absolute())


def test_good_lockfile_gives_value_objects():
    lock = parse(GOOD)
    assert list(lock.repos) == ["returnn_common", "returnn"]
    rc = lock.repos["returnn_common"]
    assert (rc.url, rc.branch, rc.checkout) == ("https://github.com/rwth-i6/returnn_common", "main", "returnn_common")
    assert lock.repos["returnn"].branch is None and lock.repos["returnn"].checkout is None
    demo = lock.get_set("demo")
    assert demo.configs == ("config/demo.py",)
    assert demo.pin("returnn_common").commit == SHA_A
    assert demo.pin("returnn_common").job_kwargs == {}
    assert demo.pin("returnn").job_kwargs == {"branch": "master", "clone_submodules": True}
    assert lock.get_set("empty").pins == {} and lock.get_set("empty").configs == ()
    assert lock.setup["i6_core"].path == "recipe/i6_core"
    assert lock.root == Path.cwd()


def test_unknown_set_and_repo_list_the_known_ones():
    lock = parse(GOOD)
    with pytest.raises(UnknownNameError, match=r"no experiment set 'nope' \(known sets: demo, empty\)"):
        lock.get_set("nope")
    with pytest.raises(UnknownNameError, match=r"no repository 'nope' \(known repositories: returnn, returnn_common\)"):
        lock.get_repo("nope")
    with pytest.raises(UnknownNameError, match=r"set 'empty' pins no repository 'returnn' \(it pins: none\)"):
        lock.get_set("empty").pin("returnn")


REPO = '[repos.rc]\nurl = "https://github.com/rwth-i6/returnn_common"\n'

BAD = {
    "bad TOML names the line": (
        "version = 1\n[repos.rc\n",
        r"pin.toml: invalid TOML at line 2, column 10: a \[table\] header is not closed: end it with '\]'$",
    ),
    "an unclosed string says so": (
        'version = 1\n[sets.demo]\nconfigs = ["a.py]\n',
        "pin.toml: invalid TOML at line 3, column 18: the line ends inside a string: close it with the quote that",
    ),
    "a duplicate key names both lines": (
        f'version = 1\n{REPO}branch = "a"\nbranch = "b"\n',
        r"pin.toml: invalid TOML at line 5, column 13: key branch is set twice \(first on line 4\): keep one$",
    ),
    "a duplicate table names both lines": (
        f"version = 1\n{REPO}[sets.a]\n{REPO}",
        r"invalid TOML at line 5, column 10: \[repos.rc\] is declared twice \(first on line 2\): merge the",
    ),
    "a bare word value says what a string needs": (
        "version = 1\nx = abc\n",
        r"pin.toml: invalid TOML at line 2, column 5: not a TOML value: a string needs quotes",
    ),
    "missing version": ("[repos]\n", "pin.toml: version: missing"),
    "unknown version": ("version = 2\n", "pin.toml: version: unsupported version 2"),
    "boolean version": ("version = true\n", "pin.toml: version: unsupported version True"),
    "unknown top-level key": ("version = 1\nrepo = 1\n", "pin.toml: repo: unknown key"),
    "repos not a table": ("version = 1\nrepos = 3\n", "pin.toml: repos: must be a table"),
    "repo not a table": ("version = 1\n[repos]\nrc = 'x'\n", "pin.toml: repos.rc: must be a table"),
    "unknown repo key": (f"version = 1\n{REPO}tag = 'v1'\n", "pin.toml: repos.rc.tag: unknown key"),
    "misspelt repo key names the likely one": (
        f"version = 1\n{REPO}brnach = 'main'\n",
        r"pin.toml: repos.rc.brnach: unknown key; did you mean 'branch'\? \(allowed: ",
    ),
    "misspelt set key is no pin of an undeclared repository": (
        f"version = 1\n{REPO}[sets.demo]\nconfig = ['a.py']\n",
        r"pin.toml: sets.demo.config: unknown key; did you mean 'configs'\? \(the keys of a set: ",
    ),
    "misspelt set key beside a repository of a close name": (
        f"version = 1\n{REPO}[repos.config2]\nurl = 'https://h/config2'\n[sets.demo]\nconfig = ['a.py']\n",
        r"pin.toml: sets.demo.config: unknown key; did you mean 'configs'\? \(the keys of a set: ",
    ),
    "misspelt repository of a pin names the declared one": (
        f"version = 1\n{REPO}[sets.demo]\nrcc = '{'a' * 40}'\n",
        r"sets.demo.rcc: repository 'rcc' is not declared under \[repos\]; did you mean 'rc'\? \(declared: rc\)",
    ),
    "missing url": ("version = 1\n[repos.rc]\nbranch = 'main'\n", "pin.toml: repos.rc.url: missing"),
    "empty url": ("version = 1\n[repos.rc]\nurl = ''\n", "pin.toml: repos.rc.url: must be a non-empty string"),
    "url not a URL": ("version = 1\n[repos.rc]\nurl = 'just/a/path'\n", "repos.rc.url: 'just/a/path' is not a URL"),
    "bad repo name": ("version = 1\n[repos.'r c']\nurl = 'https://h/r'\n", "repos.'r c': names may use only"),
    "reserved repo name": (
        "version = 1\n[repos.configs]\nurl = 'https://h/r'\n",
        "repos.configs: 'configs' is reserved",
    ),
    "absolute checkout": (
        f"version = 1\n{REPO}checkout = '/tmp/x'\n",
        "repos.rc.checkout: checkout folder '/tmp/x' must be relative",
    ),
    "escaping checkout": (f"version = 1\n{REPO}checkout = 'a/../..'\n", "repos.rc.checkout: .*must stay inside"),
    "short SHA": (
        f"version = 1\n{REPO}[sets.demo]\nrc = 'd1fc1c7'\n",
        'pin.toml: sets.demo.rc: "d1fc1c7" is not a full 40-hex commit$',
    ),
    "uppercase SHA": (
        f"version = 1\n{REPO}[sets.demo]\nrc = '{SHA_A.upper()}'\n",
        r"sets.demo.rc: .* is not a full 40-hex commit \(use lowercase\)",
    ),
    "non-hex SHA": (
        f"version = 1\n{REPO}[sets.demo]\nrc = '{'g' * 40}'\n",
        "sets.demo.rc: .* is not a full 40-hex commit",
    ),
    "SHA not a string": (
        f"version = 1\n{REPO}[sets.demo]\nrc = 12\n",
        "sets.demo.rc: must be a commit SHA string or a table",
    ),
    "undeclared repo": (
        f"version = 1\n{REPO}[sets.demo]\nreturnn = '{SHA_A}'\n",
        r"pin.toml: sets.demo.returnn: repository 'returnn' is not declared under \[repos\] \(declared: rc\)",
    ),
    "pin table without commit": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ branch = 'main' }}\n",
        "sets.demo.rc.commit: missing",
    ),
    "pin table with short commit": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = 'abc' }}\n",
        'sets.demo.rc.commit: "abc" is not',
    ),
    "kwarg the job does not take": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', depth = 1 }}\n",
        "sets.demo.rc.depth: CloneGitRepositoryJob takes no argument 'depth' here",
    ),
    "url kwarg in a pin": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', url = 'https://x/y' }}\n",
        "sets.demo.rc.url: CloneGitRepositoryJob takes no argument 'url' here",
    ),
    "kwarg of the wrong type": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', clone_submodules = 'yes' }}\n",
        "sets.demo.rc.clone_submodules: must be a boolean",
    ),
    "empty file to check out": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', files_to_checkout = ['a', ''] }}\n",
        "sets.demo.rc.files_to_checkout: an empty string is no file to check out",
    ),
    "NUL in a patch": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', patches = ['''\n+a\n''', " + '"a\\u0000b"] }\n',
        r"sets.demo.rc.patches: 'a\\x00b' contains a control character",
    ),
    "escape character in a patch": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', patches = [" + '"a\\u001b[0m\\n"] }\n',
        "sets.demo.rc.patches: .* contains a control character",
    ),
    "newline in files_to_checkout": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', files_to_checkout = [" + '"a\\nb"] }\n',
        "sets.demo.rc.files_to_checkout: 'a\\\\nb' contains a control character",
    ),
    "newline in a pin's branch": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', branch = " + '"main\\n" }\n',
        "sets.demo.rc.branch: 'main\\\\n' contains a control character",
    ),
    "configs not a list": (
        f"version = 1\n{REPO}[sets.demo]\nconfigs = 'config/demo.py'\n",
        "sets.demo.configs: must be an array",
    ),
    "config escaping the setup": (
        "version = 1\n[sets.demo]\nconfigs = ['../x.py']\n",
        "sets.demo.configs: .*must stay inside",
    ),
    "setup without path": (
        f"version = 1\n[setup.i6_core]\nurl = 'https://h/r'\ncommit = '{SHA_A}'\n",
        "pin.toml: setup.i6_core.path: missing",
    ),
    "setup without commit": (
        "version = 1\n[setup.i6_core]\nurl = 'https://h/r'\npath = 'x'\n",
        "setup.i6_core.commit: missing",
    ),
    "setup short commit": (
        "version = 1\n[setup.i6_core]\nurl = 'https://h/r'\npath = 'x'\ncommit = 'abc1234'\n",
        'setup.i6_core.commit: "abc1234" is not a full 40-hex commit',
    ),
    "setup absolute path": (
        f"version = 1\n[setup.s]\nurl = 'https://h/r'\ncommit = '{SHA_A}'\npath = '/opt/s'\n",
        "setup.s.path: path '/opt/s' must be relative",
    ),
    "setup unknown key": (
        f"version = 1\n[setup.s]\nurl = 'https://h/r'\ncommit = '{SHA_A}'\npath = 's'\nbranch = 'x'\n",
        "setup.s.branch: unknown key",
    ),
}


@pytest.mark.parametrize("text, message", BAD.values(), ids=list(BAD))
def test_bad_lockfile_gives_one_line_naming_file_and_key(text: str, message: str):
    with pytest.raises(LockfileError, match=message) as info:
        parse(text)
    assert "\n" not in str(info.value)


def test_a_patch_may_hold_line_breaks_tabs_and_crs():
    patch = "diff --git a/x b/x\r\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-\ta\n+\tb\n"
    text = f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA_A}', patches = [{json.dumps(patch)}] }}\n"
    assert parse(text).get_set("demo").pin("rc").job_kwargs == {"patches": [patch]}


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com/rwth-i6/returnn_common",
        "ssh://git@github.com/rwth-i6/returnn.git",
        "git://example.org/repo.git",
        "file:///srv/git/repo",
        "git@github.com:rwth-i6/returnn.git",
    ],
)
def test_allowed_urls(url: str):
    assert check_url(url) is None


@pytest.mark.parametrize(
    "url, problem",
    [
        ("https://user:token@github.com/x/y", "embeds credentials"),
        ("https://token@github.com/x/y", "embeds credentials"),
        ("ssh://git:secret@github.com/x/y", "embeds credentials"),
        ("user:secret@github.com:x/y", "embeds credentials"),
        ("ext::sh -c touch% /tmp/pwned", "whitespace"),
        ("ext::ssh", "remote helper"),
        ("fd::17", "remote helper"),
        ("--upload-pack=touch /tmp/x", "starts with '-'"),
        ("http://github.com/x/y", "transport 'http' is not allowed"),
        ("file://relative/path", "must be absolute"),
        ("https:///nohost", "has no host"),
        ("/srv/git/repo", "is not a URL"),
    ],
)
def test_refused_urls(url: str, problem: str):
    assert problem in (check_url(url) or "")


def test_find_lockfile_searches_upwards_and_honours_pin_lock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    (tmp_path / "pin.toml").write_text("version = 1\n")
    sub = tmp_path / "config" / "deep"
    sub.mkdir(parents=True)
    monkeypatch.chdir(sub)
    assert find_lockfile() == tmp_path / "pin.toml"

    other = tmp_path / "other.toml"
    other.write_text("version = 1\n")
    monkeypatch.setenv("PIN_LOCK", str(other))
    assert find_lockfile() == other
    monkeypatch.setenv("PIN_LOCK", str(tmp_path / "missing.toml"))
    with pytest.raises(LockfileError, match="PIN_LOCK=.*missing.toml: no such file"):
        find_lockfile()


def test_no_lockfile_anywhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LockfileError, match="no pin.toml in .* or any parent directory"):
        find_lockfile()


def test_load_names_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pin.toml").write_text("version = 1\n[sets.demo]\nrc = 'abc'\n")
    with pytest.raises(LockfileError, match=r"^pin.toml: sets.demo.rc: repository 'rc' is not declared"):
        load_lockfile(tmp_path / "pin.toml")
    (tmp_path / "pin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(LockfileError, match="^pin.toml: cannot read"):
        load_lockfile(tmp_path / "pin.toml")


def test_the_snapshot_text_reads_back_as_what_was_recorded_whatever_the_names():
    from sispin.graph.snapshot import render_snapshot

    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    sets = {
        "exp.v2": {
            "outputs": {'a "q"/b\\c': {"job": "x/Y.z", "path": "é\x7f\t"}, "plain": {"job": "j", "path": ""}},
            "aliases": {"i6.models": {"commit": "a" * 40, "hash_overwrite": 'V/ä"'}},
        },
        "b-1": {"outputs": {}},
    }
    bound = {'V/ä"': ["a" * 40, "b" * 40], "X": ["c" * 40]}
    data = tomllib.loads(render_snapshot(sets, bound))
    assert data["sets"] == sets and data["bound"] == bound and data["version"] == 1


def test_the_file_locks_leave_git_status_clean_and_are_shared_through_a_symlink(tmp_path):
    import subprocess

    from filelock import FileLock, Timeout

    from conftest import commit_setup
    from sispin.lock.files import CACHE_DIR, file_lock, snapshot_path

    setup = tmp_path / "setup"
    setup.mkdir()
    lock = setup / "pin.toml"
    lock.write_text("[repos]\n")
    commit_setup(setup)
    for path in (lock, snapshot_path(lock), setup / ".pin-sync"):
        with file_lock(path):
            pass
    status = subprocess.run(["git", "status", "--porcelain", "--ignored=no"], cwd=setup, capture_output=True, text=True)
    assert status.stdout == ""
    # a second setup that links the first one's pin.toml takes the same lock
    other = tmp_path / "other"
    other.mkdir()
    (other / "pin.toml").symlink_to(lock)
    with file_lock(other / "pin.toml"):
        with pytest.raises(Timeout):
            FileLock(str(setup / CACHE_DIR / "locks" / "pin.toml.lock"), timeout=0).acquire()
