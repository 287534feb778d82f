"""
What a build of a set's graph read, so that ``pin check`` can tell, without building, that nothing it read changed.

The probe records while the configs load (:class:`InputRecorder`, through wrappers of Python's functions that open,
list, look at paths, read the environment, the clock and randomness, and start processes): every file opened for
reading (the configs, every module imported, anything a config reads), every module's file (extension modules are
loaded, not opened), every directory listed (the import system lists each directory on the path, so a new module
that would shadow another is seen; its caches are emptied first), the site directories and their ``.pth`` files,
every path that code looked at (``os.path.exists``, ``getsize``, ``access``, ``realpath``...), and every environment
variable the setup's own code read. :meth:`InputRecorder.ledger` writes them down as :mod:`sispin.graph.probe.ledger`
identifies them.

A build whose result no record can vouch for is marked volatile and never reused: the setup's code read the clock or
unseeded randomness or its process id, ran a process, opened a connection or a file relative to a directory
descriptor, or an input changed while the build read it.
"""

from __future__ import annotations

__all__ = ["InputRecorder"]

import contextlib
import logging
import os
import re
import sys
import sysconfig
import time
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Set

from sispin.graph.probe.ledger import (
    bytecode_source,
    file_signature,
    listing,
    machine_state,
    path_state,
    racy_input,
    source_of,
)

#: module functions of random that draw from its shared generator
_RANDOM = (
    "random uniform triangular randint choice randrange sample shuffle choices normalvariate lognormvariate "
    "expovariate vonmisesvariate gammavariate gauss betavariate paretovariate weibullvariate getrandbits randbytes"
).split()
#: clock reads of the time module (the ones that take a time read the clock only without it)
_CLOCK = (
    "time time_ns localtime gmtime ctime asctime strftime clock_gettime clock_gettime_ns monotonic monotonic_ns "
    "perf_counter perf_counter_ns process_time process_time_ns"
).split()
#: the standard library's logging package, with a separator
_LOGGING = os.path.dirname(os.path.abspath(logging.__file__)) + os.sep
#: datetime's clock is read in C, where no wrapper sees it: the setup's own code is searched for the calls instead
_DATETIME_CLOCK = re.compile(rb"\.\s*(?:now|today|utcnow)\b|[\"'](?:now|today|utcnow)[\"']")
#: os.open flags of a file made, not read
_CREATED = os.O_CREAT | os.O_EXCL


