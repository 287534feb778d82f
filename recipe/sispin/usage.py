"""
Who uses which commit: the pins of the lockfiles a store serves, the finished CloneGitRepositoryJobs in a setup's
work/ with the finished jobs built on them, and the registered outputs of pin.snapshot.toml among those.
``pin why`` asks it about a commit or a repository; ``pin gc`` keeps every store checkout that a user pins.

work/ is read as Sisyphus leaves it, without Sisyphus: a job is the first directory below work/ whose name has a dot
(``<module path>/<Class>.<hash>``: module path parts are identifiers); it is finished when it holds ``finished`` or
``finished.tar.gz``; its ``input/`` holds a link to each job whose outputs it uses; and the output of a
CloneGitRepositoryJob is a git checkout whose HEAD is the commit and whose ``origin`` is the url.
"""

from __future__ import annotations

__all__ = [
    "PinUse",
    "StoreUsers",
    "CloneRun",
    "Usage",
    "WorkDir",
    "pin_uses",
    "load_users",
    "target_matcher",
    "find_usages",
    "store_checkouts",
]

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from sispin import git
from sispin.clonejob import checkout_folder
from sispin.errors import CheckoutStateError, LockfileError, UnknownNameError
from sispin.graph import Output
from sispin.lockfile import Lockfile, display_path, load_lockfile
from sispin.registry import registered_lockfiles
from sispin.store import Store
from sispin.urls import name_from_url, same_repository

#: (url, commit) -> whether it is what was asked about
Matcher = Callable[[str, str], bool]

_HEX_RE = re.compile(r"^[0-9a-fA-F]{4,40}$")
_FULL_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_CLONE_JOB_PREFIX = "CloneGitRepositoryJob."
_FINISHED_MARKERS = ("finished", "finished.tar.gz")


@dataclass(frozen=True)
class PinUse:
    """
    One pin of one lockfile.

    :param lockfile: the pin.toml
    :param key: where in it, e.g. ``sets.demo.returnn_common`` or ``setup.i6_core``
    :param name: the repository's (or setup entry's) name in that lockfile
    :param url: repository URL
    :param commit: full commit SHA
    :param folder: the folder of its store checkout (None for ``[setup.*]``: the store holds none of those)
    """

    lockfile: Path
    key: str
    name: str
    url: str
    commit: str
    folder: Optional[str]


def pin_uses(lockfile: Lockfile) -> List[PinUse]:
    """:return: every pin of the lockfile's sets, then its ``[setup.*]`` entries, in file order"""
    uses = []
    for spec in lockfile.sets.values():
        for name, pin in spec.pins.items():
            repo = lockfile.get_repo(name)
            folder = checkout_folder(repo.checkout)
            uses.append(PinUse(lockfile.path, f"sets.{spec.name}.{name}", name, repo.url, pin.commit, folder))
    for entry in lockfile.setup.values():
        uses.append(PinUse(lockfile.path, f"setup.{entry.name}", entry.name, entry.url, entry.commit, None))
    return uses


@dataclass(frozen=True)
class StoreUsers:
    """
    :param lockfiles: the lockfiles whose pins count: the current one first, then the store's other users
    :param gone: lockfiles the store recorded that no longer exist
    """

    lockfiles: Tuple[Lockfile, ...]
    gone: Tuple[Path, ...]


def load_users(store_dir: Path, current: Lockfile) -> StoreUsers:
    """
    :param store_dir: the store directory
    :param current: the lockfile of the setup asking
    :return: it and every other lockfile the store recorded
    :raises LockfileError: when a recorded lockfile exists but cannot be read: what it pins cannot be known
    """
    lockfiles = [current]
    gone = []
    for path in registered_lockfiles(store_dir):
        if path == current.path.resolve():
            continue
        try:
            os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            gone.append(path)
            continue
        except OSError:
            pass  # load_lockfile says what is wrong
        try:
            lockfiles.append(load_lockfile(path))
        except LockfileError as exc:
            raise LockfileError(
                f"{exc} (the store {store_dir} serves this lockfile, so what it pins is kept: fix it, or remove it "
                "if that setup is gone)"
            ) from None
    return StoreUsers(tuple(lockfiles), tuple(gone))


