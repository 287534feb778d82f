"""
One module starts every git process (sispin.git.process), and sispin never writes os.environ for git: the package's
source is scanned for process starts and GitPython, and every kind of git command (reads, writes, clones, fetches side
by side, remote queries) runs while a git hook's variables point at another repository and os.environ is watched.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
from pathlib import Path
from typing import Dict, Iterator, List, Tuple

import pytest

from conftest import RECIPE_DIR, git, git_commit
from sispin.git.merge import merge_lines
from sispin.git.presence import missing_commits
from sispin.git.process import environment, read_git
from sispin.git.repo import checkout_origin, clone_at_commit
from sispin.git.setup_history import check_committable, commit_files, export_setup
from sispin.git.store import Store
from sispin.git.verify import verify_checkout

PACKAGE = RECIPE_DIR / "sispin"
#: the one module that starts git
RUNNER = PACKAGE / "git" / "process.py"

#: functions that start a process, by module; os's exec*, spawn* and posix_spawn* families count whole
_STARTS = {
    "subprocess": {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput"},
    "os": {"system", "popen", "fork", "forkpty"},
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "pty": {"spawn"},
}
_OS_FAMILIES = ("exec", "spawn", "posix_spawn")


def _starts_a_process(module: str, name: str) -> bool:
    return name in _STARTS.get(module, ()) or (module == "os" and name.startswith(_OS_FAMILIES))


def process_starts(tree: ast.AST) -> List[Tuple[int, str]]:
    """:return: (line, what) of every call in the source that starts a process, through any import spelling"""
    modules: Dict[str, str] = {}
    functions: Dict[str, Tuple[str, str]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                modules[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                functions[alias.asname or alias.name] = (node.module, alias.name)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in modules:
            target = (modules[func.value.id], func.attr)
        elif isinstance(func, ast.Name) and func.id in functions:
            target = functions[func.id]
        else:
            continue
        if _starts_a_process(*target):
            found.append((node.lineno, ".".join(target)))
    return found


def gitpython_imports(tree: ast.AST) -> List[int]:
    """:return: the lines that import GitPython (top-level package ``git``)"""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "git" for alias in node.names):
            lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "git":
            lines.append(node.lineno)
    return lines


def names_git(tree: ast.AST) -> bool:
    """:return: whether the source holds a string that could name the git program (``git``, ``/usr/bin/git``, ...)"""
    return any(
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "git" or node.value.endswith("/git") or node.value.startswith("git "))
        for node in ast.walk(tree)
    )


def environ_writes(tree: ast.AST) -> List[int]:
    """:return: the lines that assign, delete or update an item of os.environ, or call os.putenv/os.unsetenv"""

    def is_environ(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and node.attr == "environ" and isinstance(node.value, ast.Name)

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            if any(isinstance(target, ast.Subscript) and is_environ(target.value) for target in targets):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            mutators = ("update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__")
            if (is_environ(node.func.value) and node.func.attr in mutators) or node.func.attr in ("putenv", "unsetenv"):
                lines.append(node.lineno)
    return lines


@functools.cache
def _modules() -> List[Tuple[Path, ast.AST]]:
    """:return: every module of the package, parsed"""
    return [(path, ast.parse(path.read_text(encoding="utf-8"), str(path))) for path in sorted(PACKAGE.rglob("*.py"))]


def test_only_the_runner_starts_git_and_nothing_imports_gitpython():
    offenders = []
    for path, tree in _modules():
        where = path.relative_to(RECIPE_DIR)
        offenders += [f"{where}:{line}: imports GitPython" for line in gitpython_imports(tree)]
        if path != RUNNER and names_git(tree):
            offenders += [f"{where}:{line}: {what} in a module that names git" for line, what in process_starts(tree)]
    assert offenders == [], "git starts in sispin.git.process only:\n" + "\n".join(offenders)
    runner = ast.parse(RUNNER.read_text(encoding="utf-8"))
    assert process_starts(runner) and names_git(runner), "the scan must see the runner's own process starts"


@pytest.mark.parametrize(
    "source",
    [
        "import subprocess\nsubprocess.run(['git', 'status'])\n",
        "from subprocess import Popen as P\nP(['/usr/bin/git', 'fetch'])\n",
        "import subprocess as sp\nsp.check_output('git log', shell=True)\n",
        "import os\nos.execvp('git', ['git', 'gc'])\n",
        "def f():\n    import os\n    os.posix_spawnp('git', ['git'], {})\n",
    ],
)
def test_the_scan_sees_every_spelling_of_starting_git(source):
    tree = ast.parse(source)
    assert process_starts(tree) and names_git(tree)


def test_the_scan_sees_gitpython_and_environment_writes():
    assert gitpython_imports(ast.parse("import git\nfrom git.exc import GitCommandError\n")) == [1, 2]
    assert gitpython_imports(ast.parse("from sispin import git\nfrom . import git\n")) == []
    writes = "import os\nos.environ['A'] = '1'\ndel os.environ['A']\nos.environ.update(A='1')\nos.putenv('A', '1')\n"
    assert environ_writes(ast.parse(writes)) == [2, 3, 4, 5]
    assert environ_writes(ast.parse("import os\nenv = {**os.environ}\nenv['A'] = '1'\nos.environ.get('A')\n")) == []


def test_the_git_code_never_writes_os_environ():
    offenders = [
        f"{path.relative_to(RECIPE_DIR)}:{line}"
        for path, tree in _modules()
        if path.parent == PACKAGE / "git"
        for line in environ_writes(tree)
    ]
    assert offenders == []


def test_the_environment_of_git_drops_the_callers_repository_and_keeps_the_users_settings(monkeypatch):
    for name, value in {
        "GIT_DIR": "/x/.git",
        "GIT_INDEX_FILE": "/x/.git/index",
        "GIT_WORK_TREE": "/x",
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": "url./m.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://example.org/r",
        "GIT_AUTHOR_NAME": "someone",
        "GIT_SSH_COMMAND": "ssh -i key",
        "GIT_TERMINAL_PROMPT": "1",
    }.items():
        monkeypatch.setenv(name, value)
    before = dict(os.environ)
    env = environment({"GIT_INDEX_FILE": "/scratch/index"})
    assert dict(os.environ) == before
    assert "GIT_DIR" not in env and "GIT_WORK_TREE" not in env
    assert env["GIT_INDEX_FILE"] == "/scratch/index", "sispin's own variables come after the caller's are dropped"
    assert env["GIT_CONFIG_KEY_0"] == "url./m.insteadOf" and env["GIT_AUTHOR_NAME"] == "someone"
    assert env["GIT_SSH_COMMAND"] == "ssh -i key" and env["GIT_TERMINAL_PROMPT"] == "0"
    assert env["PATH"] == os.environ["PATH"]


class _Watched(type(os.environ)):  # type: ignore[misc]
    """os.environ's class, recording every write to it (what each test here must not see)."""

    writes: List[str] = []

    def __setitem__(self, key: str, value: str) -> None:
        self.writes.append(f"set {key}")
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.writes.append(f"del {key}")
        super().__delitem__(key)


