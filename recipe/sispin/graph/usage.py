"""
Who uses which commit: the pins of the lockfiles a store serves (:mod:`sispin.git.registry`), the finished
CloneGitRepositoryJobs in a setup's work/ with the finished jobs built on them, the registered outputs of
pin.snapshot.toml among those, and the store's checkouts. ``pin why`` asks it about a commit or a repository.

work/ is read as Sisyphus leaves it, without Sisyphus: a job is the first directory below work/ whose name has a dot
(``<module path>/<Class>.<hash>``: module path parts are identifiers); it is finished when it holds ``finished`` or
``finished.tar.gz``; its ``input/`` holds a link to each job whose outputs it uses; and the output of a
CloneGitRepositoryJob is a git checkout whose HEAD is the commit and whose ``origin`` is the url.
"""

from __future__ import annotations

__all__ = ["CloneRun", "Usage", "WorkDir", "target_matcher", "find_usages"]

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Set, Tuple

from sispin.errors import CheckoutStateError, UnknownNameError
from sispin.git.registry import PinUse, StoreUsers, pin_uses
from sispin.git.repo import checkout_origin
from sispin.git.store import Store
from sispin.graph.probe.schema import RecordedOutput
from sispin.lock.lockfile import Lockfile, is_sha_prefix
from sispin.lock.urls import name_from_url, same_repository
from sispin.text import did_you_mean, display_path

#: (url, commit) -> whether it is what was asked about
Matcher = Callable[[str, str], bool]

_CLONE_JOB_PREFIX = "CloneGitRepositoryJob."
_FINISHED_MARKERS = ("finished", "finished.tar.gz")


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
    if is_sha_prefix(target.lower()):
        prefix = target.lower()
        return lambda _, commit: commit.startswith(prefix)
    names = {*lockfile.repos, *lockfile.setup}
    raise UnknownNameError(
        f"{display_path(lockfile.path)}: {target!r} is neither a repository{did_you_mean(target, names)} (known: "
        f"{', '.join(sorted(names)) or 'none'}) nor a commit (4 to 40 hex digits)"
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
                    commit, url = checkout_origin(checkout)
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


def find_usages(
    users: StoreUsers,
    work: WorkDir,
    snapshot: Mapping[str, Mapping[str, RecordedOutput]],
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
        for commit, checkout in store.checkouts(url):
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
