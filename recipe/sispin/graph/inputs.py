"""
What a build of a set's graph read, so that ``pin check`` can tell, without building, that nothing it read changed.

The probe records while the configs load (:class:`InputRecorder`, through wrappers of Python's functions that open,
list, look at paths, read the environment, the clock and randomness, and start processes): every file opened for
reading (the configs, every module imported, anything a config reads), every module's file (extension modules are
loaded, not opened), every directory listed (the import system lists each directory on the path, so a new module
that would shadow another is seen), every path whose existence or kind the setup's own code asked for, and every
environment variable it read. The recording ends as
:func:`InputRecorder.ledger`: each input with what identifies its content (a file's size, modification time and
inode; for the setup's own files also their content digest, so that a ``git checkout`` of the same bytes changes
nothing). :func:`changed_input` tells later whether they still hold.

A build whose result no record can vouch for is marked volatile and never reused: the setup's code read the clock or
unseeded randomness, ran a process, opened a connection, or an input changed while the build read it.
"""

from __future__ import annotations

__all__ = ["InputRecorder", "changed_input", "STAT_KINDS"]

import hashlib
import os
import re
import stat
import sys
import sysconfig
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

#: module functions of random that draw from its shared generator
_RANDOM = (
    "random uniform triangular randint choice randrange sample shuffle choices normalvariate lognormvariate "
    "expovariate vonmisesvariate gammavariate gauss betavariate paretovariate weibullvariate getrandbits randbytes"
).split()
#: clock reads of the time module (the ones that take a time read the clock only without it)
_CLOCK = ("time", "time_ns", "localtime", "gmtime", "ctime", "asctime", "strftime")
#: datetime's clock is read in C, where no hook sees it: the setup's own code is searched for the calls instead
_DATETIME_CLOCK = re.compile(rb"\.(?:now|today|utcnow)\(")
#: an input modified this close to the start of the build may have changed while it was read (coarse file times)
_RACY_NS = 2_000_000_000
#: the pseudo file systems of the kernel
_MACHINE_STATE = ("/proc/", "/sys/", "/dev/")
#: what a path was, as recorded for an existence check
STAT_KINDS = ("missing", "file", "directory", "other")


def _source_of(path: str) -> str:
    """
    :return: for the bytecode of a module, its source if it has one (Python reads a valid .pyc and only looks at the
        source's time and size; in ``__pycache__`` or under ``sys.pycache_prefix``), else path
    """
    if path.endswith(".pyc"):
        import importlib.util

        try:
            source = importlib.util.source_from_cache(path)
        except ValueError:
            return path
        return source if os.path.exists(source) else path
    return path


def _kind(path: str) -> str:
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return "missing"
    return "file" if stat.S_ISREG(mode) else "directory" if stat.S_ISDIR(mode) else "other"


def _listing(path: str) -> Optional[str]:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return None
    return hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()