class InputRecorder:
    """
    Records what a build reads (see the module's docstring). Start it before Sisyphus is imported, stop it once the
    configs are loaded.

    :param root: the setup root (its code is the setup's own: a clock read there makes the build volatile)
    :param foreign: directories below the root whose code is not the setup's (sispin, a Sisyphus checkout)
    :param ignored: files and directories that are not inputs (pin.toml and the caches, whose content sispin keys
        on itself; the probe's own scratch files)
    :param elsewhere: other directories of the setup's own code (PYTHONPATH's)
    :param made_whole: directories of checkouts (repository/commit/checkout: the store's), each written whole, under
        a lock file beside it, before a build reads it, and never again: what lies below a repository is not racy
    """

    def __init__(
        self,
        root: str,
        foreign: Sequence[str],
        ignored: Sequence[str],
        elsewhere: Sequence[str] = (),
        made_whole: Sequence[str] = (),
    ):
        self.root = os.path.join(os.path.abspath(root), "")
        #: where the setup's own code is: the root, and the directories the user puts on PYTHONPATH
        self.own_places = (self.root, *(os.path.join(os.path.abspath(path), "") for path in elsewhere))
        self.foreign = tuple(os.path.join(os.path.abspath(path), "") for path in foreign)
        self.ignored = tuple(os.path.abspath(path) for path in ignored)
        self.made_whole = tuple(os.path.join(os.path.abspath(path), "") for path in made_whole)
        self.stdlib = os.path.join(sysconfig.get_paths()["stdlib"], "")
        self.files: Dict[str, None] = {}
        self.directories: Dict[str, None] = {}
        self.paths: Dict[str, None] = {}
        self.environment: Dict[str, Optional[str]] = {}
        #: variables set or removed in the probe (settings.py's redirects): no inputs
        self.written: Set[str] = set()
        #: the setup's code looked at every variable: one that appears is a change too
        self.environment_complete = False
        self.volatile: Optional[str] = None
        self.seeded = False
        self.active = False
        self.started_ns = 0

    def start(self) -> None:
        """Record from now on (the wrappers are installed once per process)."""
        import importlib

        self.started_ns = time.time_ns()
        self._install()
        # the directories the import system listed before are listed again, while recording
        sys.path_importer_cache.clear()
        importlib.invalidate_caches()
        self.active = True

    def stop(self) -> None:
        """Record no more."""
        self.active = False

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Record nothing of what the block does (the probe's own work between builds)."""
        active, self.active = self.active, False
        try:
            yield
        finally:
            self.active = active

    def _install(self) -> None:
        # wrappers of the functions that read, not an audit hook: Python calls a hook on every event, every id() too
        # (400,000 in a build of 1,000 jobs), which cost a third of the build
        import builtins
        import io
        import tokenize

        system = sys.modules[os.name]  # posix: what the import system calls os.listdir through
        builtins.open = io.open = tokenize._builtin_open = self._opening(io.open)  # type: ignore[attr-defined]
        io.open_code = sys.modules["_io"].open_code = self._opening(io.open_code)  # how imports read modules
        os.open = system.open = self._opening(os.open, flags=True)
        for name in ("listdir", "scandir"):
            for module in (os, system):
                setattr(module, name, self._listing(getattr(module, name)))
        for name in ("stat", "lstat", "access", "readlink"):
            setattr(os, name, self._watching_paths(getattr(os, name)))
        self._wrap_pathlib()
        self._wrap_sources_of_chance()
        os.environ.__class__ = _recording_environment(type(os.environ), self, os.fsdecode)
        if hasattr(os, "environb"):
            os.environb.__class__ = _recording_environment(type(os.environb), self, os.fsdecode)

    def _wrap_pathlib(self) -> None:
        import io
        import pathlib

        accessor = getattr(pathlib, "_NormalAccessor", None)  # Python < 3.11 took them before we could wrap them
        if accessor is not None:
            for name in ("stat", "lstat", "listdir", "scandir", "readlink"):
                if hasattr(accessor, name):
                    setattr(accessor, name, staticmethod(getattr(os, name)))
            accessor.open = staticmethod(os.open if sys.version_info < (3, 10) else io.open)

    def _wrap_sources_of_chance(self) -> None:
        """The clock, randomness, the process id, processes and connections, when the setup's code uses them."""
        import random
        import socket
        import subprocess

        for name in _CLOCK:
            if hasattr(time, name):
                reads = lambda args, n=name: _reads_clock(n, args)  # noqa: E731
                setattr(time, name, self._volatile_when(getattr(time, name), "reads the clock", reads))
        for name in _RANDOM:
            if hasattr(random, name):
                draw = getattr(random, name)
                setattr(random, name, self._volatile_when(draw, "draws random numbers", lambda _: not self.seeded))
        random.seed = self._seeding(random.seed)
        unseeded = "makes a generator of random numbers without a seed"
        random.Random.__init__ = self._volatile_when(  # type: ignore[method-assign]
            random.Random.__init__, unseeded, lambda args: len(args) < 2 or args[1] is None
        )
        for name in ("random", "getrandbits", "randbytes"):  # what secrets and SystemRandom draw through
            if hasattr(random.SystemRandom, name):
                method = getattr(random.SystemRandom, name)
                setattr(random.SystemRandom, name, self._volatile_when(method, "draws random numbers", lambda _: True))
        for module, name in ((os, "urandom"), (os, "getrandom"), (random, "_urandom")):  # secrets draws via the last
            if hasattr(module, name):
                setattr(module, name, self._volatile_when(getattr(module, name), "draws random bytes", lambda _: True))
        for name in ("getpid", "getppid", "getpgrp", "times", "uname", "cpu_count", "sched_getaffinity"):
            if hasattr(os, name):
                what = "reads the state of its process or machine"
                setattr(os, name, self._volatile_when(getattr(os, name), what, lambda _: True))
        socket.gethostname = self._volatile_when(socket.gethostname, "reads the host name", lambda _: True)
        subprocess.Popen.__init__ = self._volatile_when(  # type: ignore[method-assign]
            subprocess.Popen.__init__, "runs a process", lambda _: True
        )
        for name in ("system", "posix_spawn", "posix_spawnp", "fork", "execv", "execve"):
            if hasattr(os, name):
                setattr(os, name, self._volatile_when(getattr(os, name), "runs a process", lambda _: True))
        connect = socket.socket.connect
        socket.socket.connect = self._volatile_when(connect, "opens a connection", lambda _: True)  # type: ignore

    def _opening(self, function: Callable[..., Any], flags: bool = False) -> Callable[..., Any]:
        """:param flags: the function takes os.open's flags (else open's mode) after the file"""

        def watched(*args: Any, **kwargs: Any) -> Any:
            file = args[0] if args else kwargs.get("path" if flags else "file")
            if self.active and file is not None and not isinstance(file, int):
                how = args[1] if len(args) > 1 else kwargs.get("flags" if flags else "mode", 0 if flags else "r")
                if flags and kwargs.get("dir_fd") is not None:
                    self._volatile("opens a file relative to a directory descriptor")
                # read: opened to read (also for update); made anew, or only written, it cannot have been read
                if _reads(how) if flags else "r" in how or "+" in how:
                    opened = os.path.abspath(os.fsdecode(file))
                    if machine_state(opened):
                        self._volatile(f"reads {opened}")  # the process's or the machine's state, or chance
                    for path in source_of(opened):
                        self.files.setdefault(path, None)
            return function(*args, **kwargs)

        return watched

    def _listing(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            path = args[0] if args else kwargs.get("path")
            if self.active and isinstance(path, int):
                self._volatile("lists a directory by its descriptor")
            elif self.active:
                self.directories.setdefault(os.path.abspath(os.fsdecode(path if path is not None else ".")), None)
            return function(*args, **kwargs)

        return watched

    def _watching_paths(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """Any code's look at a path while the configs load (Sisyphus's own at work/ for ``available()``, too)."""

        def watched(*args: Any, **kwargs: Any) -> Any:
            path = args[0] if args else kwargs.get("path")
            if self.active and path is not None and not isinstance(path, int):
                self.paths.setdefault(os.path.abspath(os.fsdecode(path)), None)
            return function(*args, **kwargs)

        return watched

    def setup_caller(self) -> Optional[str]:
        """:return: ``file:line`` of the nearest caller outside the standard library when it is the setup's own code"""
        frame = sys._getframe(1)
        while frame is not None:
            name = frame.f_code.co_filename
            if name.startswith("<frozen importlib"):
                return None  # the standard library importing a module of its own (secrets makes a SystemRandom)
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

    def _volatile(self, what: str) -> None:
        where = self.setup_caller()
        if where and self.volatile is None:
            self.volatile = f"{where} {what}"

    def _volatile_when(
        self, function: Callable[..., Any], what: str, reads: Callable[[Sequence[Any]], bool]
    ) -> Callable[..., Any]:
        """:param reads: whether a call with these arguments reads what no record can hold"""

        def watched(*args: Any, **kwargs: Any) -> Any:
            if self.active and self.volatile is None and reads(args) and not _for_a_log_record():
                self._volatile(what)  # sispin's own git, the standard library's `uname`: not the setup's
            return function(*args, **kwargs)

        return watched

    def _seeding(self, seed: Callable[..., Any]) -> Callable[..., Any]:
        def watched(*args: Any, **kwargs: Any) -> Any:
            if self.active and self.setup_caller():
                # random.seed() without a value seeds from the system's randomness
                self.seeded = bool(args and args[0] is not None or kwargs.get("a") is not None)
            return seed(*args, **kwargs)

        return watched

    def ledger(self, sets_read: Sequence[str], prefixes: Sequence[str] = ()) -> Dict[str, Any]:
        """
        :param sets_read: the experiment sets the configs asked for (their lock sections are inputs too)
        :param prefixes: environment variables whose every variable with that name prefix is an input (Sisyphus
            takes a setting from each ``SIS_*`` variable)
        :return: {"files": {path: signature} (bytecode: the setup's own), "absent": [files tried but missing],
            "directories": {path: digest of its entries}, "paths": {path: state}, "environment": {name: value or
            None}, "prefixes": [...], "sets": [...], "volatile": why no record can vouch for the build, or None}
        """
        self._site_inputs()
        read = [path for path in self.files if not path.endswith(".pyc") or self._own(bytecode_source(path))]
        own = {path for path in read if self._own(path)}
        files = {path: file_signature(path, path in own) for path in read if not self._ignored(path)}
        looked_at = [(path, False) for path in self.paths] + [(path, True) for path in self.directories]
        return {
            "files": {path: signature for path, signature in files.items() if signature is not None},
            "absent": sorted(path for path, signature in files.items() if signature is None),
            "directories": {path: listing(path) for path in self.directories if not self._ignored(path)},
            "paths": {path: path_state(path) for path in self.paths if not self._ignored(path)},
            "environment": {
                name: value
                for name, value in {
                    **self.environment,
                    **{name: value for name, value in os.environ.items() if name.startswith(tuple(prefixes))},
                }.items()
                if name not in self.written
            },
            # every variable when the setup's code looked at them all ("" is the prefix of every name)
            "prefixes": sorted(prefixes) + ([""] if self.environment_complete else []),
            "written": sorted(self.written),
            "sets": sorted(sets_read),
            "volatile": self.volatile
            or self._clock_in_source(own)
            or racy_input(files, looked_at, self.started_ns, self._settled),
        }

    def _site_inputs(self) -> None:
        """Read before the recording: every module's file (an extension's is loaded), site dirs, their .pth files."""
        import site

        for module in list(sys.modules.values()):
            file = getattr(module, "__file__", None)
            if isinstance(file, str):
                for path in source_of(os.path.abspath(file)):
                    self.files.setdefault(path, None)
        for directory in [*site.getsitepackages(), site.getusersitepackages()]:
            self.directories.setdefault(directory, None)
            try:
                for name in os.listdir(directory):
                    if name.endswith(".pth"):
                        self.files.setdefault(os.path.join(directory, name), None)
            except OSError:
                continue

    def _own(self, path: str) -> bool:
        return self._setup_code(path) and not self._ignored(path)

    def _setup_code(self, path: str) -> bool:
        return (
            path.startswith(self.own_places) and not path.startswith(self.foreign) and "-packages" + os.sep not in path
        )

    def _settled(self, path: str) -> bool:
        """:return: whether path is no input, or lies in a checkout below a :attr:`made_whole` directory"""
        return self._ignored(path) or any(
            path.startswith(place) and path[len(place) :].count(os.sep) >= 1 for place in self.made_whole
        )

    def _ignored(self, path: str) -> bool:
        return machine_state(path) or any(
            path == ignored or path.startswith(os.path.join(ignored, "")) for ignored in self.ignored
        )

    def _clock_in_source(self, own: Sequence[str]) -> Optional[str]:
        for path in sorted(own):
            if path.endswith(".py"):
                try:
                    with open(path, "rb") as handle:
                        if _DATETIME_CLOCK.search(handle.read()):
                            return f"{os.path.relpath(path, self.root)} may read the clock (datetime)"
                except OSError:
                    continue
        return None


def _reads(flags: int) -> bool:
    """:return: whether os.open with these flags may read what was there"""
    return (flags & os.O_ACCMODE) != os.O_WRONLY and (flags & _CREATED) != _CREATED


def _for_a_log_record() -> bool:
    """
    :return: whether the logging package asks (a log record's time, process id, thread: they reach the log, never
        the graph; i6_core logs while configs load)
    """
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename == __file__:
        frame = frame.f_back
    return frame is not None and frame.f_code.co_filename.startswith(_LOGGING)


def _reads_clock(function: str, args: Sequence[Any]) -> bool:
    """:return: whether time.function(*args) reads the clock (given a time, localtime and the like do not)"""
    if function in ("localtime", "gmtime", "ctime"):
        return not args or args[0] is None
    if function == "asctime":
        return not args
    if function == "strftime":
        return len(args) < 2
    return True


def _recording_environment(base: type, recorder: InputRecorder, name_of: Callable[[Any], str]) -> type:
    """
    os.environ's (or os.environb's) class, recording each variable the setup's own code reads, and every variable
    when it looks at them all (copies them for a process, counts them); a variable set or removed while the configs
    load (settings.py does) before anything read it is no input: the code that set it is. One read first stays an
    input, with the value it had then.
    """

    class RecordingEnvironment(base):  # type: ignore[misc, valid-type]
        def __getitem__(self, key: Any) -> Any:
            # a variable set before it was read holds the value the setup gave it: what set it is the input
            reading = recorder.active and name_of(key) not in recorder.written and recorder.setup_caller()
            try:
                value = super().__getitem__(key)
            except KeyError:
                if reading:
                    recorder.environment.setdefault(name_of(key), None)
                raise
            if reading:
                recorder.environment.setdefault(name_of(key), name_of(value))
            return value

        def __setitem__(self, key: Any, value: Any) -> None:
            self._written(key)
            super().__setitem__(key, value)

        def __delitem__(self, key: Any) -> None:
            self._written(key)
            super().__delitem__(key)

        def _written(self, key: Any) -> None:
            # read before it is written (os.environ.setdefault, os.environ[x] = os.environ.get(x, d)): the value it
            # had when read stays an input
            if recorder.active and name_of(key) not in recorder.environment:
                recorder.written.add(name_of(key))

        def _all_read(self) -> None:
            if recorder.active and recorder.setup_caller():
                for key in list(super().__iter__()):
                    recorder.environment.setdefault(name_of(key), name_of(super().__getitem__(key)))
                recorder.environment_complete = True

        def __iter__(self) -> Any:
            self._all_read()
            return super().__iter__()

        def __len__(self) -> int:
            self._all_read()
            return super().__len__()

        def __repr__(self) -> str:
            self._all_read()
            return super().__repr__()

    return RecordingEnvironment
