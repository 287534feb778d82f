"""
Where config code takes a pinned value out of the graph as a plain value, in the probe's process (with Sisyphus):
the lock's values (``exp.commit()``, ``exp.clone_kwargs()``, ``exp.checkout()``, ``exp.imported()``, ``exp.spec``,
``exp.lockfile``), a clone path as text (``get_path()``, ``str()``, ``os.fspath()``, also through Sisyphus's own
helpers such as ``DelayedFormat.get()``, a copy or a pickle), a clone job's arguments or id (``.commit``, ``.url``,
the arguments Sisyphus keeps, ``vars()``, ``job_id()``), and the value of a ``tk.Variable`` computed by a job that
uses a pin (read after an ``await``: in the moved build that job has not run, and its variable reads otherwise).
What is built from such a value no hash follows, so the set is built once more with the pins moved
(:mod:`sispin.graph.moved`) and every job that keeps its id must keep its state. And where config code builds each
clone job, for the messages about it.
"""

from __future__ import annotations

__all__ = ["ValueUses", "CloneSites", "carries_calls", "taken_at"]

import contextlib
import os
import sys
import sysconfig
from types import CodeType
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple, TypeVar

from sispin.clonejob import is_clone, job_class
from sispin.graph.probe.adapter import JOB_INTERNALS, SISPIN_DIR, job_arguments, job_id, sisyphus_dir
from sispin.graph.probe.adapter.watches import construction_wrapped
from sispin.graph.probe.schema import ValueUse
from sispin.lock.urls import same_repository

#: the code of the probe's wrappers of Sisyphus functions (see :func:`carries_calls`)
_CARRIERS: Set[CodeType] = set()
_F = TypeVar("_F", bound=Callable[..., Any])
#: the standard library's code (copy, pickle: they only carry a call on)
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"]) + os.sep
#: Sisyphus's modules (and single functions) that act for the config that calls them: its toolkit, DelayedFormat
#: and the try_get it evaluates with, the sh() that formats paths into a command, a path's own methods; the rest of
#: Sisyphus reads values for itself while it builds the graph
_HELPERS = ("toolkit.py", "delayed_ops.py", "job_path.py", "tools.py:try_get", "tools.py:sh")
#: what a clone job holds that is the lock's value
_CLONE_VALUES = frozenset(
    {
        "url",
        "commit",
        "branch",
        "patches",
        "files_to_checkout",
        "__dict__",
        "job_id",
        "work_path",
        *JOB_INTERNALS,
    }
)


def carries_calls(function: _F) -> _F:
    """A wrapper the probe puts around a Sisyphus function: :func:`taken_at` looks past it, as past its helpers."""
    _CARRIERS.add(function.__code__)
    _CODE_KINDS.pop(function.__code__, None)
    return function


def taken_at(frame: Any) -> str:
    """
    :param frame: the frame that called a patched method
    :return: ``file:line`` of the setup's code behind that call, found past the standard library, the Sisyphus
        helpers that carry a call on and the probe's own wrappers (several may wrap one function); "" when sispin or
        Sisyphus itself asked (building the graph)
    """
    while frame is not None:
        code = frame.f_code
        kind = _CODE_KINDS.get(code)
        if kind is None:
            kind = _CODE_KINDS[code] = _code_kind(code)
        if kind == _SETUP:
            return f"{os.path.relpath(code.co_filename)}:{frame.f_lineno}"
        if kind == _ASKED_BY_TOOLS:
            return ""
        frame = frame.f_back
    return ""


#: what a frame's code is to :func:`taken_at` (asked on every path made text while the configs load: Sisyphus's own
#: hashing too): code that only carries the call on, sispin or Sisyphus itself, or the setup's code
_CARRIES, _ASKED_BY_TOOLS, _SETUP = range(3)
_CODE_KINDS: Dict[CodeType, int] = {}


