"""
The probe's side of the moved-commit check, in the probe's process (with Sisyphus): does every job that uses a
pinned commit get another id when that commit moves, however the commit reached it?

- :func:`pinned_clones`: every CloneGitRepositoryJob of the graph that clones one of the set's pins: a locked
  repository (its URL up to spelling) at a commit the set pins, whoever built it (``exp.repo()``, a hand-written
  call, a helper given ``exp.commit()``).
- :func:`blind_jobs`: the ids of every job using those clones, recomputed with the clones' ids moved (the hash walk
  is Sisyphus's own: a job's ``hash()``, objects' ``_sis_hash``, paths through their creator's id and their
  hash_overwrite); a job that keeps its id is blind to the commit.
- :class:`ValueUses`: where config code took a pinned value out of the graph as a plain value (``exp.commit()``,
  ``exp.checkout()``, ``exp.imported()``, a clone path as a string, a clone job's url/commit): what is built from
  such a value can only be checked by building the set once more with the pins moved.
- :class:`Awaits`: how far async configs got (``await tk.async_run(...)`` passes only when the jobs are finished), so
  that the moved build gets as far.
- :func:`move_hand_written_clones`: in that moved build, hand-written clones of a pin clone the moved commit too.
- :func:`job_states`: a digest of each job's whole state, hashed or not, per attribute, to compare two builds.
"""

from __future__ import annotations

__all__ = [
    "pinned_clones",
    "blind_jobs",
    "ValueUses",
    "Awaits",
    "waiting_configs",
    "move_hand_written_clones",
    "job_states",
]

import contextlib
import enum
import hashlib
import inspect
import os
import sys
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from sispin.clonejob import CLASS_NAME, PARAMETERS, job_class
from sispin.lock.urls import same_repository

#: sispin's own code: its reads of a pinned value are its own business
_SISPIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _pins(set_name: str) -> List[Tuple[str, str]]:
    """(url, commit) of each of the set's pins."""
    from sispin.sets import experiment_set

    exp = experiment_set(set_name)
    return [(exp.lockfile.repos[repo].url, pin.commit) for repo, pin in exp.spec.pins.items()]


def pinned_clones(jobs: Sequence[Any], set_name: str) -> List[Any]:
    """:return: the jobs that clone one of the set's pins (a locked repository, up to spelling, at its pinned commit)"""
    pins = _pins(set_name)
    return [
        job
        for job in jobs
        if type(job).__name__ == CLASS_NAME
        and any(job._sis_kwargs.get("commit") == commit and same_repository(job.url, url) for url, commit in pins)
    ]


def _users(jobs: Sequence[Any], roots: Sequence[Any]) -> List[Any]:
    """The jobs that use the roots' outputs (through any path among their arguments), directly or not, in an order
    where every job comes after the jobs whose outputs it uses."""
    users_of: Dict[int, List[Any]] = {}
    for job in jobs:
        for path in job._sis_inputs:
            if path.creator is not None:
                users_of.setdefault(id(path.creator), []).append(job)
    found: Dict[int, Any] = {}
    stack = list(roots)
    while stack:
        for user in users_of.get(id(stack.pop()), ()):
            if id(user) not in found:
                found[id(user)] = user
                stack.append(user)
    position = {id(job): index for index, job in enumerate(_topological(jobs))}
    return sorted(found.values(), key=lambda job: position[id(job)])


def _topological(jobs: Sequence[Any]) -> List[Any]:
    """The jobs, each after the creators of its inputs (Sisyphus's graph has no cycles)."""
    done: Set[int] = set()
    order: List[Any] = []
    for start in jobs:
        stack = [(start, False)]
        while stack:
            job, expanded = stack.pop()
            if id(job) in done:
                continue
            if expanded:
                done.add(id(job))
                order.append(job)
                continue
            stack.append((job, True))
            stack.extend((path.creator, False) for path in job._sis_inputs if path.creator is not None)
    return order


def _recomputed(job: Any) -> str:
    """The job's id computed now from its arguments, as Sisyphus computes it when the job is created."""
    prefix = job._sis_id_cache.rsplit(".", 1)[0]
    return f"{prefix}.{type(job)._sis_hash_static(job._sis_kwargs)}"


