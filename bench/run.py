"""
sispin's benchmarks, each measured side by side with the plain way in one run; prints every ratio next to its goal.

    python bench/run.py

Run it from the setup root after ``pip install -e ".[setup]"`` and ``pin sync`` (the manager benchmark needs the
setup's Sisyphus and i6_core, and says so when they are missing). Times are medians of several runs. Everything
is built in a temporary directory; nothing here touches the network. Exit code 1 when a goal is missed.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, List, Optional

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@sispin.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@sispin.invalid",
}


@dataclass
class Result:
    """One line of the report: what sispin took, what the plain way took, and the goal."""

    name: str
    measured: str
    baseline: str
    ratio: str
    goal: str
    met: Optional[bool]


def median_seconds(action: Callable[[], object], runs: int) -> float:
    """:return: the median wall time of runs calls of action"""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def git(cwd: Path, *args: str, env: Optional[dict] = None) -> str:
    result = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **_GIT_ENV, **(env or {})}, check=True, capture_output=True
    )
    return result.stdout.decode().strip()


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {key: os.environ.get(key) for key in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def lock_text(sets: int, repos: int, sha: Callable[[int, int], str], url: Callable[[int], str]) -> str:
    lines = ["version = 1", ""]
    for r in range(repos):
        lines += [f"[repos.repo{r}]", f'url = "{url(r)}"', 'branch = "main"', f'checkout = "repo{r}"', ""]
    for s in range(sets):
        lines += [f"[sets.set{s}]", f'configs = ["config/set{s}.py"]']
        lines += [f'repo{r} = "{sha(s, r)}"' for r in range(repos)]
        lines.append("")
    return "\n".join(lines)


def bench_lockfile_load(sets: int = 200, repos: int = 5, runs: int = 20) -> Result:
    """Parse + validate a lockfile of sets x repos against a raw tomllib parse of the same text."""
    from sispin.lockfile import parse_lockfile

    text = lock_text(sets, repos, lambda s, r: f"{(s * 7919 + r) % 16**40:040x}", lambda r: f"https://h/r{r}")
    path = Path("pin.toml").absolute()
    ours = median_seconds(lambda: parse_lockfile(text, path), runs)
    raw = median_seconds(lambda: tomllib.loads(text), runs)
    ratio = ours / raw
    return Result(
        f"lockfile load: {sets} sets x {repos} repos", _ms(ours), _ms(raw), f"{ratio:.2f}x", "<= 2x", ratio <= 2
    )


def make_history(repo: Path, commits: int, files: int, changes_per_commit: int) -> None:
    """A repository with many commits and files, written by git fast-import (deterministic content)."""
    git(repo.parent, "init", "-q", "-b", "main", str(repo))
    stream = io.StringIO()
    content = {}
    for number in range(commits):
        stream.write(
            f"commit refs/heads/main\ncommitter b <b@b> {1_600_000_000 + number} +0000\ndata 12\ncommit {number:05d}\n"
        )
        touched = range(files) if number == 0 else [(number * 31 + k * 97) % files for k in range(changes_per_commit)]
        for index in touched:
            content[index] = "".join(f"line {index} {number} {j} {(index * number + j) % 9973}\n" for j in range(40))
            data = content[index].encode()
            stream.write(f"M 644 inline src/module_{index // 100}/file_{index}.py\ndata {len(data)}\n")
            stream.write(content[index] + "\n")
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, input=stream.getvalue().encode(), check=True)
    git(repo, "reset", "-q", "--hard", "main")
    git(repo, "gc", "-q")  # remotes are packed


def tree_disk_bytes(path: Path) -> int:
    """Disk blocks of a checkout's working tree (without .git)."""
    total = 0
    for directory, subdirectories, names in os.walk(path):
        if ".git" in subdirectories:
            subdirectories.remove(".git")
        total += sum(os.lstat(os.path.join(directory, name)).st_blocks * 512 for name in names)
    return total


def unique_disk_bytes(path: Path, shared_with: Path) -> int:
    """Disk blocks of the files under path, except those hardlinked to files under shared_with."""
    shared = {os.lstat(os.path.join(d, n)).st_ino for d, _, names in os.walk(shared_with) for n in names}
    total = 0
    for directory, _, names in os.walk(path):
        for name in names:
            info = os.lstat(os.path.join(directory, name))
            if info.st_ino not in shared:
                total += info.st_blocks * 512
    return total


