"""
Reliability and security: a corpus of bad input (each one error line, a documented exit code, no traceback, the
lockfile untouched), hostile URLs and refs, hung and vanished remotes, killed runs, and concurrent writers.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import fault_loop
import pytest

from conftest import PROJECT_ROOT, git, git_commit
from sispin.cli.main import main
from sispin.git import process as sispin_git
from sispin.git.store import Store
from sispin.lock.loading import load_lockfile

SHA = "f7ad63a588359543e7882db517a5eb7fd99ec670"
REPO = '[repos.rc]\nurl = "https://github.com/rwth-i6/returnn_common"\n'
SET = f'[sets.demo]\nrc = "{SHA}"\n'
GOOD = f"version = 1\n{REPO}{SET}"

# (lockfile content or None for no lockfile, argv, exit code, what the one error line says)
CORPUS = {
    # pin.toml content
    "invalid TOML": ("version = 1\n[repos.rc\n", ["status"], 3, r"pin.toml: invalid TOML at line 2, column 10: "),
    "empty file": ("", ["status"], 3, "pin.toml: version: missing"),
    "unknown version": (
        "version = 2\n",
        ["status"],
        3,
        r"pin.toml: version: unsupported version 2 \(this sispin reads 1; a newer sispin wrote it: update sispin\)$",
    ),
    "string version": ('version = "1"\n', ["status"], 3, "pin.toml: version: unsupported version '1'"),
    "unknown key": ("version = 1\nsetsx = 1\n", ["status"], 3, "pin.toml: setsx: unknown key"),
    "missing url": ("version = 1\n[repos.rc]\n", ["status"], 3, "pin.toml: repos.rc.url: missing"),
    "url with a token": (
        'version = 1\n[repos.rc]\nurl = "https://user:s3cr3t@github.com/x/y"\n',
        ["status"],
        3,
        r"pin.toml: repos.rc.url: the URL embeds credentials",
    ),
    "url with a token and a bad transport": (
        'version = 1\n[repos.rc]\nurl = "http://s3cr3t@github.com/x y"\n',
        ["status"],
        3,
        r"repos.rc.url: the URL embeds credentials",
    ),
    "scp url with a password": (
        'version = 1\n[repos.rc]\nurl = "git:s3cr3t@github.com:x/y"\n',
        ["status"],
        3,
        r"repos.rc.url: the URL embeds credentials",
    ),
    "url with an access token in its path": (
        'version = 1\n[repos.rc]\nurl = "https://h/ghp_s3cr3tA1b2C3d4E5f6G7h8I9/rc"\n',
        ["status"],
        3,
        "repos.rc.url: the URL embeds credentials",
    ),
    "url with a gitlab token as user": (
        'version = 1\n[repos.rc]\nurl = "https://oauth2:glpat-s3cr3tA1b2C3d4E5f6G7@h/rc"\n',
        ["status"],
        3,
        "repos.rc.url: the URL embeds credentials",
    ),
    "ext transport": ('version = 1\n[repos.rc]\nurl = "ext::sh"\n', ["status"], 3, r"remote helper"),
    "fd transport": ('version = 1\n[repos.rc]\nurl = "fd::3"\n', ["status"], 3, r"remote helper"),
    "option injection": ('version = 1\n[repos.rc]\nurl = "--upload-pack=id"\n', ["status"], 3, r"starts with '-'"),
    "http transport": (
        'version = 1\n[repos.rc]\nurl = "http://h/x"\n',
        ["status"],
        3,
        r"transport 'http' is not allowed",
    ),
    "relative file url": ('version = 1\n[repos.rc]\nurl = "file://x/y"\n', ["status"], 3, r"must be absolute"),
    "broken ipv6 url": ('version = 1\n[repos.rc]\nurl = "https://[::1/x"\n', ["status"], 3, r"is not a valid URL"),
    "control character": ('version = 1\n[repos.rc]\nurl = "https://h/x\\u0007"\n', ["status"], 3, r"control"),
    "short SHA": (
        f"version = 1\n{REPO}[sets.demo]\nrc = 'd1fc1c7'\n",
        ["status"],
        3,
        r'"d1fc1c7" is not a full 40-hex',
    ),
    "uppercase SHA": (f"version = 1\n{REPO}[sets.demo]\nrc = '{SHA.upper()}'\n", ["status"], 3, "use lowercase"),
    "non-hex SHA": (f"version = 1\n{REPO}[sets.demo]\nrc = '{'z' * 40}'\n", ["status"], 3, "not a full 40-hex"),
    "undeclared repo": (f"version = 1\n[sets.demo]\nrc = '{SHA}'\n", ["status"], 3, "not declared under"),
    "kwarg the job lacks": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA}', depth = 1 }}\n",
        ["status"],
        3,
        "takes no argument 'depth'",
    ),
    "kwarg of a wrong type": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA}', patches = 'x' }}\n",
        ["status"],
        3,
        "sets.demo.rc.patches: must be an array of strings",
    ),
    "absolute checkout": (
        f"version = 1\n{REPO}checkout = '/etc'\n",
        ["status"],
        3,
        "repos.rc.checkout: .*must be relative",
    ),
    "escaping checkout": (f"version = 1\n{REPO}checkout = '../../x'\n", ["status"], 3, "must stay inside"),
    "escaping setup path": (
        f"version = 1\n[setup.s]\nurl = 'https://h/s'\ncommit = '{SHA}'\npath = '../outside'\n",
        ["sync"],
        3,
        "setup.s.path: .*must stay inside",
    ),
    "absolute setup path": (
        f"version = 1\n[setup.s]\nurl = 'https://h/s'\ncommit = '{SHA}'\npath = '/opt/s'\n",
        ["sync"],
        3,
        "setup.s.path: path '/opt/s' must be relative",
    ),
    "home-relative setup path": (
        f"version = 1\n[setup.s]\nurl = 'https://h/s'\ncommit = '{SHA}'\npath = '~/s'\n",
        ["sync"],
        3,
        "must be relative",
    ),
    "escaping config path": (
        "version = 1\n[sets.demo]\nconfigs = ['../x.py']\n",
        ["status"],
        3,
        "configs: .*must stay inside",
    ),
    "not UTF-8": (b"version = 1\n\xff\n", ["status"], 3, "pin.toml: cannot read"),
    "no lockfile": (None, ["status"], 3, "no pin.toml in .* or any parent directory"),
    # command lines
    "unknown command": (GOOD, ["frobnicate"], 2, "'frobnicate' is not a pin command"),
    "unknown option": (GOOD, ["status", "--colour"], 2, "unrecognized arguments: --colour"),
    "upgrade without a set": (GOOD, ["upgrade"], 2, r"upgrade needs SET \(or --all\)"),
    "unknown set": (GOOD, ["upgrade", "nope"], 4, r"no experiment set 'nope' \(known sets: demo\)"),
    "unknown repo": (GOOD, ["upgrade", "demo", "nope"], 4, r"pins no repository 'nope' \(it pins: rc\)"),
    "--to with two repos": (GOOD, ["upgrade", "demo", "rc", "rc", "x", "--to", "v1"], 2, "--to needs exactly one REPO"),
    "status of an unknown set": (GOOD, ["status", "nope"], 4, "no experiment set 'nope'"),
    "new of an existing set": (GOOD, ["new", "demo"], 4, "experiment set 'demo' already exists"),
    "new with a bad name": (GOOD, ["new", "../x"], 2, "is not a valid set name"),
    "new from an unknown set": (GOOD, ["new", "x", "--from", "nope"], 4, "no experiment set 'nope'"),
    "snapshot of an unknown set": (GOOD, ["snapshot", "nope"], 4, "no experiment set 'nope'"),
    "check of an unknown set": (GOOD, ["check", "nope", "--offline"], 4, "no experiment set 'nope'"),
    "verify of an unknown set": (GOOD, ["verify", "nope"], 4, "no experiment set 'nope'"),
    "sync of an unknown set": (GOOD, ["sync", "nope"], 4, "no experiment set 'nope'"),
    "import of a missing path": (GOOD, ["import", "nope.py"], 2, "nope.py: no such file or directory"),
    "import --write without --set": (GOOD, ["import", ".", "--write"], 2, "--write needs --set NAME"),
    # a pattern's "$" also matches before a trailing newline: every check matches the whole value
    "SHA with a trailing newline": (
        f'version = 1\n{REPO}[sets.demo]\nrc = "{SHA}\\n"\n',
        ["status"],
        3,
        r'sets.demo.rc: "f7ad63a[0-9a-f]*\\n" is not a full 40-hex commit',
    ),
    "pin-table commit with a trailing newline": (
        f'version = 1\n{REPO}[sets.demo]\nrc = {{ commit = "{SHA}\\n" }}\n',
        ["status"],
        3,
        "sets.demo.rc.commit: .* is not a full 40-hex commit",
    ),
    "setup commit with a trailing newline": (
        f'version = 1\n[setup.s]\nurl = "https://h/s"\ncommit = "{SHA}\\n"\npath = "s"\n',
        ["sync"],
        3,
        "setup.s.commit: .* is not a full 40-hex commit",
    ),
    "set name with a trailing newline": (
        f'version = 1\n{REPO}[sets."demo\\n"]\nrc = "{SHA}"\n',
        ["status"],
        3,
        r"sets.'demo\\n': names may use only",
    ),
    "repo name with a trailing newline": (
        'version = 1\n[repos."rc\\n"]\nurl = "https://h/x"\n',
        ["status"],
        3,
        r"repos.'rc\\n': names may use only",
    ),
    "new set name with a trailing newline": (GOOD, ["new", "x\n"], 2, r"'x\\n' is not a valid set name"),
    "import set name with a trailing newline": (GOOD, ["import", ".", "--set", "x\n"], 2, r"--set 'x\\n': names"),
    # control characters reach git and the file system, where they mean something else
    "NUL in checkout": (f'{GOOD}[repos.x]\nurl = "https://h/x"\ncheckout = "a\\u0000b"\n', ["status"], 3, "control"),
    "newline in checkout": (f'{GOOD}[repos.x]\nurl = "https://h/x"\ncheckout = "a\\nb"\n', ["status"], 3, "control"),
    "NUL in branch": (f'{GOOD}[repos.x]\nurl = "https://h/x"\nbranch = "main\\u0000"\n', ["status"], 3, "control"),
    "newline in branch": (f'{GOOD}[repos.x]\nurl = "https://h/x"\nbranch = "main\\n"\n', ["status"], 3, "control"),
    "NUL in setup path": (
        f'version = 1\n[setup.s]\nurl = "https://h/s"\ncommit = "{SHA}"\npath = "tools/\\u0000s"\n',
        ["sync"],
        3,
        r"setup.s.path: 'tools/\\x00s' contains a control character",
    ),
    "newline in setup path": (
        f'version = 1\n[setup.s]\nurl = "https://h/s"\ncommit = "{SHA}"\npath = "tools/s\\n"\n',
        ["sync"],
        3,
        "setup.s.path: .* contains a control character",
    ),
    "newline in a config path": (
        f'version = 1\n{REPO}[sets.demo]\nconfigs = ["config/a.py\\n"]\n',
        ["status"],
        3,
        "sets.demo.configs: .* contains a control character",
    ),
    "NUL in files_to_checkout": (
        f'version = 1\n{REPO}[sets.demo]\nrc = {{ commit = "{SHA}", files_to_checkout = ["a\\u0000"] }}\n',
        ["status"],
        3,
        "sets.demo.rc.files_to_checkout: .* contains a control character",
    ),
    # "./" names the setup root like "."
    "checkout ./": (f'{GOOD}[repos.x]\nurl = "https://h/x"\ncheckout = "./"\n', ["status"], 3, "must stay inside"),
    "setup path ./": (
        f'version = 1\n[setup.s]\nurl = "https://h/s"\ncommit = "{SHA}"\npath = "./"\n',
        ["sync"],
        3,
        "setup.s.path: path './' must stay inside the setup",
    ),
    "setup path a/..": (
        f'version = 1\n[setup.s]\nurl = "https://h/s"\ncommit = "{SHA}"\npath = "a/.."\n',
        ["sync"],
        3,
        "must stay inside the setup",
    ),
    "config path ./": (f'version = 1\n{REPO}[sets.demo]\nconfigs = ["./"]\n', ["status"], 3, "must stay inside"),
    # revision syntax is not a branch
    "branch main~2": (f"{GOOD}[repos.x]\nurl = 'https://h/x'\nbranch = 'main~2'\n", ["status"], 3, "not a branch name"),
    "branch a..b": (f"{GOOD}[repos.x]\nurl = 'https://h/x'\nbranch = 'a..b'\n", ["status"], 3, "not a branch name"),
    "branch main^": (f"{GOOD}[repos.x]\nurl = 'https://h/x'\nbranch = 'main^'\n", ["status"], 3, "not a branch name"),
    "branch reflog": (f"{GOOD}[repos.x]\nurl = 'https://h/x'\nbranch = 'main@{{1}}'\n", ["status"], 3, "not a branch"),
    "branch like an option": (f"{GOOD}[repos.x]\nurl = 'https://h/x'\nbranch = '-f'\n", ["status"], 3, "not a branch"),
    "branch with a path": (f"{GOOD}[repos.x]\nurl = 'https://h/x'\nbranch = 'main:a'\n", ["status"], 3, "not a branch"),
    "branch x.lock": (f"{GOOD}[repos.x]\nurl = 'https://h/x'\nbranch = 'x.lock'\n", ["status"], 3, "not a branch"),
    "pin-table branch main~2": (
        f"version = 1\n{REPO}[sets.demo]\nrc = {{ commit = '{SHA}', branch = 'main~2' }}\n",
        ["status"],
        3,
        "sets.demo.rc.branch: 'main~2' is not a branch name",
    ),
    # one setup checkout inside another: the second clone would land in the first one's tree
    "nested setup paths": (
        f"version = 1\n[setup.a]\nurl = 'https://h/a'\ncommit = '{SHA}'\npath = 'recipe/i6_core'\n"
        f"[setup.b]\nurl = 'https://h/b'\ncommit = '{SHA}'\npath = 'recipe/i6_core/x'\n",
        ["sync"],
        3,
        r"setup.b.path: 'recipe/i6_core/x' nests with the path of setup.a \('recipe/i6_core'\)",
    ),
    "nested setup paths, outer second": (
        f"version = 1\n[setup.a]\nurl = 'https://h/a'\ncommit = '{SHA}'\npath = 'recipe/i6_core/x'\n"
        f"[setup.b]\nurl = 'https://h/b'\ncommit = '{SHA}'\npath = './recipe/i6_core'\n",
        ["sync"],
        3,
        "setup.b.path: './recipe/i6_core' nests with the path of setup.a",
    ),
    "two setup entries, one path": (
        f"version = 1\n[setup.a]\nurl = 'https://h/a'\ncommit = '{SHA}'\npath = 'tools/s'\n"
        f"[setup.b]\nurl = 'https://h/b'\ncommit = '{SHA}'\npath = 'tools/s/'\n",
        ["sync"],
        3,
        "setup.b.path: 'tools/s/' is the path of setup.a",
    ),
    # nothing a user can write makes pin crash (exit 70): each of these is one line with its documented code
    "pin.toml nested 3000 deep": (f"version = 1\nx = {'[' * 3000}{']' * 3000}\n", ["status"], 3, "nested too deeply"),
    "inline tables nested 3000 deep": (
        f"version = 1\nx = {'{a = ' * 3000}1{'}' * 3000}\n",
        ["status"],
        3,
        "pin.toml: invalid TOML: arrays or tables nested too deeply",
    ),
    "configs nested 3000 deep": (
        f"version = 1\n[sets.demo]\nconfigs = {'[' * 3000}{']' * 3000}\n",
        ["new", "x"],
        3,
        "nested too deeply",
    ),
    "version nested 200 deep": (
        f"version = {'[' * 200}1{']' * 200}\n",
        ["status"],
        3,
        r"pin.toml: version: unsupported version \[+\.\.\.\]+ \(this sispin reads 1\)",
    ),
    "checkout name longer than a file name": (
        f"{GOOD}[repos.x]\nurl = 'https://h/x'\ncheckout = '{'c' * 300}'\n",
        ["status"],
        3,
        "repos.x.checkout: checkout folder 'c+\\.\\.\\.' has a name longer than 255 bytes",
    ),
    "URL with a 300-character name, fetched": (
        f"version = 1\n[repos.rc]\nurl = 'file:///nonexistent/{'r' * 300}'\n[sets.demo]\nrc = '{SHA}'\n",
        ["status", "--fetch"],
        5,
        r"pin: error: rc: cannot fetch file:///nonexistent/r+: .* \(its rows show the store as last fetched\)",
    ),
    "--to=--": (GOOD, ["upgrade", "demo", "rc", "--to=--"], 2, "argument --to: expected a value, not '--'"),
    "--to=-- before the set": (GOOD, ["upgrade", "--to=--", "demo", "rc"], 2, "argument --to: expected a value"),
    "--from=--": (GOOD, ["new", "x", "--from=--"], 2, "argument --from: expected a value, not '--'"),
    "--set=--": (GOOD, ["import", ".", "--set=--"], 2, "argument --set: expected a value, not '--'"),
}


def assert_refused(argv: list, code: int, message: str, lock: Path, capsys, meanwhile: Callable = None) -> str:
    """
    Run pin with argv: exit code, exactly one error line matching message, no traceback, lockfile untouched (as
    meanwhile() says another process left it, when it changes while the command runs).
    """
    before = lock.read_bytes() if lock.exists() else None
    actual = main(argv)
    if meanwhile is not None:
        before = meanwhile()
    err = capsys.readouterr().err
    assert actual == code, err
    assert err.count("\n") == 1 and err.startswith("pin: error: "), err
    assert re.search(message, err), err
    assert "Traceback" not in err and "s3cr3t" not in err
    assert (lock.read_bytes() if lock.exists() else None) == before, "the lockfile is untouched"
    return err


@pytest.mark.parametrize("content, argv, code, message", CORPUS.values(), ids=list(CORPUS))
def test_bad_input_gives_one_line_and_a_documented_code(tmp_path, monkeypatch, capsys, content, argv, code, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PIN_HOME", str(tmp_path / "store"))
    lock = tmp_path / "pin.toml"
    if content is not None:
        lock.write_bytes(content if isinstance(content, bytes) else content.encode())
    assert_refused(argv, code, message, lock, capsys)


SETUP_S = f"version = 1\n[setup.s]\nurl = 'https://h/s'\ncommit = '{SHA}'\npath = 'recipe/s'\n"
CONFIG_X = f"version = 1\n{REPO}[sets.demo]\nconfigs = ['config/x.py']\nrc = '{SHA}'\n"
# what a config outside the setup does if anything runs it
ESCAPED_CONFIG = "open(__file__ + '.ran', 'w').close()\n"


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)


def _outside_config(root: Path) -> None:
    (root.parent / "outside" / "x.py").write_text(ESCAPED_CONFIG)
    _link(root / "config" / "x.py", root.parent / "outside" / "x.py")


def _outside_config_dir(root: Path) -> None:
    (root.parent / "outside" / "x.py").write_text(ESCAPED_CONFIG)
    _link(root / "config", root.parent / "outside")


def _file_as_parent(root: Path) -> None:
    (root / "recipe").write_text("a file where the checkout's parent directory belongs\n")


CHECK = ["check", "--offline"]


def _snapshot(content) -> Callable[[Path], None]:
    data = content if isinstance(content, bytes) else content.encode()
    return lambda root: (root / "pin.snapshot.toml").write_bytes(data)


def _journal(content: str) -> Callable[[Path], None]:
    return lambda root: (root / ".pin.journal.json").write_text(content)


# the setup on disk as a hostile user leaves it: (pin.toml, what is done to the setup, argv, exit code, error line)
DISK_CORPUS = {
    "setup path through a symlink out of the setup": (
        SETUP_S,
        lambda root: _link(root / "recipe", root.parent / "outside"),
        ["sync"],
        6,
        r"setup.s: recipe/s leads out of the setup through a symlink \(to .*outside/s\)",
    ),
    "setup path through a symlink to the root's parent": (
        SETUP_S,
        lambda root: _link(root / "recipe", Path("..")),
        ["sync"],
        6,
        "leads out of the setup through a symlink",
    ),
    "setup path that is a dangling symlink": (
        SETUP_S,
        lambda root: _link(root / "recipe" / "s", root.parent / "outside" / "gone"),
        ["sync"],
        6,
        r"recipe/s is a symlink to .*outside/gone, which does not exist",
    ),
    "setup path whose parent is a file": (
        SETUP_S,
        _file_as_parent,
        ["sync"],
        10,
        "recipe/s: cannot create the checkout",
    ),
    "config linked out of the setup": (
        CONFIG_X,
        _outside_config,
        ["snapshot", "demo"],
        9,
        "sets.demo.configs: config/x.py leads out of the setup through a symlink",
    ),
    "config directory linked out of the setup": (
        CONFIG_X,
        _outside_config_dir,
        ["snapshot", "demo"],
        9,
        "config/x.py leads out of the setup",
    ),
    # pin.snapshot.toml, as a hostile user leaves it
    "snapshot sets = 1": (
        GOOD,
        _snapshot("version = 1\nsets = 1\n"),
        CHECK,
        3,
        "pin.snapshot.toml: sets: must be a table",
    ),
    "snapshot set = 1": (GOOD, _snapshot("version = 1\n[sets]\ndemo = 1\n"), CHECK, 3, "sets.demo.outputs: missing"),
    "snapshot output job = 1": (
        GOOD,
        _snapshot("version = 1\n[sets.demo.outputs]\nx = { job = 1 }\n"),
        CHECK,
        3,
        "pin.snapshot.toml: sets.demo.outputs.x: needs a 'job' string",
    ),
    "snapshot bound value = 1": (
        GOOD,
        _snapshot("version = 1\n[sets.demo.outputs]\n[bound]\nLEGACY = 1\n"),
        CHECK,
        3,
        "pin.snapshot.toml: bound: must be a table of hash_overwrite value -> list of clones",
    ),
    "snapshot bound clone without a commit": (
        GOOD,
        _snapshot('version = 1\n[sets.demo.outputs]\n[bound]\nLEGACY = [{patches = ["x"]}]\n'),
        CHECK,
        3,
        "pin.snapshot.toml: bound: must be a table of hash_overwrite value -> list of clones",
    ),
    "snapshot output path = 1": (
        GOOD,
        _snapshot("version = 1\n[sets.demo.outputs]\n'demo/x' = { job = 'j', path = 1 }\n"),
        CHECK,
        3,
        "sets.demo.outputs.'demo/x': needs a 'job' string",
    ),
    "snapshot version '1'": (GOOD, _snapshot("version = '1'\n"), CHECK, 3, "pin.snapshot.toml: version: unsupported"),
    "snapshot without a version": (
        GOOD,
        _snapshot("[sets]\n"),
        CHECK,
        3,
        r"pin.snapshot.toml: version: missing \(this sispin reads version = 1\)$",
    ),
    "snapshot of a newer sispin": (
        GOOD,
        _snapshot("version = 2\n"),
        CHECK,
        3,
        r"pin.snapshot.toml: version: unsupported version 2 \(this sispin reads 1; a newer sispin wrote it: update",
    ),
    "snapshot nested 3000 deep": (
        GOOD,
        _snapshot(f"version = 1\nx = {'[' * 3000}{']' * 3000}\n"),
        CHECK,
        3,
        "pin.snapshot.toml: invalid TOML: arrays or tables nested too deeply",
    ),
    "snapshot not UTF-8": (
        GOOD,
        _snapshot(b"version = 1\n\xff\n"),
        CHECK,
        3,
        "pin.snapshot.toml: cannot read: not UTF-8",
    ),
    "snapshot is a directory": (
        GOOD,
        lambda root: (root / "pin.snapshot.toml").mkdir(),
        CHECK,
        3,
        "pin.snapshot.toml: cannot read: Is a directory",
    ),
    # the journal between pin.toml and its snapshot, as a hostile user leaves it
    "journal not JSON": (GOOD, _journal("{"), ["status"], 3, r"\.pin\.journal\.json: unreadable \(JSONDecodeError"),
    "journal without sets": (GOOD, _journal("{}"), ["status"], 3, r"\.pin\.journal\.json: unreadable \(KeyError"),
    "journal of the wrong shape": (
        GOOD,
        _journal('{"sets": {"demo": {"pins": {}, "entry": {"outputs": {"x": 1}}}}}'),
        ["check", "--offline"],
        3,
        r"unreadable \(LockfileError: .*sets\.demo\.outputs\.x: needs a 'job' string.*remove it, then run",
    ),
    "journal without pins": (
        GOOD,
        _journal('{"sets": {"demo": {"entry": {"outputs": {}}}}}'),
        ["check", "--offline"],
        3,
        r"\.pin\.journal\.json: unreadable \(KeyError: 'pins'\)",
    ),
    "journal with a number for a job": (
        GOOD,
        _journal('{"sets": {"demo": {"pins": {}, "entry": {"outputs": {"x": {"job": 1, "path": ""}}}}}}'),
        ["status"],
        3,
        "unreadable \\(LockfileError: .*needs a 'job' string",
    ),
    "journal is a directory": (
        GOOD,
        lambda root: (root / ".pin.journal.json").mkdir(),
        ["status"],
        3,
        "journal.json: unreadable .*Is a directory",
    ),
}


@pytest.mark.parametrize("content, prepare, argv, code, message", DISK_CORPUS.values(), ids=list(DISK_CORPUS))
def test_bad_disk_state_gives_one_line_and_a_documented_code(
    tmp_path, monkeypatch, capsys, content, prepare, argv, code, message
):
    root, outside = tmp_path / "setup", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "pin.toml").write_text(content)
    prepare(root)
    before = sorted(p.name for p in outside.iterdir())
    monkeypatch.chdir(root)
    monkeypatch.setenv("PIN_HOME", str(tmp_path / "store"))
    assert_refused(argv, code, message, root / "pin.toml", capsys)
    assert sorted(p.name for p in outside.iterdir()) == before, "nothing was written or run outside the setup"


# ref corpus against a real remote: (argv, exit code, what the error says)
REFS = {
    "option-like ref": (["upgrade", "demo", "rc", "--to=-x"], 5, "is not a tag, branch or commit SHA"),
    "range": (["upgrade", "demo", "rc", "--to", "main..v1"], 5, "is not a tag, branch or commit SHA"),
    "reflog syntax": (["upgrade", "demo", "rc", "--to", "main@{1}"], 5, "is not a tag, branch or commit SHA"),
    "path syntax": (["upgrade", "demo", "rc", "--to", "main:nn.py"], 5, "is not a tag, branch or commit SHA"),
    "empty ref": (["upgrade", "demo", "rc", "--to="], 5, "is not a tag, branch or commit SHA"),
    "space in ref": (["upgrade", "demo", "rc", "--to", "a b"], 5, "is not a tag, branch or commit SHA"),
    "unknown tag": (["upgrade", "demo", "rc", "--to", "v9"], 5, "no tag, branch or commit 'v9'"),
    "unknown SHA": (["upgrade", "demo", "rc", "--to", "deadbeef"], 5, "no tag, branch or commit 'deadbeef'"),
    "too short SHA": (["upgrade", "demo", "rc", "--to", "abc"], 5, "no tag, branch or commit 'abc'"),
    "a token given as a revision": (
        ["upgrade", "demo", "rc", "--to", "ghp_s3cr3tA1b2C3d4E5f6G7h8"],
        5,
        "no tag, branch or commit '***'",
    ),
    "tag with a trailing newline": (["upgrade", "demo", "rc", "--to", "v1\n"], 5, r"'v1\n' is not a tag"),
    "SHA prefix with a trailing newline": (["upgrade", "demo", "rc", "--to", "abcd\n"], 5, r"'abcd\n' is not a tag"),
}


@pytest.mark.parametrize("argv, code, message", REFS.values(), ids=list(REFS))
def test_bad_refs(history, capsys, argv, code, message):
    before = history.text()
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err and "s3cr3t" not in err
    assert history.text() == before


def test_debug_shows_the_traceback(write_lock):
    write_lock("version = 2\n")
    with pytest.raises(Exception, match="unsupported version"):
        main(["--debug", "status"])


def test_internal_errors_are_one_line_too(history, capsys, monkeypatch):
    import sispin.ops.status as status_module

    monkeypatch.setattr(status_module, "collect", lambda *a, **k: 1 / 0)
    assert main(["status"]) == 70
    err = capsys.readouterr().err
    assert err == "pin: internal error: ZeroDivisionError: division by zero (pin --debug shows the traceback)\n"


def test_no_shell_anywhere():
    sources = "".join(p.read_text() for p in (PROJECT_ROOT / "recipe" / "sispin").rglob("*.py"))
    assert "shell=True" not in sources and "os.system(" not in sources


def test_git_protocol_allow_list_holds_even_through_insteadof(write_lock, store_dir, monkeypatch, tmp_path, capsys):
    # a hostile git config rewrites an allowed URL to the ext:: helper, which would run a command
    marker = tmp_path / "pwned"
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", f"url.ext::sh -c touch% {marker}.insteadOf")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "https://example.org/")
    write_lock(f'version = 1\n[repos.rc]\nurl = "https://example.org/rc"\n[sets.demo]\nrc = "{SHA}"\n')
    assert main(["status", "--fetch"]) == 5
    assert "transport 'ext' not allowed" in capsys.readouterr().err
    assert not marker.exists()


@pytest.fixture
def hung_remote():
    """A git:// address on loopback that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    accepted = []
    stop = threading.Event()

    def serve():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(server.accept()[0])
            except OSError:
                pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"git://127.0.0.1:{server.getsockname()[1]}/repo"
    stop.set()
    thread.join(timeout=5)
    for connection in accepted:
        connection.close()
    server.close()


