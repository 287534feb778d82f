"""
The ledger of a build: each input it read with what identifies its state now (see :mod:`sispin.graph.probe.inputs`,
which records them), and :func:`changed_input`, which tells later whether they still hold.

A file is identified by its size, modification and change times and inode (a ``touch -d`` back to the old time
still changes the change time), and for the setup's own files also by a digest of their content, so that a ``git
checkout`` of the same bytes changes nothing; a directory by the names and kinds of its entries; a path that code
looked at by what it is (kind, size, times, and where a symlink points).
"""

from __future__ import annotations

__all__ = [
    "source_of",
    "bytecode_source",
    "bytecode_runs",
    "machine_state",
    "file_signature",
    "path_state",
    "listing",
    "content",
    "changed_input",
    "racy_input",
]

import hashlib
import io
import os
import stat
from typing import Any, Callable, Iterable, List, Mapping, Optional, Tuple

from sispin.lock.files import RACY_NS

#: open as it was before the recorder wrapped it: reading for the ledger is no input of the build
_open = io.open

#: the pseudo file systems of the kernel: the state of the process and the machine (torch reads /proc/self/maps);
#: /dev/shm holds real files
_MACHINE_STATE = ("/proc/", "/sys/", "/dev/")


def machine_state(path: str) -> bool:
    """:return: whether path is the state of the process or the machine, no input"""
    return path.startswith(_MACHINE_STATE) and not path.startswith("/dev/shm/")


def source_of(path: str) -> List[str]:
    """
    :return: the files that stand for a file read: for the bytecode of a module, its source if it has one (its
        content is what the configs mean), and the bytecode too where Python runs it instead of compiling the source
        (see :func:`bytecode_runs`); else path
    """
    if path.endswith(".pyc"):
        source = bytecode_source(path)
        if not source or not os.path.exists(source):
            return [path]
        return [source, path] if bytecode_runs(path) else [source]
    return [path]


def bytecode_source(pyc: str) -> str:
    """:return: the source a .pyc was compiled from, where Python looks for it ("" when there is none)"""
    import importlib.util

    try:
        return importlib.util.source_from_cache(pyc)
    except ValueError:
        return ""


def bytecode_runs(pyc: str) -> bool:
    """
    :return: whether Python runs a module's .pyc without compiling its source: an unchecked hash-based one (PEP 552),
        or one stamped with its source's present modification second and size, which an edit at the same size within
        that second, or undone with ``cp -p``, keeps (then the bytecode is another code than the source's); not a
        checked hash-based one (it runs only as the source's own compile) nor one whose stamp no longer matches
    """
    try:
        with _open(pyc, "rb") as handle:
            header = handle.read(16)
        source = os.stat(bytecode_source(pyc))
    except OSError:
        return False
    flags = int.from_bytes(header[4:8], "little")
    if len(header) < 16 or flags & 0b01:
        return len(header) == 16 and flags & 0b10 == 0
    stamped = int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")
    return stamped == (int(source.st_mtime) & 0xFFFFFFFF, source.st_size & 0xFFFFFFFF)


def content(path: str) -> Optional[str]:
    """:return: the digest of a file's bytes (None: it cannot be read)"""
    try:
        with _open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def file_signature(path: str, own: bool) -> Optional[List[Any]]:
    """
    :param own: a file of the setup's own, also identified by its content
    :return: [size, mtime in ns, ctime in ns, inode, content digest or None]; None when it cannot be read
    """
    try:
        status = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return [None, None, None, None, None]  # a device, a FIFO: its kind only
    return [status.st_size, status.st_mtime_ns, status.st_ctime_ns, status.st_ino, content(path) if own else None]


def path_state(path: str) -> List[Any]:
    """
    :return: what a path is: [kind, mode, size, mtime in ns, ctime in ns, where it points if a symlink] (kind
        "missing": nothing; a directory's size and times change with its entries and are left out)
    """
    try:
        target = os.readlink(path)
    except OSError:
        target = None
    try:
        status = os.stat(path)
    except OSError:
        return ["missing", None, None, None, None, target]
    if stat.S_ISDIR(status.st_mode):
        return ["directory", status.st_mode, None, None, None, target]
    kind = "file" if stat.S_ISREG(status.st_mode) else "other"
    return [kind, status.st_mode, status.st_size, status.st_mtime_ns, status.st_ctime_ns, target]