def _content(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


def _file_signature(path: str, own: bool) -> Optional[List[Any]]:
    """:return: [size, mtime in ns, inode, content digest (own files only) or None]; None when it cannot be read"""
    try:
        status = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(status.st_mode):
        return [None, None, None, None]  # a device, a FIFO: its kind only
    return [status.st_size, status.st_mtime_ns, status.st_ino, _content(path) if own else None]


class InputRecorder:
    """
    Records what a build reads (see the module's docstring). Start it before the configs load, stop it after.

    :param root: the setup root (its code is the setup's own: a clock read there makes the build volatile)
    :param foreign: directories below the root whose code is not the setup's (sispin, a Sisyphus checkout)
    :param ignored: files and directories that are not inputs (pin.toml and the caches, whose content sispin keys
        on itself; the probe's own scratch files)
    """

    def __init__(self, root: str, foreign: Sequence[str], ignored: Sequence[str]):
        self.root = os.path.join(os.path.abspath(root), "")
        self.foreign = tuple(os.path.join(os.path.abspath(path), "") for path in foreign)
        self.ignored = tuple(os.path.abspath(path) for path in ignored)
        self.stdlib = os.path.join(sysconfig.get_paths()["stdlib"], "")
        self.files: Dict[str, None] = {}
        self.directories: Dict[str, None] = {}
        self.paths: Dict[str, None] = {}
        self.environment: Dict[str, Optional[str]] = {}
        self.volatile: Optional[str] = None
        self.seeded = False
        self.active = False
        self.started_ns = 0

    def start(self) -> None:
        """Record from now on (the hooks are installed once per process)."""
        self.started_ns = time.time_ns()
        self._install()
        self.active = True

    def stop(self) -> None:
        """Record no more."""
        self.active = False

    def _install(self) -> None:
        # wrappers of the functions that read, not an audit hook: Python calls a hook on every event, every id() too
        # (400,000 in a build of 1,000 jobs), which cost a third of the build
        import builtins
        import io
        import pathlib
        import socket
        import subprocess

        system = sys.modules[os.name]  # posix: what the import system calls os.listdir through
        builtins.open = io.open = self._opening(io.open)
        io.open_code = self._opening(io.open_code)
        _io = sys.modules["_io"]
        _io.open_code = io.open_code  # how the import system reads a module's source and bytecode
        os.open = self._opening(os.open, flags=True)
        for name in ("listdir", "scandir"):
            for module in (os, system):
                setattr(module, name, self._listing(getattr(module, name)))
        for name in ("stat", "lstat"):
            setattr(os, name, self._watching_paths(getattr(os, name)))
        accessor = getattr(pathlib, "_NormalAccessor", None)  # Python < 3.11 took them before we could wrap them
        if accessor is not None:
            for name in ("stat", "lstat", "listdir", "scandir"):
                setattr(accessor, name, staticmethod(getattr(os, name)))
            accessor.open = staticmethod(os.open if sys.version_info < (3, 10) else io.open)
        for name in _CLOCK:
            clock = getattr(time, name)
            setattr(
                time, name, self._volatile_when(clock, "reads the clock", lambda args, n=name: _reads_clock(n, args))
            )
        import random

        for name in _RANDOM:
            if hasattr(random, name):
                draw = getattr(random, name)
                setattr(random, name, self._volatile_when(draw, "draws random numbers", lambda _: not self.seeded))
        random.seed = self._seeding(random.seed)
        os.urandom = self._volatile_when(os.urandom, "draws random bytes", lambda _: True)
        subprocess.Popen.__init__ = self._volatile_when(  # type: ignore[method-assign]
            subprocess.Popen.__init__, "runs a process", lambda _: True
        )
        for name in ("system", "posix_spawn", "posix_spawnp", "fork", "execv", "execve"):
            if hasattr(os, name):
                setattr(os, name, self._volatile_when(getattr(os, name), "runs a process", lambda _: True))
        connect = socket.socket.connect
        socket.socket.connect = self._volatile_when(connect, "opens a connection", lambda _: True)  # type: ignore
        os.environ.__class__ = _recording_environment(type(os.environ), self)

    def _opening(self, function: Callable[..., Any], flags: bool = False) -> Callable[..., Any]:
        """:param flags: the function takes os.open's flags (else open's mode) after the file"""

        def watched(file: Any, *args: Any, **kwargs: Any) -> Any:
            if self.active and not isinstance(file, int):
                how = args[0] if args else kwargs.get("flags" if flags else "mode", os.O_RDONLY if flags else "r")
                if (how & os.O_ACCMODE) == os.O_RDONLY if flags else not set(how) & set("wax+"):
                    self.files.setdefault(_source_of(os.path.abspath(os.fsdecode(file))), None)
            return function(file, *args, **kwargs)

        return watched

    def _listing(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            path = args[0] if args else kwargs.get("path")
            if self.active and not isinstance(path, int):
                self.directories.setdefault(os.path.abspath(os.fsdecode(path if path is not None else ".")), None)
            return function(*args, **kwargs)

        return watched

    def setup_caller(self) -> Optional[str]:
        """:return: ``file:line`` of the nearest caller outside the standard library when it is the setup's own code"""
        frame = sys._getframe(1)
        while frame is not None:
            name = frame.f_code.co_filename
            stdlib = name.startswith(self.stdlib) and "-packages" not in name
            if not (name.startswith("<") or stdlib or name == __file__):
                break
            frame = frame.f_back
        if frame is None:
            return None
        name = frame.f_code.co_filename
        if self._setup_code(name):
            return f"{os.path.relpath(name, self.root)}:{frame.f_lineno}"
        return None

    def _watching_paths(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def watched(path: Any, *args: Any, **kwargs: Any) -> Any:
            if self.active and not isinstance(path, int) and self.setup_caller():
                self.paths.setdefault(os.path.abspath(os.fsdecode(path)), None)
            return function(path, *args, **kwargs)

        return watched

    def _volatile_when(
        self, function: Callable[..., Any], what: str, reads: Callable[[Sequence[Any]], bool]
    ) -> Callable[..., Any]:
        """:param reads: whether a call with these arguments reads what no record can hold"""

        def watched(*args: Any, **kwargs: Any) -> Any:
            if self.active and self.volatile is None and reads(args):
                where = self.setup_caller()  # sispin's own git, the standard library's `uname`: not the setup's
                if where:
                    self.volatile = f"{where} {what}"
            return function(*args, **kwargs)

        return watched

    def _seeding(self, seed: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            if self.active and (args and args[0] is not None or kwargs.get("a") is not None) and self.setup_caller():
                self.seeded = True
            return seed(*args, **kwargs)

        return watched

    def ledger(self, sets_read: Sequence[str], prefixes: Sequence[str] = ()) -> Dict[str, Any]:
        """
        :param sets_read: the experiment sets the configs asked for (their lock sections are inputs too)
        :param prefixes: environment variables whose every variable with that name prefix is an input (Sisyphus
            takes a setting from each ``SIS_*`` variable)
        :return: {"files": {path: signature}, "directories": {path: digest of the names}, "paths": {path: kind},
            "environment": {name: value or None}, "sets": [...], "volatile": why no record can vouch for the build,
            or None}
        """
        # extension modules are loaded, not opened: every module's file is an input
        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                self.files.setdefault(_source_of(os.path.abspath(file)), None)
        own = [path for path in self.files if self._own(path)]
        files = {path: _file_signature(path, path in own) for path in self.files if not self._ignored(path)}
        ledger: Dict[str, Any] = {
            "files": {path: signature for path, signature in files.items() if signature is not None},
            "absent": sorted(path for path, signature in files.items() if signature is None),
            "directories": {path: _listing(path) for path in self.directories if not self._ignored(path)},
            "paths": {path: _kind(path) for path in self.paths if not self._ignored(path)},
            "environment": {
                **self.environment,
                **{name: value for name, value in os.environ.items() if name.startswith(tuple(prefixes))},
            },
            "prefixes": sorted(prefixes),
            "sets": sorted(sets_read),
            "volatile": self.volatile or self._clock_in_source(own) or self._racy(files),
        }
        return ledger

    def _own(self, path: str) -> bool:
        return self._setup_code(path) and not self._ignored(path)

    def _setup_code(self, path: str) -> bool:
        return path.startswith(self.root) and not path.startswith(self.foreign) and "-packages" + os.sep not in path

    def _ignored(self, path: str) -> bool:
        # /proc, /sys, /dev: the state of the process and the machine (torch reads /proc/self/maps), not an input
        return path.startswith(_MACHINE_STATE) or any(
            path == ignored or path.startswith(os.path.join(ignored, "")) for ignored in self.ignored
        )

    def _clock_in_source(self, own: Sequence[str]) -> Optional[str]:
        for path in own:
            if path.endswith(".py"):
                try:
                    with open(path, "rb") as handle:
                        if _DATETIME_CLOCK.search(handle.read()):
                            return f"{os.path.relpath(path, self.root)} may read the clock (datetime)"
                except OSError:
                    continue
        return None

    def _racy(self, files: Mapping[str, Optional[List[Any]]]) -> Optional[str]:
        for path, signature in files.items():
            if signature is not None and signature[1] is not None and signature[1] > self.started_ns - _RACY_NS:
                return f"{path} changed while the set was built"
        return None


def _reads_clock(function: str, args: Sequence[Any]) -> bool:
    """:return: whether time.function(*args) reads the clock (given a time, localtime and the like do not)"""
    if function in ("localtime", "gmtime", "ctime"):
        return not args or args[0] is None
    if function == "asctime":
        return not args
    if function == "strftime":
        return len(args) < 2
    return True


def _recording_environment(base: type, recorder: InputRecorder) -> type:
    """os.environ's class, recording each variable read (iterating over all of them reads them all)."""

    class RecordingEnvironment(base):  # type: ignore[misc, valid-type]
        def __getitem__(self, key: str) -> str:
            try:
                value = super().__getitem__(key)
            except KeyError:
                if recorder.active and recorder.setup_caller():
                    recorder.environment.setdefault(key, None)
                raise
            if recorder.active:
                if key == "OLDPWD":
                    recorder.environment.setdefault(key, value)
            return value

        def __iter__(self) -> Any:
            # copied whole by the setup's own code (for a process, say): every variable is an input
            if recorder.active and recorder.setup_caller():
                for key in list(super().__iter__()):
                    recorder.environment.setdefault(key, super().__getitem__(key))
            return super().__iter__()

    return RecordingEnvironment


def changed_input(ledger: Mapping[str, Any], environment: Mapping[str, str], root: str) -> Optional[str]:
    """
    :param ledger: what :meth:`InputRecorder.ledger` recorded
    :param environment: the environment a build would get now
    :param root: the setup root (paths below it are named relative to it)
    :return: the first input that no longer holds, as ``what: how`` (None: every input is as it was read)
    """

    def shown(path: str) -> str:
        return os.path.relpath(path, root) if path.startswith(os.path.join(root, "")) else path

    for path, signature in ledger["files"].items():
        now = _file_signature(path, False)
        if now is None:
            return f"{shown(path)}: removed"
        if now[:3] != signature[:3] and (signature[3] is None or _content(path) != signature[3]):
            return f"{shown(path)}: changed"
    for path in ledger["absent"]:
        if os.path.exists(path):
            return f"{shown(path)}: created"
    for path, digest in ledger["directories"].items():
        if _listing(path) != digest:
            return f"{shown(path)}/: other files"
    for path, kind in ledger["paths"].items():
        if _kind(path) != kind:
            return f"{shown(path)}: now {_kind(path)}"
    for name, value in ledger["environment"].items():
        if environment.get(name) != value:
            return f"${name}: changed"
    for name in environment:
        if name.startswith(tuple(ledger["prefixes"])) and name not in ledger["environment"]:
            return f"${name}: new"
    return None
