"""
A pinned checkout as CloneGitRepositoryJob makes it (``git clone URL DIR``, then ``git checkout COMMIT``) with
settings.py's redirect to the store's mirror, against the same commands without it. The store is either cold (its
mirror is made first, inside the clock) or warm (fetched before the clock); the plain way clones the ``file://`` URL
(git's network transfer, as from a remote) or the repository's path (git's local clone, which hardlinks objects).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional

from bench.common import Goal, Result, environment, git, interleaved, lock_text, make_history, mib, s, timed


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


@contextlib.contextmanager
def _other_filesystem(work: Path) -> Iterator[Optional[Path]]:
    """A directory on another filesystem than work (tmpfs /dev/shm), or None when there is none."""
    shm = Path("/dev/shm")
    if not shm.is_dir() or not os.access(shm, os.W_OK) or shm.stat().st_dev == work.stat().st_dev:
        yield None
        return
    directory = Path(tempfile.mkdtemp(prefix="sispin-bench-", dir=shm))
    try:
        yield directory
    finally:
        shutil.rmtree(directory, ignore_errors=True)


class _Checkouts:
    """Makes checkouts of one pinned commit, each into a new directory under a root that is emptied per run."""

    def __init__(self, url: str, commit: str):
        self.url = url
        self.commit = commit
        self.count = 0

    def make(self, root: Path, env: Dict[str, str], source: Optional[str] = None) -> Path:
        """:param source: what to clone instead of the URL (a local path)"""
        self.count += 1
        target = root / f"c{self.count}"
        git(root, "clone", "-q", source or self.url, str(target), env=env)  # what CloneGitRepositoryJob.run does
        git(target, "checkout", "-q", self.commit)
        return target

    def timed(
        self,
        root: Path,
        env: Dict[str, str],
        source: Optional[str] = None,
        before: Optional[Callable[[], object]] = None,
    ) -> float:
        """:return: seconds of one checkout into an emptied root, after before() (timed with it)"""
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        os.sync()  # write-back of the previous run's files must not be billed to this one

        def run() -> None:
            if before is not None:
                before()
            self.make(root, env, source)

        return timed(run)


def bench_checkout(work: Path, commits: int = 12000, files: int = 600, runs: int = 3) -> List[Result]:
    """Every row of this module: cold and warm store against the plain ways, disk, another filesystem."""
    from sispin.git.store import Store
    from sispin.settings_hook import use_store_mirrors

    remote = work / "remote" / "big"
    remote.parent.mkdir(parents=True)
    make_history(remote, commits, files, changes_per_commit=8)
    url = f"file://{remote}"
    pinned = git(remote, "rev-parse", "HEAD~10")
    lock = work / "setup" / "pin.toml"
    lock.parent.mkdir()
    lock.write_text(lock_text(1, 1, lambda s, r: pinned, lambda r: url))
    store = Store(work / "store")
    with environment(PIN_HOME=str(store.directory), PIN_LOCK=str(lock)):
        store.fetch(url)
        redirect = use_store_mirrors()  # what settings.py gives every CloneGitRepositoryJob (it sets them here too)
    plain = {key: "" for key in redirect if key.startswith(("GIT_CONFIG_KEY", "GIT_CONFIG_VALUE"))}
    plain["GIT_CONFIG_COUNT"] = "0"
    checkouts = _Checkouts(url, pinned)
    root = work / "checkouts"

    def cold_checkout() -> float:
        shutil.rmtree(store.mirror_path(url))  # before the clock: the store has never seen the repository
        # inside the clock: the mirror is made (by a new Store: this one remembers that it fetched already)
        return checkouts.timed(root, redirect, before=lambda: Store(store.directory).fetch(url))

    cold, by_url = interleaved([cold_checkout, lambda: checkouts.timed(root, plain)], runs)
    # the local clones take a fraction of a second: more runs, for a median as steady as the slow ones'
    warm, by_path = interleaved(
        [lambda: checkouts.timed(root, redirect), lambda: checkouts.timed(root, plain, source=str(remote))], 3 * runs
    )
    second = checkouts.make(root, redirect)
    mirror = store.mirror_path(url)
    tree, disk = tree_disk_bytes(second), unique_disk_bytes(second, mirror)
    history = f"{commits:,} commits, {files} files"
    rows = [
        Result(
            f"pinned checkout ({history}), cold store (mirror made first) vs file:// clone",
            s(cold),
            s(by_url),
            f"{cold / by_url:.2f}x",
            Goal("<= 1.5x", 1.5),
            cold / by_url,
        ),
        Result(
            "pinned checkout, warm store vs clone of the local path: the same transfer (hardlinks)",
            s(warm),
            s(by_path),
            f"{warm / by_path:.2f}x",
            Goal("<= 1.25x", 1.25),
            warm / by_path,
        ),
        # not the same transfer (a local clone against git's pack transfer): what a job saves, with no goal
        Result(
            "pinned checkout, warm store vs the job's own file:// clone (another transfer: what a job saves)",
            s(warm),
            s(by_url),
            f"{by_url / warm:.1f}x faster",
        ),
        Result(
            "disk of a checkout, store and work/ on one filesystem, vs its tree",
            mib(disk),
            mib(tree),
            f"{disk / tree:.2f}x",
            Goal("<= 1.2x", 1.2),
            disk / tree,
        ),
    ]
    with _other_filesystem(work) as elsewhere:
        if elsewhere is None:
            skipped = "no second filesystem (/dev/shm) to measure it on"
            rows.append(Result("pinned checkout, store on another filesystem", "-", "-", "-", skipped=skipped))
            return rows
        away = elsewhere / "checkouts"
        across, across_by_url = interleaved(
            [lambda: checkouts.timed(away, redirect), lambda: checkouts.timed(away, plain)], runs
        )
        copied = checkouts.make(away, redirect)
        across_disk, across_tree = unique_disk_bytes(copied, mirror), tree_disk_bytes(copied)
    rows += [
        # the store's clone copies the objects across, the job's own clone transfers a pack: another transfer
        Result(
            "pinned checkout, warm store on another filesystem vs the job's own file:// clone there (another transfer)",
            s(across),
            s(across_by_url),
            f"{across_by_url / across:.1f}x faster",
        ),
        Result(
            "disk of a checkout, store on another filesystem (objects copied), vs its tree",
            mib(across_disk),
            mib(across_tree),
            f"{across_disk / across_tree:.2f}x",
        ),
    ]
    return rows