def test_a_hung_remote_times_out_and_leaves_the_lock(hung_remote, write_lock, store_dir, monkeypatch, capsys):
    monkeypatch.setattr(sispin_git, "INACTIVITY_TIMEOUT", 2.0)
    lock = write_lock(f'version = 1\n[repos.rc]\nurl = "{hung_remote}"\nbranch = "main"\n[sets.demo]\nrc = "{SHA}"\n')
    before = lock.read_text()
    started = time.monotonic()
    assert main(["upgrade", "demo"]) == 5
    assert time.monotonic() - started < 30
    assert f"cannot fetch {hung_remote}: no progress for 2 s" in capsys.readouterr().err
    assert lock.read_text() == before
    assert not list((store_dir / "mirrors").glob("*.git")), "no half-made mirror"


def test_a_force_pushed_pin_is_named_with_set_repo_commit_and_store(history, capsys):
    assert main(["status", "--fetch"]) == 0  # the store sees c[2] while it is on main
    git(history.remote, "reset", "-q", "--hard", history.c[1])
    git(history.remote, "reflog", "expire", "--expire=now", "--all")
    git(history.remote, "gc", "-q", "--prune=now")
    capsys.readouterr()
    assert main(["check", "other", "--offline"]) == 0  # offline: no commit check, and no configs: nothing to check
    assert main(["check", "other"]) == 1
    out = capsys.readouterr().out
    assert f"problem: sets.other.rc: commit {history.c[2]} is on no branch or tag of {history.url} any more" in out
    assert "the store still has it in" in out

    # a store that never saw it cannot make a checkout of it, and says which set and repository pin it
    history.lock.write_text(history.text().replace(history.c[2], history.c[3]))
    os.environ["PIN_HOME"] = str(history.lock.parent / "fresh-store")
    try:
        assert main(["sync", "other"]) == 5
    finally:
        os.environ["PIN_HOME"] = str(history.lock.parent.parent / "store")
    assert (
        f"sets.other.rc: commit {history.c[3]} does not exist in {history.url} (nor in the store)"
        in capsys.readouterr().err
    )