def bench_checkout(work: Path, commits: int = 12000, files: int = 600, runs: int = 3) -> List[Result]:
    """A pinned checkout as CloneGitRepositoryJob makes it: through the store's mirror vs a full file:// clone."""
    from sispin.settings_hook import use_store_mirrors
    from sispin.store import Store

    remote = work / "remote" / "big"
    remote.parent.mkdir(parents=True)
    make_history(remote, commits, files, changes_per_commit=8)
    url = f"file://{remote}"
    pinned = git(remote, "rev-parse", "HEAD~10")
    (work / "setup").mkdir()
    lock = work / "setup" / "pin.toml"
    lock.write_text(lock_text(1, 1, lambda s, r: pinned, lambda r: url))
    with environment(PIN_HOME=str(work / "store"), PIN_LOCK=str(lock)):
        Store().fetch(url)
        from sispin import sets

        sets._load.cache_clear()
        redirect = use_store_mirrors()
    plain_env = {k: "" for k in redirect if k.startswith("GIT_CONFIG_K") or k.startswith("GIT_CONFIG_V")}
    plain_env["GIT_CONFIG_COUNT"] = "0"
    counter = iter(range(10**6))

    def clone(env: dict) -> Path:
        target = work / "checkouts" / f"c{next(counter)}"
        git(work, "clone", "-q", url, str(target), env=env)  # what CloneGitRepositoryJob.run does
        git(target, "checkout", "-q", pinned)
        return target

    def timed_clone(env: dict) -> float:
        shutil.rmtree(work / "checkouts", ignore_errors=True)
        (work / "checkouts").mkdir()
        os.sync()  # write-back of the previous run's files must not be billed to this one
        return median_seconds(lambda: clone(env), 1)

    store_times, plain_times = [], []
    for _ in range(runs):  # interleaved, so drift in the machine's speed hits both alike
        store_times.append(timed_clone(redirect))
        plain_times.append(timed_clone(plain_env))
    through_store, plain = statistics.median(store_times), statistics.median(plain_times)
    second = clone(redirect)
    mirror = Store(work / "store").mirror_path(url)
    tree = tree_disk_bytes(second)
    disk = unique_disk_bytes(second, mirror)
    speedup = plain / through_store
    history = f"{commits} commits, {files} files"
    return [
        Result(
            f"pinned checkout ({history}): store vs full clone",
            _s(through_store),
            _s(plain),
            f"{speedup:.1f}x faster",
            ">= 10x faster",
            speedup >= 10,
        ),
        Result(
            "disk of a second checkout vs its tree",
            _mb(disk),
            _mb(tree),
            f"{disk / tree:.2f}x",
            "<= 1.2x",
            disk / tree <= 1.2,
        ),
    ]


def bench_status(work: Path, sets: int = 50, repos: int = 5, commits: int = 300, runs: int = 5) -> Result:
    """``pin status`` over many sets, offline, reading fetched mirrors."""
    from sispin.cli.main import main
    from sispin.store import Store

    heads = []
    for r in range(repos):
        remote = work / "remotes" / f"r{r}"
        remote.parent.mkdir(parents=True, exist_ok=True)
        make_history(remote, commits, files=20, changes_per_commit=1)
        heads.append(git(remote, "rev-list", "main").split())
    lock = work / "pin.toml"
    lock.write_text(
        lock_text(sets, repos, lambda s, r: heads[r][(s * 13 + r) % commits], lambda r: f"file://{work}/remotes/r{r}")
    )
    with environment(PIN_HOME=str(work / "store"), PIN_LOCK=str(lock)):
        for r in range(repos):
            Store().fetch(f"file://{work}/remotes/r{r}")
        with contextlib.redirect_stdout(io.StringIO()):
            seconds = median_seconds(lambda: main(["status"]), runs)
    return Result(f"pin status: {sets} sets x {repos} repos, offline", _s(seconds), "-", "-", "< 0.5 s", seconds < 0.5)