def target_matcher(lockfile: Lockfile, target: str) -> Matcher:
    """
    :param lockfile: the setup's lockfile
    :param target: a repository (or setup entry) name of the lockfile, else a commit SHA or a prefix of 4+ digits
    :return: what a (url, commit) must satisfy to be about target: the same repository, or a matching commit
    :raises UnknownNameError: when target is neither
    """
    entry = lockfile.repos.get(target) or lockfile.setup.get(target)
    if entry is not None:
        url = entry.url
        return lambda other, _: same_repository(other, url)
    if _HEX_RE.match(target):
        prefix = target.lower()
        return lambda _, commit: commit.startswith(prefix)
    known = ", ".join(sorted({*lockfile.repos, *lockfile.setup})) or "none"
    raise UnknownNameError(
        f"{display_path(lockfile.path)}: {target!r} is neither a repository (known: {known}) nor a commit "
        "(4 to 40 hex digits)"
    )


@dataclass(frozen=True)
class CloneRun:
    """
    A finished CloneGitRepositoryJob in work/.

    :param job: its job id
    :param url: the checkout's ``origin``: the job's url
    :param commit: the checkout's HEAD
    """

    job: str
    url: str
    commit: str


class WorkDir:
    """
    The jobs Sisyphus left in a setup's work/ (see the module docstring).

    :param path: the work directory (it may not exist)
    """

    def __init__(self, path: Path):
        self.path = path
        #: job id -> its directory
        self.jobs: Dict[str, Path] = {}
        #: directories that could not be listed: jobs below them are not known
        self.unreadable: List[Path] = []
        self._used_by: Optional[Dict[str, Set[str]]] = None
        if path.is_dir():
            self._scan()

    def _scan(self) -> None:
        stack = [self.path]
        while stack:
            directory = stack.pop()
            try:
                entries = sorted(os.scandir(directory), key=lambda e: e.name)
            except OSError:
                self.unreadable.append(directory)
                continue
            for entry in entries:
                if entry.name.startswith(".") or not entry.is_dir():
                    continue
                if "." in entry.name:
                    self.jobs[Path(entry.path).relative_to(self.path).as_posix()] = Path(entry.path)
                elif not entry.is_symlink():
                    stack.append(Path(entry.path))

    def finished(self, job: str) -> bool:
        """:return: whether the job is in work/ and finished"""
        directory = self.jobs.get(job)
        return directory is not None and any((directory / marker).is_file() for marker in _FINISHED_MARKERS)

    def clones(self) -> Iterator[CloneRun]:
        """:return: the finished CloneGitRepositoryJobs whose output is a checkout with a commit and an origin"""
        for job, directory in self.jobs.items():
            if not job.rsplit("/", 1)[-1].startswith(_CLONE_JOB_PREFIX) or not self.finished(job):
                continue
            output = directory / "output"
            for checkout in sorted(output.iterdir()) if output.is_dir() else ():
                if not (checkout / ".git").exists():
                    continue
                try:
                    commit, url = git.checkout_origin(checkout)
                except CheckoutStateError:
                    continue  # not a checkout after all
                if commit and url:
                    yield CloneRun(job, url, commit)

    def built_on(self, job: str) -> Set[str]:
        """:return: the finished jobs in work/ that use the job's outputs, directly or through other jobs"""
        if self._used_by is None:
            self._used_by = self._read_inputs()
        found: Set[str] = set()
        stack = [job]
        while stack:
            for user in self._used_by.get(stack.pop(), ()):
                if user not in found:
                    found.add(user)
                    stack.append(user)
        return {user for user in found if self.finished(user)}

    def _read_inputs(self) -> Dict[str, Set[str]]:
        """job id -> the jobs whose ``input/`` links to it (Sisyphus links each input job's directory there)"""
        by_real_path = {os.path.realpath(directory): job for job, directory in self.jobs.items()}
        used_by: Dict[str, Set[str]] = {}
        for job, directory in self.jobs.items():
            try:
                links = list(os.scandir(directory / "input"))
            except OSError:
                continue  # a job that uses no other job's output has no input/ links
            for link in links:
                source = by_real_path.get(os.path.realpath(link.path))
                if source is not None:
                    used_by.setdefault(source, set()).add(job)
        return used_by