@contextlib.contextmanager
def watching_environ() -> Iterator[List[str]]:
    """:return: the writes to os.environ in the block (its class records them meanwhile)"""
    original, writes = type(os.environ), []
    _Watched.writes = writes
    os.environ.__class__ = _Watched
    try:
        yield writes
    finally:
        os.environ.__class__ = original


def _objects(repo: Path) -> List[str]:
    return sorted(str(path.relative_to(repo)) for path in (repo / ".git" / "objects").rglob("*"))


def test_a_git_hooks_variables_do_not_reach_git_and_os_environ_is_never_written(make_repo, tmp_path, monkeypatch):
    remotes = [make_repo(name) for name in ("a", "b")]
    commits = [[git_commit(remote, {"tool.py": f"VERSION = {n}\n"}) for n in range(2)] for remote in remotes]
    urls = [f"file://{remote}" for remote in remotes]
    setup = make_repo("setup")
    first = git_commit(setup, {"pin.toml": "version = 1\n", ".gitignore": "work/\n"})
    (setup / "pin.snapshot.toml").write_text("")  # not tracked: check_committable asks git whether it is ignored
    caller = make_repo("caller")
    caller_head = git_commit(caller, {"x": "x\n"})
    caller_index, caller_objects = (caller / ".git" / "index").read_bytes(), _objects(caller)
    # what git exports to a hook of the caller's repository (pin-check runs as one)
    monkeypatch.setenv("GIT_DIR", str(caller / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(caller))
    monkeypatch.setenv("GIT_INDEX_FILE", str(caller / ".git" / "index"))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(caller / ".git" / "objects"))
    before = dict(os.environ)

    with watching_environ() as writes:
        assert Path(read_git(setup, "rev-parse", "--absolute-git-dir")).resolve() == (setup / ".git").resolve()
        mirrors = Store(tmp_path / "store").fetch_all(urls)  # clones side by side, in threads
        assert Store(tmp_path / "store").fetch_all(urls) == mirrors  # fetches, and asks each remote for its HEAD
        assert missing_commits(mirrors[urls[0]], [commits[0][1], "0" * 40]) == ["0" * 40]
        checkout = tmp_path / "checkout" / "tool"
        clone_at_commit(urls[1], commits[1][0], checkout)
        verify_checkout(checkout, commits[1][0], "the checkout")
        assert checkout_origin(checkout) == (commits[1][0], urls[1])
        check_committable(setup, [setup / "pin.toml", setup / "pin.snapshot.toml"])
        (setup / "pin.toml").write_text("version = 1\n# edited\n")
        second = commit_files(setup, [setup / "pin.toml"], "pin: edited")
        (tmp_path / "export").mkdir()
        exported = export_setup(setup, "HEAD~1", tmp_path / "export")
        assert merge_lines("a\n", "a\nb\n", "a\n") == ("a\nb\n", True)
    assert writes == [] and dict(os.environ) == before

    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"):
        monkeypatch.delenv(name)
    assert git(setup, "rev-parse", "HEAD") == second and git(setup, "rev-parse", "HEAD~1") == first
    assert (exported / "pin.toml").read_text() == "version = 1\n"
    assert git(caller, "rev-parse", "HEAD") == caller_head and git(caller, "status", "--porcelain") == ""
    assert (caller / ".git" / "index").read_bytes() == caller_index and _objects(caller) == caller_objects
