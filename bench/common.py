"""What the benchmarks share: the report row, timing, git, generated lockfiles and repositories."""

from __future__ import annotations

import contextlib
import io
import os
import resource
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
RECIPE = ROOT / "recipe"
SISYPHUS = ROOT / "tools" / "sisyphus"
_GIT_ENV = {
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@sispin.invalid",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@sispin.invalid",
}


@dataclass(frozen=True)
class Goal:
    """
    What sispin promises about one figure of a row.

    :param text: how the report writes it, e.g. ``<= 1.5x``
    :param limit: the figure's bound, in the figure's own unit (a ratio, seconds)
    :param at_most: the figure must stay at or below the limit (else at or above it)
    """

    text: str
    limit: float
    at_most: bool = True

    def met(self, figure: float) -> bool:
        """:return: whether a measured figure keeps the promise"""
        return figure <= self.limit if self.at_most else figure >= self.limit


@dataclass
class Result:
    """
    One line of the report.

    :param name: what was measured, and how
    :param measured: sispin's figure
    :param baseline: the plain way's figure ("-" when there is none)
    :param ratio: how they compare
    :param goal: what sispin promises about ``figure`` (None for a row that only informs)
    :param figure: the number the goal is about (None when the row has no goal or could not run)
    :param skipped: why the row could not run ("" when it ran)
    """

    name: str
    measured: str
    baseline: str
    ratio: str
    goal: Optional[Goal] = None
    figure: Optional[float] = None
    skipped: str = ""

    @property
    def met(self) -> Optional[bool]:
        """Whether the goal was met; None when the row has no goal or could not run."""
        return None if self.goal is None or self.figure is None else self.goal.met(self.figure)


def timed(action: Callable[[], object]) -> float:
    """:return: the wall time of one call of action, in seconds"""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def interleaved(sides: Sequence[Callable[[], float]], runs: int) -> List[float]:
    """
    Alternate measurements, so that drift in the machine's speed hits every side alike; every other round runs the
    sides in reverse order, so that no side always runs right after the same other one.

    :param sides: one run of each side (sispin's, the plain way's), returning its seconds
    :param runs: runs of each side
    :return: the median seconds of each side, in order
    """
    times: List[List[float]] = [[] for _ in sides]
    for round_ in range(runs):
        order = range(len(sides)) if round_ % 2 == 0 else reversed(range(len(sides)))
        for index in order:
            times[index].append(sides[index]())
    return [statistics.median(t) for t in times]


def dated_back(root: Path, seconds: float = 60) -> None:
    """
    Date every file and directory below root back (links themselves, not what they point to): a check keeps no pass
    that read a file written in the last two seconds, which may still change, so a setup made just now is dated back
    before its passes are timed.
    """
    past = time.time() - seconds
    for directory, directories, files in os.walk(root):
        for name in files + directories:  # symlinks to directories too, which walk does not enter
            os.utime(os.path.join(directory, name), (past, past), follow_symlinks=False)
        os.utime(directory, (past, past))


def git(cwd: Path, *args: str, env: Optional[Dict[str, str]] = None) -> str:
    """Run git in cwd with a fixed identity; :return: its stripped stdout"""
    result = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **_GIT_ENV, **(env or {})}, check=True, capture_output=True
    )
    return result.stdout.decode().strip()


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    """Set environment variables for the block; after it, the environment is again what it was before it."""
    saved = dict(os.environ)
    os.environ.update(values)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def python(
    arguments: Sequence[str], cwd: Path, pycache: Path, env: Optional[Dict[str, str]] = None, exit_code: int = 0
) -> str:
    """
    Run this interpreter in a fresh process, as a user's command starts: this checkout's sispin first on the path,
    no lockfile named by the environment, and bytecode cached as Python does by default, only in another place (so
    that no checkout gets a __pycache__ of ours).

    :param pycache: where the bytecode cache goes (``PYTHONPYCACHEPREFIX``)
    :param env: more environment variables
    :param exit_code: the exit code it must end with (a command that finds a problem exits 1)
    :return: its stdout
    """
    environ = {k: v for k, v in os.environ.items() if k not in ("PIN_LOCK", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    environ.update(PYTHONPATH=str(RECIPE), PYTHONPYCACHEPREFIX=str(pycache), **(env or {}))
    result = subprocess.run([sys.executable, *arguments], cwd=cwd, env=environ, check=False, capture_output=True)
    if result.returncode != exit_code:
        said = result.stderr.decode()
        raise RuntimeError(f"{' '.join(arguments)}: exit {result.returncode}, not {exit_code}: {said}")
    return result.stdout.decode()


def child_cpu(action: Callable[[], object]) -> float:
    """:return: the CPU seconds (user and system) of the processes action started and waited for"""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    action()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def lock_text(sets: int, repos: int, sha: Callable[[int, int], str], url: Callable[[int], str]) -> str:
    """A pin.toml of sets x repos, every set with a configs list: set{s} pins repo{r} at sha(s, r)."""
    lines = ["version = 1", ""]
    for r in range(repos):
        lines += [f"[repos.repo{r}]", f'url = "{url(r)}"', 'branch = "main"', f'checkout = "repo{r}"', ""]
    for s in range(sets):
        lines += [f"[sets.set{s}]", f'configs = ["config/set{s}.py"]']
        lines += [f'repo{r} = "{sha(s, r)}"' for r in range(repos)]
        lines.append("")
    return "\n".join(lines)


def make_history(repo: Path, commits: int, files: int, changes_per_commit: int) -> None:
    """A repository with many commits and files, written by git fast-import (deterministic content), packed."""
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


def ms(seconds: float) -> str:
    """:return: seconds as milliseconds, for the report"""
    return f"{seconds * 1000:.1f} ms"


def s(seconds: float) -> str:
    """:return: seconds, for the report"""
    return f"{seconds:.3f} s"


def mib(size: int) -> str:
    """:return: bytes as MiB, for the report"""
    return f"{size / 2**20:.1f} MiB"
