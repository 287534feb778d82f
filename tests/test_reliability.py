"""
Reliability and security: a corpus of bad input (each one error line, a documented exit code, no traceback, the
lockfile untouched), hostile URLs and refs, hung and vanished remotes, killed runs, and concurrent writers.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT, git, git_commit
from sispin import git as sispin_git
from sispin.cli.main import main
from sispin.lockfile import load_lockfile

SHA = "f7ad63a588359543e7882db517a5eb7fd99ec670"
REPO = '[repos.rc]\nurl = "https://github.com/rwth-i6/returnn_common"\n'
SET = f'[sets.demo]\nrc = "{SHA}"\n'
GOOD = f"version = 1\n{REPO}{SET}"

# (lockfile content or None for no lockfile, argv, exit code, what the one error line says)
CORPUS = {
    # pin.toml content
    "invalid TOML": ("version = 1\n[repos.rc\n", ["status"], 3, r"pin.toml: invalid TOML: .*line 2"),
    "empty file": ("", ["status"], 3, "pin.toml: version: missing"),
    "unknown version": ("version = 2\n", ["status"], 3, "pin.toml: version: unsupported version 2"),
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
        "sets.demo.rc.patches: must be a array of strings",
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
    "unknown command": (GOOD, ["frobnicate"], 2, "invalid choice: 'frobnicate'"),
    "unknown option": (GOOD, ["status", "--colour"], 2, "unrecognized arguments: --colour"),
    "upgrade without a set": (GOOD, ["upgrade"], 2, "the following arguments are required: SET"),
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
}


@pytest.mark.parametrize("content, argv, code, message", CORPUS.values(), ids=list(CORPUS))
def test_bad_input_gives_one_line_and_a_documented_code(tmp_path, monkeypatch, capsys, content, argv, code, message):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIN_LOCK", raising=False)
    monkeypatch.setenv("PIN_HOME", str(tmp_path / "store"))
    lock = tmp_path / "pin.toml"
    if content is not None:
        lock.write_bytes(content if isinstance(content, bytes) else content.encode())
    before = lock.read_bytes() if lock.exists() else None
    actual = main(argv)
    err = capsys.readouterr().err
    assert actual == code, err
    assert err.count("\n") == 1 and err.startswith("pin: error: "), err
    assert re.search(message, err), err
    assert "Traceback" not in err and "s3cr3t" not in err
    assert (lock.read_bytes() if lock.exists() else None) == before, "the lockfile is untouched"


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
}


@pytest.mark.parametrize("argv, code, message", REFS.values(), ids=list(REFS))
def test_bad_refs(history, capsys, argv, code, message):
    before = history.text()
    assert main(argv) == code
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and "Traceback" not in err
    assert history.text() == before


def test_debug_shows_the_traceback(write_lock):
    write_lock("version = 2\n")
    with pytest.raises(Exception, match="unsupported version"):
        main(["--debug", "status"])


def test_internal_errors_are_one_line_too(history, capsys, monkeypatch):
    import sispin.cli.status as status_module

    monkeypatch.setattr(status_module, "collect", lambda *a, **k: 1 / 0)
    assert main(["status"]) == 70
    err = capsys.readouterr().err
    assert err == "pin: internal error: ZeroDivisionError: division by zero (pin --debug shows the traceback)\n"


def test_no_shell_anywhere():
    sources = "".join(p.read_text() for p in (PROJECT_ROOT / "recipe" / "sispin").rglob("*.py"))
    assert "shell=True" not in sources and "os.system" not in sources


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
    assert main(["check", "other", "--offline"]) == 1  # offline: no commit check, but the graph part fails
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
    assert f"demo   rc    {history.c[0][:7]}" in out and "  4  " in out, out
    assert main(["sync", "demo"]) == 0
    assert main(["upgrade", "demo", "--dry-run"]) == 0
    assert f"rc  {history.c[0][:7]} -> {history.c[4][:7]}  (+4 commits)" in capsys.readouterr().out