def big_remote(make_repo) -> tuple:
    """A remote large enough that cloning it takes a while (to be killed midway)."""
    remote = make_repo("big")
    lines = []
    for number in range(1500):
        lines += ["commit refs/heads/main", f"committer t <t@t> {1_600_000_000 + number} +0000", "data 1", "c"]
        for k in range(4):
            body = "".join(f"{number} {k} {j}\n" for j in range(200))
            lines += [f"M 644 inline d{(number + k) % 50}/f{(number * 7 + k) % 400}.txt", f"data {len(body)}", body]
    subprocess.run(["git", "fast-import", "--quiet"], cwd=remote, input="\n".join(lines) + "\n", text=True, check=True)
    git(remote, "reset", "-q", "--hard", "main")
    return remote, git(remote, "rev-parse", "HEAD")


def kill_when(process: subprocess.Popen, appears: Path, pattern: str, timeout: float = 60) -> bool:
    """SIGKILL process as soon as a path matching pattern appears under appears; False if it never did."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None:
        if appears.exists() and any(appears.glob(pattern)):
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=10)
            return True
        time.sleep(0.005)
    process.wait(timeout=timeout)
    return False


def test_a_killed_sync_is_recovered_by_the_next_run(make_repo, write_lock):
    remote, head = big_remote(make_repo)
    lock = write_lock(f'version = 1\n[setup.big]\nurl = "file://{remote}"\ncommit = "{head}"\npath = "tools/big"\n')
    process = subprocess.Popen(
        [sys.executable, "-m", "sispin", "sync"], cwd=lock.parent, start_new_session=True, stdout=subprocess.DEVNULL
    )
    killed = kill_when(process, lock.parent / "tools", ".big.pin-partial-*")
    target = lock.parent / "tools" / "big"
    assert killed, "the clone was killed midway"
    assert not target.exists(), "a killed sync leaves no checkout at the target"
    assert main(["sync"]) == 0
    assert git(target, "rev-parse", "HEAD") == head and git(target, "status", "--porcelain") == ""
    assert not list(target.parent.glob(".big.pin-partial-*"))


def test_a_killed_store_fetch_is_recovered_by_the_next_run(make_repo, write_lock, store_dir):
    remote, head = big_remote(make_repo)
    lock = write_lock(f'version = 1\n[repos.big]\nurl = "file://{remote}"\n[sets.demo]\nbig = "{head}"\n')
    process = subprocess.Popen(
        [sys.executable, "-m", "sispin", "status", "--fetch"],
        cwd=lock.parent,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
    )
    assert kill_when(process, store_dir / "mirrors", ".*.pin-partial-*"), "the fetch was killed midway"
    assert not list((store_dir / "mirrors").glob("*.git")), "no mirror is taken as made"
    assert main(["status", "--fetch"]) == 0
    assert main(["sync", "demo"]) == 0
    assert not list((store_dir / "mirrors").glob(".*.pin-partial-*"))


def test_ten_concurrent_writers_lose_no_update(history, make_repo):
    text = history.text()
    for number in range(5):
        text += f'\n[sets.s{number}]\nrc = "{history.c[0]}"\n'
    history.lock.write_text(text)
    env = {**os.environ, "PIN_LOCK": str(history.lock)}
    commands = [["upgrade", f"s{n}"] for n in range(5)] + [["new", f"n{n}"] for n in range(5)]
    started = time.monotonic()
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "sispin", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        for argv in commands
    ]
    results = [(p.wait(timeout=120), p.stderr.read().decode()) for p in processes]
    assert time.monotonic() - started < 120
    assert [code for code, _ in results] == [0] * 10, results
    lock = load_lockfile(history.lock)
    for n in range(5):
        assert lock.get_set(f"s{n}").pin("rc").commit == history.c[4]
        assert lock.get_set(f"n{n}").pin("rc").commit == history.c[4]
    assert lock.get_set("demo").pin("rc").commit == history.c[0], "untouched sets stay"
    assert "# keep this comment" in history.text()
    assert not [p for p in history.lock.parent.iterdir() if p.name.endswith(".tmp")]


def test_git_variables_of_a_caller_do_not_reach_sispins_git(history, make_repo, monkeypatch, capsys):
    # a git hook (where `pin check` is meant to run) exports these for the repository being committed to
    elsewhere = make_repo("elsewhere")
    git_commit(elsewhere, {"x": "x\n"})
    monkeypatch.setenv("GIT_DIR", str(elsewhere / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(elsewhere))
    monkeypatch.setenv("GIT_INDEX_FILE", str(elsewhere / ".git" / "index"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(elsewhere / ".git" / "objects"))
    assert main(["status", "--fetch"]) == 0
    out = capsys.readouterr().out
    assert "note:" not in out.replace("note: store", ""), out
    assert f"demo   rc    {history.c[0][:7]}" in out and "  4 (1 release)  " in out, out
    assert main(["sync", "demo"]) == 0
    assert main(["upgrade", "demo", "--dry-run"]) == 0
    assert f"rc  {history.c[0][:7]} -> {history.c[4][:7]}  (+4 commits)" in capsys.readouterr().out


def _during_fetch(monkeypatch, history, change: Callable[[], None]) -> None:
    """
    Run change right after the store fetched (the real fetch): what another process does meanwhile. The lockfile
    it leaves is what the refused command must leave (history.meanwhile).
    """
    real = Store.fetch
    left = []

    def fetch(self, url):
        mirror = real(self, url)
        change()
        left.append(history.lock.read_bytes() if history.lock.exists() else None)
        return mirror

    monkeypatch.setattr(Store, "fetch", fetch)
    history.meanwhile = lambda: left[-1]


def _read_only_lock(history, monkeypatch):
    history.lock.chmod(0o444)
    return ["upgrade", "demo"]


def _read_only_lock_new(history, monkeypatch):
    history.lock.chmod(0o444)
    return ["new", "fresh"]


def _read_only_lock_import(history, monkeypatch):
    history.lock.chmod(0o444)
    (history.lock.parent / "a.py").write_text(
        "from i6_core.tools.git import CloneGitRepositoryJob\n"
        f"CloneGitRepositoryJob('https://h/x', commit='{SHA}')\n"
    )
    return ["import", "a.py", "--set", "fresh", "--write"]


def _set_removed_meanwhile(history, monkeypatch):
    text = history.text()
    other = text[text.index("# the second set") :]
    _during_fetch(monkeypatch, history, lambda: history.lock.write_text(text.replace(other, "")))
    return ["upgrade", "other"]


def _pin_moved_meanwhile(history, monkeypatch):
    _during_fetch(
        monkeypatch, history, lambda: history.lock.write_text(history.text().replace(history.c[0], history.c[1]))
    )
    return ["upgrade", "demo"]


def _lock_deleted_meanwhile(history, monkeypatch):
    _during_fetch(monkeypatch, history, history.lock.unlink)
    return ["upgrade", "demo"]


def _lock_broken_meanwhile(history, monkeypatch):
    _during_fetch(monkeypatch, history, lambda: history.lock.write_text("version = 1\n[sets\n"))
    return ["upgrade", "demo"]


def _name_taken_meanwhile(history, monkeypatch):
    _during_fetch(monkeypatch, history, lambda: history.lock.write_text(history.text() + "\n[sets.fresh]\n"))
    return ["new", "fresh"]


def _sha_as_multiline_string_with_an_escape(history, monkeypatch):
    history.lock.write_text(history.text().replace(f'"{history.c[0]}"', f'"""\\\n    {history.c[0]}"""'))
    return ["upgrade", "demo"]


def _sha_with_a_unicode_escape(history, monkeypatch):
    history.lock.write_text(
        history.text().replace(f'"{history.c[0]}"', f'"\\u00{ord(history.c[0][0]):x}{history.c[0][1:]}"')
    )
    return ["upgrade", "demo"]


def _target_force_pushed_away(history, monkeypatch):
    assert main(["status", "--fetch"]) == 0  # the store sees c[3] while it is on main
    git(history.remote, "reset", "-q", "--hard", history.c[1])
    return ["upgrade", "demo", "rc", "--to", history.c[3][:10]]


# against a real remote (the `history` fixture): (what is done first, returning argv; exit code; the error line)
REMOTE_CORPUS = {
    "read-only pin.toml, upgrade": (_read_only_lock, 10, r"pin.toml is read-only \(mode 0444\): nothing written"),
    "read-only pin.toml, new": (_read_only_lock_new, 10, r"pin.toml is read-only \(mode 0444\)"),
    "read-only pin.toml, import --write": (_read_only_lock_import, 10, r"pin.toml is read-only \(mode 0444\)"),
    "set removed while upgrading": (
        _set_removed_meanwhile,
        11,
        "pin.toml: sets.other was removed by another process while this upgrade ran; nothing written",
    ),
    "pin moved while upgrading": (
        _pin_moved_meanwhile,
        11,
        r"sets.demo.rc changed to [0-9a-f]{7} by another process while this upgrade ran \(it planned .*\); nothing",
    ),
    "pin.toml deleted while upgrading": (_lock_deleted_meanwhile, 3, "pin.toml: no such file"),
    "pin.toml broken while upgrading": (_lock_broken_meanwhile, 3, "pin.toml: invalid TOML"),
    "set name taken while creating it": (
        _name_taken_meanwhile,
        11,
        "another process added experiment set 'fresh' while this command ran; nothing written",
    ),
    "SHA in a multi-line string with a line-ending backslash": (
        _sha_as_multiline_string_with_an_escape,
        3,
        r"pin.toml: line \d+: this change would rewrite existing text there, not only add lines or move a SHA",
    ),
    "SHA with a unicode escape": (_sha_with_a_unicode_escape, 3, r"pin.toml: line \d+: this change would rewrite"),
    "--to a commit force-pushed off the remote": (
        _target_force_pushed_away,
        8,
        r"rc [0-9a-f]{7} is on no branch or tag of the remote \(only the store still has it\).*--allow-unreachable",
    ),
}


@pytest.mark.parametrize("prepare, code, message", REMOTE_CORPUS.values(), ids=list(REMOTE_CORPUS))
def test_bad_state_against_a_remote_gives_one_line_and_a_documented_code(
    history, monkeypatch, capsys, prepare, code, message
):
    argv = prepare(history, monkeypatch)
    capsys.readouterr()
    mode = history.lock.stat().st_mode
    assert_refused(argv, code, message, history.lock, capsys, getattr(history, "meanwhile", None))
    if not hasattr(history, "meanwhile"):
        assert history.lock.stat().st_mode == mode, "the file keeps its mode"
    assert not [p.name for p in history.lock.parent.iterdir() if p.name.endswith(".tmp")]


def _without_root_override() -> None:
    """
    In a child process of root: drop the capabilities that let root write and read where file permissions forbid
    it, so that a read-only directory means to the test what it means to every other user.
    """
    libc = ctypes.CDLL(None, use_errno=True)
    for capability in (1, 2, 3):  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH, CAP_FOWNER
        if libc.prctl(24, capability, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP) failed")


def run_as_a_user(argv: list, cwd: Path) -> subprocess.CompletedProcess:
    """Run pin in a subprocess that file permissions bind (as a user; root without its override capabilities)."""
    return subprocess.run(
        [sys.executable, "-m", "sispin", *argv],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=_without_root_override if os.geteuid() == 0 else None,
    )


def _setup_read_only(history) -> list:
    history.lock.parent.chmod(0o555)
    return ["upgrade", "demo"]


def _setup_read_only_new(history) -> list:
    history.lock.parent.chmod(0o555)
    return ["new", "fresh"]


def _setup_read_only_import(history) -> list:
    (history.lock.parent / "a.py").write_text(
        "from i6_core.tools.git import CloneGitRepositoryJob\n"
        f"CloneGitRepositoryJob('https://h/x', commit='{SHA}')\n"
    )
    history.lock.parent.chmod(0o555)
    return ["import", "a.py", "--set", "fresh", "--write"]


def _setup_read_only_sync(history) -> list:
    history.lock.write_text(
        history.text() + f'\n[setup.rc]\nurl = "{history.url}"\ncommit = "{history.c[0]}"\npath = "tools/rc"\n'
    )
    history.lock.parent.chmod(0o555)
    return ["sync"]


def _store_read_only(history) -> list:
    history.lock.parent.parent.joinpath("store").mkdir(mode=0o555)
    return ["status", "--fetch"]


def _store_read_only_upgrade(history) -> list:
    history.lock.parent.parent.joinpath("store").mkdir(mode=0o555)
    return ["upgrade", "demo"]


def _lock_unreadable(history) -> list:
    history.lock.chmod(0o000)
    return ["status"]


def _snapshot_unreadable(history) -> list:
    (history.lock.parent / "pin.snapshot.toml").write_text("version = 1\n")
    (history.lock.parent / "pin.snapshot.toml").chmod(0o000)
    return ["check", "--offline"]


# file permissions that bind every user but root: run in a child process without root's override capabilities
USER_CORPUS = {
    "read-only setup directory, upgrade": (
        _setup_read_only,
        10,
        r"pin: error: pin.toml: its directory .*/setup is not writable, so it cannot be replaced safely: nothing",
    ),
    "read-only setup directory, new": (_setup_read_only_new, 10, "pin.toml: its directory .* is not writable"),
    "read-only setup directory, import --write": (
        _setup_read_only_import,
        10,
        "pin: error: pin.toml: its directory .* is not writable, so it cannot be replaced safely: nothing written",
    ),
    "read-only setup directory, sync": (
        _setup_read_only_sync,
        10,
        r"pin: error: .pin-sync: cannot take its lock .*/.pin-sync.lock: Permission denied; nothing written",
    ),
    "read-only store, status --fetch": (
        _store_read_only,
        10,
        r"pin: error: the store .*store cannot be written \(.*: Permission denied\); make it writable or set PIN_HOME",
    ),
    "read-only store, upgrade": (_store_read_only_upgrade, 10, "the store .* cannot be written"),
    "unreadable pin.toml": (_lock_unreadable, 3, "pin: error: pin.toml: cannot read: Permission denied"),
    "unreadable snapshot": (_snapshot_unreadable, 3, "pin.snapshot.toml: cannot read: Permission denied"),
}


@pytest.mark.parametrize("prepare, code, message", USER_CORPUS.values(), ids=list(USER_CORPUS))
def test_file_permissions_give_one_line_and_a_documented_code(history, prepare, code, message):
    argv = prepare(history)
    root = history.lock.parent
    try:
        before = history.lock.read_bytes() if history.lock.stat().st_mode & 0o444 else None
        result = run_as_a_user(argv, root)
    finally:
        root.chmod(0o755)
        history.lock.chmod(0o644)
        (root.parent / "store").chmod(0o755) if (root.parent / "store").exists() else None
    assert result.returncode == code, result.stderr
    assert result.stderr.count("\n") == 1 and re.search(message, result.stderr), result.stderr
    assert "Traceback" not in result.stderr
    if before is not None:
        assert history.lock.read_bytes() == before, "the lockfile is untouched"


def test_kills_between_the_writes_of_lock_and_snapshot_are_repaired(real_sisyphus, capsys):
    # the two telling moments of an upgrade whose snapshot moves with the lock: pin.toml written but the snapshot
    # not yet, and pin.toml half written; `python tests/fault_loop.py` runs every moment, and random ones, 50 times
    assert fault_loop.main(["--trials", "2"]) == 0
    out = capsys.readouterr().out
    assert "kill at after-rename 2: killed; pin: note: completed an interrupted change of sets.exp" in out
    assert "kill at before-rename 2: killed; pin: note: dropped the journal of an interrupted change of sets.exp" in out
    assert "0  trials whose pair the next command did not repair" in out


def test_a_malformed_snapshot_stops_an_upgrade_before_anything_is_written(real_sisyphus, tmp_path):
    setup = fault_loop.make(tmp_path)
    snapshot = setup.root / "pin.snapshot.toml"
    snapshot.write_text("version = 1\nsets = 1\n")
    before = {name: (setup.root / name).read_bytes() for name in ("pin.toml", "pin.snapshot.toml")}
    result = setup.pin("upgrade", "exp")
    assert result.returncode == 3 and result.stderr == "pin: error: pin.snapshot.toml: sets: must be a table\n"
    assert {name: (setup.root / name).read_bytes() for name in before} == before, "neither file was written"
    assert setup.leftovers() == []

    # with a good snapshot, `pin new` records the new set's outputs with the lock: `pin check` passes right away
    setup.restore()
    result = setup.pin("new", "fresh", "--from", "exp", "--configs", "config/fresh.py")
    assert result.returncode == 0, result.stderr
    assert "pin.snapshot.toml: recorded sets.fresh (1 output)" in result.stdout
    check = setup.pin("check", "--offline")
    assert check.returncode == 0 and check.stdout.splitlines()[0] == (
        "sets.plain: skipped (no configs: add one with `pin configs plain --add PATH`)"
    ), "the set without configs, which cannot have a snapshot, is skipped"


def test_ten_concurrent_upgrades_of_one_set_all_succeed(history):
    env = {**os.environ, "PIN_LOCK": str(history.lock)}
    expected = history.text().replace(history.c[0], history.c[4])
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "sispin", "upgrade", "demo"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(10)
    ]
    results = [(p.wait(timeout=120), p.stdout.read(), p.stderr.read()) for p in processes]
    assert [code for code, _, _ in results] == [0] * 10, results
    assert [err for _, _, err in results] == [""] * 10
    assert history.text() == expected, "one of them moved the pin; the others found it moved to their target"
    wrote = [out for _, out, _ in results if "pin.toml: updated sets.demo" in out]
    assert len(wrote) == 1, results
    for _, out, _ in results:
        if out not in wrote:
            assert "already up to date" in out or "another process moved sets.demo.rc to" in out, out


def test_an_existing_checkout_behind_a_symlink_is_verified_not_refused(make_repo, write_lock, tmp_path, capsys):
    remote = make_repo("tool")
    head = git_commit(remote, {"tool.py": "TOOL = 1\n"})
    outside = tmp_path / "shared-checkouts" / "tool"
    git(tmp_path, "clone", "-q", str(remote), str(outside))
    lock = write_lock(f'version = 1\n[setup.tool]\nurl = "file://{remote}"\ncommit = "{head}"\npath = "tools/tool"\n')
    (lock.parent / "tools").mkdir()
    (lock.parent / "tools" / "tool").symlink_to(outside)
    assert main(["sync"]) == 0, "a link to a checkout somebody made is the setup's choice: only read"
    assert capsys.readouterr().out.split()[-1] == "ok"