def blind_jobs(jobs: Sequence[Any], pinned: Sequence[Any]) -> Dict[str, str]:
    """
    A job that hashes a path with a hash_overwrite is blind too (the guard names it by its overwrite, bound to the
    commit as an alias or not).

    :param jobs: every job of the graph
    :param pinned: the clones of the set's pins
    :return: job id -> ``blind`` for each job that uses a pinned clone (directly or through other jobs, through any
        path among its arguments, hashed or not) and keeps its id when the clones' ids move; ``changed`` for one
        whose arguments no longer give its id (changed after it was created), which cannot be checked this way
    """
    users = _users(jobs, pinned)
    saved = {id(job): job._sis_id_cache for job in [*pinned, *users]}
    baseline = {id(job): _recomputed(job) for job in users}
    moved: Dict[int, str] = {}
    try:
        for clone in pinned:
            clone._sis_id_cache = f"{clone._sis_id_cache}-moved"
        for job in users:  # inputs first: each user hashes the moved ids of the jobs before it
            moved[id(job)] = job._sis_id_cache = _recomputed(job)
    finally:
        for job in [*pinned, *users]:
            job._sis_id_cache = saved[id(job)]
    verdicts = {}
    for job in users:
        if baseline[id(job)] != saved[id(job)]:
            verdicts[saved[id(job)]] = "changed"
        elif moved[id(job)] == baseline[id(job)]:
            verdicts[saved[id(job)]] = "blind"
    return verdicts


def _caller(frame: Any) -> str:
    """
    :param frame: the frame that called a patched method
    :return: ``file:line`` of the setup's code behind that call (past Sisyphus's helpers); "" when the caller is
        sispin, or Sisyphus building the graph (only its toolkit's functions act for the config that calls them)
    """
    import sisyphus
    import sisyphus.toolkit

    sisyphus_dir = os.path.dirname(os.path.abspath(sisyphus.__file__)) + os.sep
    toolkit = os.path.abspath(sisyphus.toolkit.__file__)
    file = os.path.abspath(frame.f_code.co_filename)
    if file.startswith(_SISPIN) or (file.startswith(sisyphus_dir) and file != toolkit):
        return ""
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith((_SISPIN, sisyphus_dir)):
        frame = frame.f_back
    return f"{os.path.relpath(frame.f_code.co_filename)}:{frame.f_lineno}" if frame is not None else ""