@dataclass
class Usage:
    """
    Everything that uses one commit of one repository.

    :param name: a readable name of the repository
    :param url: its URL
    :param commit: the full commit SHA
    :param pins: the lockfiles' pins of it (the current lockfile's first)
    :param clones: its finished clone jobs in work/, each with the finished jobs built on it
    :param outputs: the registered outputs of pin.snapshot.toml whose job is finished in work/ and built on it, as
        (set, output, job id)
    :param checkouts: its checkouts in the store
    """

    name: str
    url: str
    commit: str
    pins: List[PinUse] = field(default_factory=list)
    clones: List[Tuple[CloneRun, Set[str]]] = field(default_factory=list)
    outputs: List[Tuple[str, str, str]] = field(default_factory=list)
    checkouts: List[Path] = field(default_factory=list)


def store_checkouts(store: Store, url: str) -> Iterator[Tuple[str, Path]]:
    """:return: (commit, checkout) for every checkout the store holds of url"""
    # the layout of Store.checkout_path: <store>/checkouts/<mirror name>/<commit>/<folder>
    repository = store.directory / "checkouts" / store.mirror_path(url).stem
    for commit_dir in sorted(repository.iterdir()) if repository.is_dir() else ():
        if commit_dir.is_dir() and _FULL_SHA_RE.match(commit_dir.name):
            for checkout in sorted(commit_dir.iterdir()):
                if not checkout.name.startswith("."):  # a checkout being made or removed
                    yield commit_dir.name, checkout


def find_usages(
    users: StoreUsers,
    work: WorkDir,
    snapshot: Mapping[str, Mapping[str, Output]],
    store: Store,
    matches: Matcher,
) -> List[Usage]:
    """
    :param users: the lockfiles that use the store, the current one first
    :param work: the current setup's work/
    :param snapshot: the current setup's pin.snapshot.toml
    :param store: the store
    :param matches: which (url, commit) to report
    :return: one entry per repository and commit that matches, in the order: pinned by the current lockfile, by
        other lockfiles, found in work/, in the store
    """
    usages: List[Usage] = []

    def usage(url: str, commit: str, name: str) -> Usage:
        for known in usages:
            if known.commit == commit and same_repository(known.url, url):
                return known
        usages.append(Usage(name, url, commit))
        return usages[-1]

    urls: Dict[str, None] = {}
    for lockfile in users.lockfiles:
        for use in pin_uses(lockfile):
            urls[use.url] = None
            if matches(use.url, use.commit):
                usage(use.url, use.commit, use.name).pins.append(use)
    for clone in work.clones():
        urls[clone.url] = None
        if matches(clone.url, clone.commit):
            built_on = work.built_on(clone.job)
            usage(clone.url, clone.commit, name_from_url(clone.url)).clones.append((clone, built_on))
    for url in urls:
        for commit, checkout in store_checkouts(store, url):
            if matches(url, commit):
                usage(url, commit, name_from_url(url)).checkouts.append(checkout)
    for found in usages:
        jobs: Set[str] = set()
        for clone, built_on in found.clones:
            jobs |= {clone.job, *built_on}
        for set_name, outputs in snapshot.items():
            for output, recorded in sorted(outputs.items()):
                if recorded.job in jobs:
                    found.outputs.append((set_name, output, recorded.job))
    return usages