def listing(path: str) -> Optional[str]:
    """:return: a digest of a directory's entries, each name with its kind (None: it cannot be listed)"""
    try:
        with os.scandir(path) as entries:
            found = sorted(f"{entry.name}\0{_entry_kind(entry)}" for entry in entries)
    except OSError:
        return None
    return hashlib.sha256("\0\0".join(found).encode("utf-8", "surrogateescape")).hexdigest()


def _entry_kind(entry: os.DirEntry) -> str:
    """:return: d, f or o (what the entry is, through a symlink), after l for a symlink"""
    try:
        kind = "d" if entry.is_dir() else "f" if entry.is_file() else "o"
        return f"l{kind}" if entry.is_symlink() else kind
    except OSError:
        return "?"


def changed_input(ledger: Mapping[str, Any], environment: Mapping[str, str], root: str) -> Optional[str]:
    """
    :param ledger: what :meth:`sispin.graph.probe.inputs.InputRecorder.ledger` recorded
    :param environment: the environment a build would get now
    :param root: the setup root (paths below it are named relative to it)
    :return: the first input that no longer holds, as ``what: how`` (None: every input is as it was read)
    """

    def shown(path: str) -> str:
        return os.path.relpath(path, root) if path.startswith(os.path.join(root, "")) else path

    for path, signature in ledger["files"].items():
        if path.endswith(".pyc") and not bytecode_runs(path):
            continue  # Python compiles the source now (its stamp no longer matches, or it is gone): the source decides
        now = file_signature(path, False)
        if now is None:
            return f"{shown(path)}: removed"
        if now[:4] != signature[:4] and (signature[4] is None or content(path) != signature[4]):
            return f"{shown(path)}: changed"
    for path in ledger["absent"]:
        if os.path.lexists(path):
            return f"{shown(path)}: created"
    for path, digest in ledger["directories"].items():
        if listing(path) != digest:
            return f"{shown(path)}/: other entries"
    for path, state in ledger["paths"].items():
        now = path_state(path)
        # the times of a file that was read too are compared above, by content where it is the setup's own (a touch
        # or a checkout of the same bytes builds nothing)
        if (now[:3] + now[5:] != state[:3] + state[5:]) if path in ledger["files"] else now != state:
            return f"{shown(path)}: changed"
    for name, value in ledger["environment"].items():
        if environment.get(name) != value:
            return f"${name}: changed"
    for name in environment:
        if name.startswith(tuple(ledger["prefixes"])) and name not in ledger["environment"]:
            if name not in ledger.get("written", ()):
                return f"${name}: new"
    return None


def racy_input(
    files: Mapping[str, Optional[List[Any]]],
    looked_at: Iterable[Tuple[str, bool]],
    started_ns: int,
    settled: Callable[[str], bool],
) -> Optional[str]:
    """
    :param files: each file read, with its signature (see :func:`file_signature`)
    :param looked_at: each path looked at, and whether it was listed (a directory)
    :param started_ns: when the build started
    :param settled: whether a path needs no look (no input, or written whole before the build read it, never again)
    :return: an input that may have changed while the build read it (then the ledger holds the state after the
        change), if any: modified since shortly before the build (coarse file times), or its metadata changed
        (``cp -p`` keeps the modification time) since it started; bytecode (replaced whole) by the latter only
    """

    def changed(modified: Optional[int], metadata: Optional[int]) -> bool:
        return (modified or 0) > started_ns - RACY_NS or (metadata or 0) > started_ns

    for path, signature in files.items():
        if signature is not None and not settled(path):
            if changed(None if path.endswith(".pyc") else signature[1], signature[2]):
                return f"{path} changed while the set was built"
    for path, listed in looked_at:
        try:
            status = os.lstat(path)
        except OSError:
            continue
        # a path looked at: its times, where they are recorded (not a directory's: they change with its entries, as
        # /tmp's do all the time); a directory listed: its entries
        if (listed or not stat.S_ISDIR(status.st_mode)) and not settled(path):
            if changed(status.st_mtime_ns, status.st_ctime_ns):
                return f"{path} changed while the set was built"
    return None