class ValueUses:
    """
    Records, while configs load, where their code takes a pinned value out of the graph as a plain value.

    :param set_name: the set being built
    """

    def __init__(self, set_name: str):
        self.pins = _pins(set_name)
        self.found: List[Dict[str, str]] = []

    def add(self, what: str, repo: Optional[str] = None) -> None:
        """
        :param what: the value that left, recorded with the setup's code that took it (two frames up)
        :param repo: the repository whose checkout or code it is, for ``exp.checkout()`` and ``exp.imported()``
        """
        where = _caller(sys._getframe(2))
        if where:  # Sisyphus and sispin read values of their own: only the setup's code counts
            entry = {"what": what, "where": where, "repo": repo}
            if entry not in self.found:
                self.found.append(entry)

    def pinned(self, job: Any) -> bool:
        kwargs = job.__dict__.get("_sis_kwargs") or {}
        return any(kwargs.get("commit") == c and same_repository(kwargs.get("url", ""), u) for u, c in self.pins)

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Patch the places a value leaves through, for the block (the configs' loading)."""
        from sisyphus.job_path import Path

        from sispin.sets import ExperimentSet

        uses = self
        patches: List[Tuple[Any, str, Any]] = []

        def api(name: str) -> Any:
            method = getattr(ExperimentSet, name)

            def recorded(self: Any, repo: str, *args: Any, **kwargs: Any) -> Any:
                uses.add(f"exp.{name}({repo!r}) of set {self.name!r}", None if name == "commit" else repo)
                return method(self, repo, *args, **kwargs)

            return recorded

        def as_text(name: str) -> Any:
            method = getattr(Path, name)

            def recorded(self: Any, *args: Any, **kwargs: Any) -> Any:
                creator = self.__dict__.get("creator")
                if type(creator).__name__ == CLASS_NAME and uses.pinned(creator):
                    uses.add(f"{name}() of a path of {creator._sis_id_cache}")
                return method(self, *args, **kwargs)

            return recorded

        clone = job_class()
        attribute_of = clone.__getattribute__

        def read(self: Any, name: str) -> Any:
            if name in ("url", "commit", "branch", "patches", "files_to_checkout") and uses.pinned(self):
                uses.add(f"{name} of {self.__dict__.get('_sis_id_cache')}")
            return attribute_of(self, name)

        for name in ("commit", "checkout", "imported"):
            patches.append((ExperimentSet, name, api(name)))
        for name in ("get_path", "rel_path", "__str__", "__fspath__"):
            if name in vars(Path) or hasattr(Path, name):
                patches.append((Path, name, as_text(name)))
        patches.append((clone, "__getattribute__", read))
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


class Awaits:
    """
    How many ``await tk.async_run(...)`` each async config got past (they pass when the awaited jobs are finished).

    :param allowed: in a moved build, per config, how many awaits to pass without waiting: as many as the real
        build passed (the moved jobs are never finished); None in the real build
    """

    def __init__(self, allowed: Optional[Mapping[str, int]] = None):
        self.allowed = allowed
        self.passed: Dict[str, int] = {}

    @contextlib.contextmanager
    def counting(self) -> Iterator[None]:
        from sisyphus import async_workflow, graph
        from sisyphus import toolkit as tk
        from sisyphus.loader import config_manager

        original = async_workflow.async_run
        awaits = self

        async def async_run(obj: Any) -> None:
            config = str(config_manager.current_config)
            if awaits.allowed is not None and awaits.passed.get(config, 0) < awaits.allowed.get(config, 0):
                graph.graph.add_target(graph.OutputTarget(name="async_run", inputs=obj))
            else:
                await original(obj)
            awaits.passed[config] = awaits.passed.get(config, 0) + 1

        async_workflow.async_run = tk.async_run = async_run
        try:
            yield
        finally:
            async_workflow.async_run = tk.async_run = original


def waiting_configs() -> List[str]:
    """:return: the configs whose ``py()`` still waits for unfinished jobs (their graph is not complete yet)"""
    from sisyphus.loader import config_manager

    return sorted(
        str(config) for config, task in config_manager._config_readers if task is not None and not task.done()
    )


def move_hand_written_clones(remap: Sequence[Tuple[str, str, str]]) -> None:
    """
    In a moved build: a CloneGitRepositoryJob of a pin, however it is built, clones the moved commit.

    :param remap: (url, pinned commit, moved commit) of each of the set's pins
    """
    clone = job_class()
    signature = inspect.signature(clone.__init__)
    singleton = type(clone)
    create = singleton.__call__

    def call(cls: Any, *args: Any, **kwargs: Any) -> Any:
        if cls is clone:
            try:
                bound = signature.bind(None, *args, **{k: v for k, v in kwargs.items() if k != "sis_tags"})
            except TypeError:  # Sisyphus says what is wrong with the call
                return create(cls, *args, **kwargs)
            url, commit = bound.arguments.get("url"), bound.arguments.get("commit")
            for locked, pinned, moved in remap:
                if commit == pinned and isinstance(url, str) and same_repository(url, locked):
                    names = [name for name, _ in PARAMETERS]
                    position = names.index("commit")
                    if len(args) > position:
                        args = (*args[:position], moved, *args[position + 1 :])
                    else:
                        kwargs = {**kwargs, "commit": moved}
                    break
        return create(cls, *args, **kwargs)

    singleton.__call__ = call


def job_states(jobs: Sequence[Any]) -> Dict[str, Dict[str, str]]:
    """
    :return: job id -> attribute -> digest of its whole value, hashed or not (the arguments as given, every
        attribute of the job object but Sisyphus's own ``_sis_*``): two builds of one id must agree on all of them
    """
    states = {}
    for job in jobs:
        attributes = {"(arguments)": job._sis_kwargs}
        attributes.update((name, value) for name, value in vars(job).items() if not name.startswith("_sis_"))
        states[job._sis_id_cache] = {
            name: hashlib.sha256(_state_bytes(value, set())).hexdigest()[:16] for name, value in attributes.items()
        }
    return states


def _state_bytes(value: Any, active: Set[int]) -> bytes:
    """Like Sisyphus's sis_hash_helper, but every object is walked through its whole state, not its _sis_hash."""
    from sisyphus.hash import get_object_state

    kind = type(value).__qualname__.encode()
    if value is None or type(value) in (int, float, bool, str, complex, bytes):
        return kind + b":" + repr(value).encode()
    if getattr(value, "_sis_path", False) is True and not isinstance(value, type):
        creator = value.__dict__.get("creator")
        who = creator._sis_id_cache if hasattr(creator, "_sis_id_cache") else repr(creator)
        return f"Path({who}, {value.path!r}, {value.hash_overwrite!r})".encode()
    if hasattr(value, "_sis_id_cache"):
        return f"Job({value._sis_id_cache})".encode()
    if inspect.isfunction(value) or inspect.isclass(value) or isinstance(value, enum.Enum):
        return (
            f"{kind.decode()}:{getattr(value, '__module__', '')}.{getattr(value, '__qualname__', repr(value))}".encode()
        )
    if id(value) in active:
        return b"(cycle)"
    active.add(id(value))
    try:
        if type(value) in (list, tuple):
            parts = [_state_bytes(item, active) for item in value]
        elif type(value) in (set, frozenset):
            parts = sorted(_state_bytes(item, active) for item in value)
        elif isinstance(value, dict):
            parts = sorted(_state_bytes(key, active) + b"=" + _state_bytes(item, active) for key, item in value.items())
        else:
            parts = [_state_bytes(get_object_state(value), active)]
    finally:
        active.discard(id(value))
    data = kind + b"(" + b",".join(parts) + b")"
    return hashlib.sha256(data).digest() if len(data) > 4096 else data
