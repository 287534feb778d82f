"""
Replacing the files sispin owns in a setup (pin.toml, pin.snapshot.toml, the journal between them): under a file
lock, atomically (temporary file in the same directory, fsync, rename), through a symlink to its target, never over
a read-only file, and with the temporary files of a killed writer removed.
"""

from __future__ import annotations

__all__ = [
    "CACHE_DIR",
    "cache_directory",
    "file_lock",
    "check_writable",
    "replace_file",
    "write_atomically",
    "SNAPSHOT_NAME",
    "JOURNAL_NAME",
    "snapshot_path",
    "journal_path",
    "interrupted",
    "leftovers",
    "remove_leftovers",
    "remove",
    "RACY_NS",
]

import contextlib
import os
import stat
import tempfile
from pathlib import Path
from typing import Iterator, List

from sispin.errors import FileSystemError
from sispin.text import display_path

#: file and directory times this close to a moment may still change within their granularity (coarse file system
#: clocks): a state seen then cannot vouch for later
RACY_NS = 2_000_000_000
#: sispin's directory of caches and file locks in a setup (like .pytest_cache: it holds a .gitignore of its own, so
#: that `git status` never shows them)
CACHE_DIR = ".sispin-cache"


def cache_directory(root: Path) -> Path:
    """
    :param root: the setup root (pin.toml's directory)
    :return: its cache directory, made (with the .gitignore that keeps it out of git) when missing
    :raises OSError: when it cannot be made
    """
    directory = Path(root) / CACHE_DIR
    directory.mkdir(exist_ok=True)
    ignore = directory / ".gitignore"
    if not ignore.exists():
        ignore.write_text("# sispin's caches (validated lockfiles, job records) and file locks; safe to delete\n*\n")
    return directory


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """
    Hold the lock that serialises the rewrites of a file: in the cache directory beside the real file, so two links
    to one file share it and git never shows it.

    :param path: a file sispin rewrites (pin.toml, pin.snapshot.toml), possibly a symlink
    :raises FileSystemError: when the lock file cannot be made (e.g. a read-only directory)
    """
    from filelock import FileLock  # not for the config path, which writes without locks (replace_file)

    real = Path(os.path.realpath(path))
    locks = real.parent / CACHE_DIR / "locks"
    lock = FileLock(str(locks / f"{real.name}.lock"))
    try:
        cache_directory(real.parent)
        locks.mkdir(exist_ok=True)
        lock.acquire()
    except OSError as exc:
        raise FileSystemError(
            f"{display_path(path)}: cannot take its lock {lock.lock_file}: {exc.strerror}; nothing written"
        ) from None
    try:
        yield
    finally:
        lock.release()


def check_writable(path: Path) -> None:
    """
    :param path: a file sispin is about to rewrite
    :raises FileSystemError: when it is read-only (no write bit: refused even for root, who could write it), or
        its directory (the real file's, for a symlink) does not let the replacement be made
    """
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and (not mode & 0o222 or not os.access(target, os.W_OK)):
        raise FileSystemError(
            f"{display_path(path)} is read-only (mode {stat.S_IMODE(mode):04o}): nothing written; make it writable "
            "to change it"
        )
    directory = os.path.dirname(target)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise FileSystemError(
            f"{display_path(path)}: its directory {directory} is not writable, so it cannot be replaced safely: "
            "nothing written"
        )


def replace_file(target: Path, data: bytes, mode: int, *, durable: bool = False) -> None:
    """
    Replace (or create) target with data: written to a temporary file beside it, given its mode, and renamed over
    it, so that a reader sees the old content or the new, never a part. The temporary file is removed on any error.

    :param target: the file (not a symlink: the caller resolves one)
    :param data: its new content
    :param mode: its permission bits
    :param durable: also make the new content and the rename survive a crash (fsync of the file and the directory)
    :raises OSError: when the directory cannot be written
    """
    handle, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as tmp:
            tmp.write(data)
            if durable:
                tmp.flush()
                os.fsync(tmp.fileno())
        os.chmod(tmp_name, mode)
        os.replace(tmp_name, target)
    except BaseException:
        os.unlink(tmp_name)
        raise
    if durable:
        _sync_directory(target.parent)


def write_atomically(path: Path, text: str) -> None:
    """
    Replace (or create) a file sispin owns in a setup so that readers and crashes only ever see the old or the new
    content (:func:`replace_file`, durable), keeping its permission bits. A symlink is written through (its target
    is replaced, in the target's directory). Callers hold the file's lock (:func:`file_lock`), so temporary files
    found beside it are a killed writer's: they are removed.

    :param path: the file
    :param text: its new content (written as is: no newline translation)
    :raises FileSystemError: when the file is read-only or its directory not writable
    """
    check_writable(path)
    target = Path(os.path.realpath(path))
    remove_leftovers(path)
    mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~_umask()
    replace_file(target, text.encode("utf-8"), mode, durable=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


#: the snapshot beside pin.toml, and the journal of a change of both while it is written
SNAPSHOT_NAME = "pin.snapshot.toml"
JOURNAL_NAME = ".pin.journal.json"


def snapshot_path(lockfile_path: Path) -> Path:
    """:return: the snapshot file that belongs to a lockfile"""
    return Path(lockfile_path).with_name(SNAPSHOT_NAME)


def journal_path(lockfile_path: Path) -> Path:
    """:return: where a change of the lock and its snapshot is recorded until both are written"""
    return Path(lockfile_path).with_name(JOURNAL_NAME)


def interrupted(lockfile_path: Path) -> bool:
    """
    :return: whether a killed command left something beside the lockfile to complete or remove (a journal, a
        temporary file): a directory listing, so that every command can ask before it loads the repair
    """
    files = (lockfile_path, snapshot_path(lockfile_path), journal_path(lockfile_path))
    return journal_path(lockfile_path).exists() or any(leftovers(file) for file in files)


def leftovers(path: Path) -> List[Path]:
    """
    :param path: a file sispin rewrites
    :return: the temporary files that writers killed before their rename left beside it (beside the real file)
    """
    target = Path(os.path.realpath(path))
    return sorted(target.parent.glob(f".{target.name}.*.tmp"))


def remove_leftovers(path: Path) -> None:
    """
    Delete :func:`leftovers`. The caller holds the file's lock, so none of them is a live writer's.

    :param path: a file sispin rewrites
    """
    for leftover in leftovers(path):
        leftover.unlink()


def remove(path: Path) -> None:
    """
    Delete a file, and make the deletion survive a crash.

    :param path: the file (it must exist)
    """
    os.unlink(path)
    _sync_directory(Path(path).parent)


def _sync_directory(directory: Path) -> None:
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