def bench_manager_overhead(work: Path, calls: int = 1000, runs: int = 7) -> Result:
    """``exp.repo()`` against the hand-written CloneGitRepositoryJob call, in the manager's hot path."""
    sisyphus = ROOT / "tools" / "sisyphus"
    if not (sisyphus / "sisyphus" / "toolkit.py").is_file() or not (ROOT / "recipe" / "i6_core").is_dir():
        return Result(f"manager: {calls} exp.repo() vs hand-written", "-", "-", "-", "<= 1.10x", None)
    sys.path[:0] = [str(sisyphus), str(ROOT / "recipe")]
    cwd = os.getcwd()
    os.chdir(work)  # Sisyphus runs ./settings.py on import: there is none here
    try:
        from i6_core.tools.git import CloneGitRepositoryJob
    finally:
        os.chdir(cwd)
    from sispin.lockfile import parse_lockfile
    from sispin.sets import ExperimentSet

    repos = 10
    text = lock_text(1, repos, lambda s, r: f"{r + 1:040x}", lambda r: f"https://github.com/rwth-i6/repo{r}")
    exp = ExperimentSet(parse_lockfile(text, work / "pin.toml"), "set0")
    names = [f"repo{i % repos}" for i in range(calls)]
    arguments = [
        (f"https://github.com/rwth-i6/repo{i % repos}", f"{i % repos + 1:040x}", f"repo{i % repos}")
        for i in range(calls)
    ]

    def pinned() -> list:
        return [exp.repo(name) for name in names]

    def by_hand() -> list:
        return [CloneGitRepositoryJob(url, commit=c, checkout_folder_name=f).out_repository for url, c, f in arguments]

    pinned(), by_hand()  # both create the same jobs once; what repeats in a manager is the lookup
    ours, theirs = [], []
    for _ in range(runs):  # interleaved, so drift in the machine's speed hits both alike
        ours.append(median_seconds(pinned, 1))
        theirs.append(median_seconds(by_hand, 1))
    ratio = statistics.median(ours) / statistics.median(theirs)
    return Result(
        f"manager: {calls} exp.repo() vs hand-written",
        _ms(statistics.median(ours)),
        _ms(statistics.median(theirs)),
        f"{ratio:.2f}x",
        "<= 1.10x",
        ratio <= 1.10,
    )


def bench_import_scan(work: Path, files: int = 10_000, runs: int = 3) -> Result:
    """``pin import`` over a recipe tree: a static scan of every file."""
    from sispin.scan import scan_paths

    body = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(30))
    for number in range(files):
        package = work / "tree" / f"pkg{number // 500}"
        package.mkdir(parents=True, exist_ok=True)
        call = ""
        if number % 100 == 0:
            call = (
                "from i6_core.tools.git import CloneGitRepositoryJob\n"
                f"job = CloneGitRepositoryJob('https://github.com/rwth-i6/returnn', commit='{number:040x}')\n"
            )
        (package / f"module_{number}.py").write_text(f'"""module {number}"""\nimport os\n\n{call}{body}')
    found = []
    seconds = median_seconds(lambda: found.append(len(scan_paths([work / "tree"])[0])), runs)
    assert found[-1] == files // 100
    read_all = median_seconds(lambda: [p.read_bytes() for p in (work / "tree").rglob("*.py")], runs)
    return Result(
        f"pin import scan: {files} files",
        _s(seconds),
        f"{_s(read_all)} (read only)",
        f"{seconds / read_all:.1f}x",
        "< 10 s",
        seconds < 10,
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _s(seconds: float) -> str:
    return f"{seconds:.3f} s"


def _mb(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


def main() -> int:
    """Run every benchmark and print the report."""
    results: List[Result] = []
    with tempfile.TemporaryDirectory(prefix="sispin-bench-") as scratch:
        work = Path(scratch)
        for name, bench in (
            ("manager", lambda: [bench_manager_overhead(work / "manager")]),
            ("lockfile", lambda: [bench_lockfile_load()]),
            ("checkout", lambda: bench_checkout(work / "checkout")),
            ("status", lambda: [bench_status(work / "status")]),
            ("import", lambda: [bench_import_scan(work / "import")]),
        ):
            (work / name).mkdir()
            start = time.perf_counter()
            results += bench()
            print(f"  ({name}: {time.perf_counter() - start:.0f} s)", file=sys.stderr)
    columns = ("benchmark", "sispin", "plain way", "ratio", "goal", "met")
    rows = [columns] + [
        (r.name, r.measured, r.baseline, r.ratio, r.goal, {True: "yes", False: "NO", None: "skipped"}[r.met])
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    if any(r.met is None for r in results):
        print("skipped: the manager benchmark needs the setup's Sisyphus and i6_core (run `pin sync`)")
    return 1 if any(r.met is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
