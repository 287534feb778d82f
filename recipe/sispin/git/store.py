"""
The store: sispin's local cache directory, one bare mirror per repository URL.

Resolution (``pin upgrade``, ``pin new``), logs and behind-counts (``pin status``) read these mirrors, so no command
clones a working tree for them. Where things are (:meth:`Store.mirror_path`, :meth:`Store.mirror`) costs no import
of filelock or of the modules that clone and fetch, so the settings hook can ask in every Sisyphus process; the
methods that lock or run git import them. The store is the one owner of its directory: ``$PIN_HOME``, else
``$XDG_CACHE_HOME/sispin``, else ``~/.cache/sispin``. Creating and fetching a mirror hold a per-mirror file lock, and
a new mirror is built beside its final place and renamed in, so concurrent processes and killed runs are safe.
"""

from __future__ import annotations

__all__ = ["PIN_HOME_ENV", "SCRATCH_CHECKOUTS_ENV", "PARALLEL_FETCHES", "Store", "default_store_dir"]

import datetime
import hashlib
import os
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, Iterator, Optional, Sequence, Tuple

from sispin.errors import FileSystemError, GitError
from sispin.lock.lockfile import is_full_sha
from sispin.lock.urls import name_from_url

PIN_HOME_ENV = "PIN_HOME"
#: where a build at pins not written makes the checkouts the store lacks (set by sispin for its own probes)
SCRATCH_CHECKOUTS_ENV = "SISPIN_SCRATCH_CHECKOUTS"
#: how many remotes one command fetches at a time
PARALLEL_FETCHES = 8


def default_store_dir() -> Path:
    """:return: ``$PIN_HOME``, else ``$XDG_CACHE_HOME/sispin``, else ``~/.cache/sispin``"""
    explicit = os.environ.get(PIN_HOME_ENV)
    if explicit:
        return Path(explicit).absolute()
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache).absolute() / "sispin"