def _code_kind(code: CodeType) -> int:
    file = os.path.abspath(code.co_filename)
    if code in _CARRIERS:
        return _CARRIES
    if file.startswith(SISPIN_DIR):
        return _ASKED_BY_TOOLS
    if file.startswith(sisyphus_dir()):
        name = os.path.basename(file)
        return _CARRIES if name in _HELPERS or f"{name}:{code.co_name}" in _HELPERS else _ASKED_BY_TOOLS
    return _CARRIES if file.startswith(_STDLIB) else _SETUP


class ValueUses:
    """
    Records, while configs load, where their code takes a pinned value out of the graph as a plain value.

    :param pins: (url, commit) of the set's pins
    """

    def __init__(self, pins: List[Tuple[str, str]]):
        self.pins = pins
        self.found: List[ValueUse] = []
        self._depends: Dict[int, bool] = {}
        #: (commit, url) of a clone -> whether it is one of the pins: asked on each read of a clone's internals
        self._pinned: Dict[Tuple[str, str], bool] = {}

    def add(self, what: str, where: str, repo: Optional[str] = None, set_name: Optional[str] = None) -> None:
        """
        :param what: the value that left
        :param where: the setup's code that took it (:func:`taken_at`)
        :param repo: the repository whose checkout or code it is, for ``exp.checkout()`` and ``exp.imported()``
        :param set_name: the set whose lock values it is, for the experiment set's API
        """
        entry = ValueUse(what, where, repo, set_name)
        if entry not in self.found:
            self.found.append(entry)

    def settings_checkouts(self) -> None:
        """Record the checkouts asked for before the recording starts: settings.py's, run as Sisyphus loads."""
        from sispin.sets import CHECKED_OUT

        for set_name, repo in CHECKED_OUT:
            self.add(f"exp.checkout({repo!r}) of set {set_name!r} (or imported)", "settings.py", repo, set_name)

    def depends(self, job: Any) -> bool:
        """Whether a job is a clone of a pin or holds one (or a job that does), anywhere in its state."""
        from sispin.graph.probe.state import referenced_jobs

        known = self._depends
        if id(job) not in known:
            known[id(job)] = False  # while it is looked at: a cycle does not depend through itself
            known[id(job)] = (is_clone(job) and self.pinned(job)) or any(
                self.depends(held) for held in referenced_jobs(job)
            )
        return known[id(job)]

    def pinned(self, job: Any) -> bool:
        # past the clone's patched __getattribute__, which asks this
        kwargs = job_arguments(job)
        commit, url = kwargs.get("commit"), kwargs.get("url", "")
        if type(commit) is not str or type(url) is not str:  # not a pin's, and maybe no key
            return False
        known = self._pinned.get((commit, url))
        if known is None:
            known = self._pinned[commit, url] = any(commit == c and same_repository(url, u) for u, c in self.pins)
        return known

    def _patches(self) -> List[Tuple[Any, str, Any]]:
        """(owner, name, replacement) of every place a value leaves through"""
        return self._lock_patches() + self._graph_patches()

    def _lock_patches(self) -> List[Tuple[Any, str, Any]]:
        """The experiment set's API and attributes: the lock's values."""
        from sispin.sets import ExperimentSet

        uses = self
        patches: List[Tuple[Any, str, Any]] = []
        for name in ("commit", "clone_kwargs", "checkout", "imported"):
            method = getattr(ExperimentSet, name)

            def api(self: Any, repo: str, *args: Any, __name: str = name, __method: Any = method, **kwargs: Any) -> Any:
                where = taken_at(sys._getframe(1))
                if where:
                    loaded = repo if __name in ("checkout", "imported") else None
                    uses.add(f"exp.{__name}({repo!r}) of set {self.name!r}", where, loaded, self.name)
                return __method(self, repo, *args, **kwargs)

            patches.append((ExperimentSet, name, api))
        for name in ("spec", "lockfile"):
            slot = ExperimentSet.__dict__[name]

            def attribute(self: Any, __name: str = name, __slot: Any = slot) -> Any:
                where = taken_at(sys._getframe(1))
                if where:
                    uses.add(f"exp.{__name} of set {self.name!r}", where, set_name=self.name)
                return __slot.__get__(self)

            patches.append(
                (ExperimentSet, name, property(attribute, lambda self, value, __slot=slot: __slot.__set__(self, value)))
            )
        return patches

    def _graph_patches(self) -> List[Tuple[Any, str, Any]]:
        """A pinned clone's paths as text, its job's values, variables of jobs that depend on a pin."""
        from sisyphus.job_path import Path, Variable

        uses = self
        patches: List[Tuple[Any, str, Any]] = []
        for name in ("get_path", "rel_path", "__str__", "__fspath__"):
            method = getattr(Path, name)

            def as_text(self: Any, *args: Any, __name: str = name, __method: Any = method, **kwargs: Any) -> Any:
                creator = self.__dict__.get("creator")
                caller = sys._getframe(1)
                # a path of any job built from a pin: its text names that job's id, which moves with the commit; a job
                # that keeps its own output's text (i6_core's ReturnnTrainingJob) holds what moves with its own id
                where = taken_at(caller) if creator is not None else ""
                if where and caller.f_locals.get("self") is creator:
                    where = ""
                if where and uses.depends(creator):
                    uses.add(f"{__name}() of a path of {job_id(creator)}", where)
                return __method(self, *args, **kwargs)

            patches.append((Path, name, as_text))
        clone = job_class()
        attribute_of = clone.__getattribute__
        for name in ("__str__", "__repr__"):
            method = getattr(clone, name)

            def job_as_text(self: Any, __name: str = name, __method: Any = method) -> Any:
                where = taken_at(sys._getframe(1)) if uses.pinned(self) else ""
                if where:
                    uses.add(f"{__name}() of {job_id(self)}", where)
                return __method(self)

            patches.append((clone, name, job_as_text))

        def read(self: Any, name: str) -> Any:
            where = taken_at(sys._getframe(1)) if name in _CLONE_VALUES and uses.pinned(self) else ""
            if where:
                uses.add(f"{name} of {job_id(self)}", where)
            return attribute_of(self, name)

        patches.append((clone, "__getattribute__", read))
        variable_get = Variable.__dict__["get"]

        def value_of(self: Any) -> Any:
            creator = self.__dict__.get("creator")
            where = taken_at(sys._getframe(1)) if creator is not None and uses.depends(creator) else ""
            if where:
                uses.add(f"get() of a variable of {job_id(creator)}", where)
            return variable_get(self)

        patches.append((Variable, "get", value_of))
        return patches

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Patch the places a value leaves through, for the block (the configs' loading)."""
        self.settings_checkouts()
        patches = self._patches()
        originals = [(owner, name, owner.__dict__.get(name)) for owner, name, _ in patches]
        for owner, name, value in patches:
            setattr(owner, name, value)
        try:
            yield
        finally:
            for owner, name, value in reversed(originals):
                if value is None:
                    delattr(owner, name)
                else:
                    setattr(owner, name, value)


class CloneSites:
    """Where config code first built each clone job (``file:line``), for the messages about that clone."""

    def __init__(self) -> None:
        #: clone job id -> file:line
        self.found: Dict[str, str] = {}

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Watch every job construction while configs load."""
        found = self.found

        def wrap(create: Callable[..., Any]) -> Callable[..., Any]:
            @carries_calls
            def call(cls: Any, *args: Any, **kwargs: Any) -> Any:
                job = create(cls, *args, **kwargs)
                # the id as Sisyphus keeps it: job.job_id() would read as config code taking it (a value use)
                if is_clone(job) and not found.get(job_id(job)):
                    found[job_id(job)] = taken_at(sys._getframe(1))
                return job

            return call

        with construction_wrapped(wrap):
            yield