class Store:
    """
    The mirrors sispin reads.

    :param directory: the store directory (default: :func:`default_store_dir`)
    """

    def __init__(self, directory: Optional[Path] = None):
        self.directory = directory or default_store_dir()
        # a command fetches each URL at most once, however many sets pin it
        self._fetched: Dict[str, Path] = {}

    def mirror_path(self, url: str) -> Path:
        """
        :param url: repository URL as written in pin.toml
        :return: where its mirror lives (readable name + hash of the exact URL)
        """
        digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:16]
        # the digest tells URLs apart; the name is for people, and must leave the file name short enough
        return self.mirrors_directory / f"{name_from_url(url)[:_NAME_LIMIT]}-{digest}.git"

    @property
    def mirrors_directory(self) -> Path:
        """The store's mirrors (what a graph build reads of them is no input: sispin keys on the commits itself)."""
        return self.directory / "mirrors"

    @property
    def checkouts_directory(self) -> Path:
        """The store's checkouts: ``<repository>/<commit>/<folder>``, each made whole before it is used."""
        return self.directory / "checkouts"

    def mirror(self, url: str) -> Optional[Path]:
        """
        :param url: repository URL
        :return: the mirror if the store has one (it may be stale), else None; never touches the network
        """
        path = self.mirror_path(url)
        return path if _is_mirror(path) else None

    def fetch(self, url: str) -> Path:
        """
        Bring the mirror of url up to date with the remote, creating it when absent. Whatever else is in its place
        (a mirror whose HEAD or objects are gone, a file) is removed first: the store owns its directory.

        :param url: repository URL
        :return: the mirror
        :raises GitError: when the remote cannot be reached
        :raises FileSystemError: when the store cannot be written
        """
        from filelock import FileLock

        from sispin.git.repo import create_mirror, update_mirror

        if url in self._fetched:
            return self._fetched[url]
        path = self.mirror_path(url)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(path) + ".lock"):
                if self.mirror(url) is None:
                    _clear(path)
                    create_mirror(url, path)
                else:
                    update_mirror(url, path)
        except OSError as exc:
            raise FileSystemError(self._cannot_write(exc)) from None
        self._fetched[url] = path
        return path

    def fetch_all(self, urls: Sequence[str]) -> Dict[str, Path]:
        """
        :meth:`fetch` each URL, up to :data:`PARALLEL_FETCHES` side by side: a network round trip and the remote's
        packing dominate a fetch, not this machine.

        :param urls: distinct repository URLs
        :return: url -> its mirror
        :raises GitError: the first failure, in the order of urls (the others still ran to their end)
        """
        if len(urls) < 2:
            return {url: self.fetch(url) for url in urls}
        with ThreadPoolExecutor(max_workers=min(PARALLEL_FETCHES, len(urls))) as pool:
            futures = {url: pool.submit(self.fetch, url) for url in urls}
        return {url: future.result() for url, future in futures.items()}

    def _cannot_write(self, exc: OSError) -> str:
        return (
            f"the store {self.directory} cannot be written ({exc.filename}: {exc.strerror}); make it writable or set "
            f"{PIN_HOME_ENV} to another directory"
        )

    def last_fetched(self, url: str) -> Optional[datetime.datetime]:
        """:return: when the mirror of url was last created or fetched, or None when the store has none"""
        path = self.mirror(url)
        if path is None:
            return None
        from sispin.git.repo import FETCHED_STAMP

        # a fresh mirror has only its clone time
        stamp = path / FETCHED_STAMP if (path / FETCHED_STAMP).exists() else path / "HEAD"
        return datetime.datetime.fromtimestamp(stamp.stat().st_mtime, tz=datetime.timezone.utc)

    def checkout(self, url: str, commit: str, folder: str) -> Path:
        """
        A local, read-only checkout of commit, made from the mirror on first use (fetching only when the mirror
        lacks the commit); later calls only look at the disk.

        :param url: repository URL
        :param commit: full commit SHA
        :param folder: name of the checkout directory (like CloneGitRepositoryJob's checkout_folder_name)
        :return: ``<store>/checkouts/<repository>/<commit>/<folder>``
        :raises GitError: when the commit cannot be had
        """
        from filelock import FileLock

        from sispin.git.presence import missing_commits
        from sispin.git.repo import clone_at_commit

        path = self.checkout_path(url, commit, folder)
        if (path / ".git").is_dir():
            return path
        scratch = os.environ.get(SCRATCH_CHECKOUTS_ENV)
        if scratch:
            # a build at pins not written (an upgrade's, a check's moved build): what it checks out is its own and
            # goes with it, so that the store holds only what lockfiles pin
            path = Path(scratch) / path.relative_to(self.checkouts_directory)
            if (path / ".git").is_dir():
                return path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with FileLock(str(path.parent) + ".lock"):
                if not (path / ".git").is_dir():
                    mirror = self.mirror(url)
                    if mirror is None or missing_commits(mirror, [commit]):
                        mirror = self.fetch(url)
                        if missing_commits(mirror, [commit]):
                            raise GitError(f"commit {commit} does not exist in {url} (nor in the store)")
                    _clear(path)
                    clone_at_commit(str(mirror), commit, path)
                    if not scratch:
                        _make_read_only(path)
        except OSError as exc:
            raise FileSystemError(self._cannot_write(exc)) from None
        return path

    def checkout_path(self, url: str, commit: str, folder: str) -> Path:
        """:return: where :meth:`checkout` puts that checkout"""
        return self.checkouts_directory / self.mirror_path(url).stem / commit / folder

    def checkouts(self, url: str) -> Iterator[Tuple[str, Path]]:
        """:return: (commit, checkout) for every checkout the store holds of url (see :meth:`checkout_path`)"""
        repository = self.checkout_path(url, "-", "-").parent.parent
        for commit_dir in sorted(repository.iterdir()) if repository.is_dir() else ():
            if commit_dir.is_dir() and is_full_sha(commit_dir.name):
                for checkout in sorted(commit_dir.iterdir()):
                    if not checkout.name.startswith("."):  # a checkout being made or removed
                        yield commit_dir.name, checkout


#: characters of the readable name in a mirror's directory name
_NAME_LIMIT = 64


def _is_mirror(path: Path) -> bool:
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def _clear(path: Path) -> None:
    """Remove what stands where a mirror or checkout is about to be made (the caller holds its lock)."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.is_dir():
        # a store checkout is read-only: its directories get their write bits back before they can be emptied
        for directory, _, _ in os.walk(path):
            os.chmod(directory, os.stat(directory).st_mode | 0o700)
        shutil.rmtree(path)


def _make_read_only(checkout: Path) -> None:
    """
    Files and directories of the working tree lose their write bits, so that nothing edits them by accident and
    Python writes no bytecode into them; .git stays writable, for git status.
    """
    for directory, _, files in os.walk(checkout, topdown=False):
        if ".git" in Path(directory).relative_to(checkout).parts[:1]:
            continue
        for name in files:
            target = os.path.join(directory, name)
            if not os.path.islink(target):
                os.chmod(target, os.stat(target).st_mode & ~0o222)
        os.chmod(directory, os.stat(directory).st_mode & ~0o222)
