"""
The probe's side of the moved-commit check, in the probe's process (with Sisyphus): does every job that uses a
pinned commit get another id when that commit moves, however the commit reached it?

- :func:`pinned_clones`: every CloneGitRepositoryJob of the graph that clones one of the set's pins: a locked
  repository (its URL up to spelling) at a commit the set pins, whoever built it (``exp.repo()``, a hand-written
  call, a helper given ``exp.commit()``).
- :func:`blind_jobs`: the ids of every job using those clones, recomputed with the clones' ids moved (the hash walk
  is Sisyphus's own: a job's ``hash()``, objects' ``_sis_hash``, paths through their creator's id and their
  hash_overwrite); a job that keeps its id is blind to the commit.
- :mod:`sispin.graph.values` records where config code took a pinned value out of the graph as a plain value:
  what is built from such a value can only be checked by building the set once more with the pins moved.
- :class:`Awaits`: how far async configs got (``await tk.async_run(...)`` passes only when the jobs are finished), so
  that the moved build gets as far.
- :func:`move_hand_written_clones`: in that moved build, hand-written clones of a pin clone the moved commit too.
"""

from __future__ import annotations

__all__ = [
    "set_pins",
    "pinned_clones",
    "blind_jobs",
    "CreationArguments",
    "Awaits",
    "waiting_configs",
    "move_hand_written_clones",
]

import contextlib
import inspect
import os
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from sispin.clonejob import PARAMETERS, is_clone, job_class
from sispin.graph.state import referenced_jobs
from sispin.lock.urls import same_repository

#: sispin's own code: its reads of a pinned value are its own business
_SISPIN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def set_pins(set_name: str) -> List[Tuple[str, str]]:
    """(url, commit) of each of the set's pins."""
    from sispin.sets import experiment_set

    exp = experiment_set(set_name)
    return [(exp.lockfile.repos[repo].url, pin.commit) for repo, pin in exp.spec.pins.items()]


def pinned_clones(jobs: Sequence[Any], set_name: str) -> List[Any]:
    """:return: the jobs that clone one of the set's pins (a locked repository, up to spelling, at its pinned commit)"""
    pins = set_pins(set_name)
    return [
        job
        for job in jobs
        if is_clone(job)
        and any(job._sis_kwargs.get("commit") == commit and same_repository(job.url, url) for url, commit in pins)
    ]


def _users(jobs: Sequence[Any], roots: Sequence[Any]) -> List[Any]:
    """The jobs that use the roots' outputs (through any path among their arguments), directly or not, in an order
    where every job comes after the jobs whose outputs it uses."""
    users_of: Dict[int, List[Any]] = {}
    for job in jobs:
        # everything the job holds, not only what Sisyphus extracts as inputs: an object may hide a path from
        # extract_paths (its __sis_state__), a path may be set on the job after it was created
        for used in referenced_jobs(job):
            users_of.setdefault(id(used), []).append(job)
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


#: stands for an argument that a job's hash() took out of the arguments it was given
_TAKEN = object()


class CreationArguments:
    """
    What a job's own ``hash()`` took out of (or replaced in) the arguments it was given, as i6_core's
    ``del parsed_args["mini_task"]`` does: Sisyphus keeps the arguments as ``hash()`` left them, so an id computed
    again from them needs those back (and a fresh dict each time, for hash() changes it again).
    """

    def __init__(self) -> None:
        self.taken: Dict[Tuple[type, str], Dict[str, Any]] = {}

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Record, while configs load, what each job class's hash() takes from the arguments of each id it makes."""
        from sisyphus.job import Job

        original = Job.__dict__["_sis_hash_static"]
        taken = self.taken

        def hash_static(cls: Any, parsed_args: Dict[str, Any]) -> str:
            given = dict(parsed_args)
            result = original.__func__(cls, parsed_args)
            changed = {key: value for key, value in given.items() if parsed_args.get(key, _TAKEN) is not value}
            if changed:
                taken.setdefault((cls, result), changed)
            return result

        Job._sis_hash_static = classmethod(hash_static)
        try:
            yield
        finally:
            Job._sis_hash_static = original

    def recomputed(self, job: Any) -> str:
        """The job's id computed now from its arguments, as Sisyphus computes it when the job is created."""
        prefix, digest = job._sis_id_cache.rsplit(".", 1)
        arguments = {**job._sis_kwargs, **self.taken.get((type(job), digest), {})}
        return f"{prefix}.{type(job)._sis_hash_static(arguments)}"


def blind_jobs(jobs: Sequence[Any], pinned: Sequence[Any], creation: CreationArguments) -> Dict[str, str]:
    """
    A job that hashes a path with a hash_overwrite is blind too (the guard names it by its overwrite, bound to the
    commit as an alias or not).

    :param jobs: every job of the graph
    :param pinned: the clones of the set's pins
    :param creation: what the jobs' own hash() took from their arguments while the configs loaded
    :return: job id -> ``blind`` for each job that uses a pinned clone (directly or through other jobs, through any
        path among its arguments, hashed or not) and keeps its id when the clones' ids move; ``changed`` for one
        whose arguments no longer give its id (changed after it was created), which cannot be checked this way
    """
    users = _users(jobs, pinned)
    saved = {id(job): job._sis_id_cache for job in [*pinned, *users]}
    baseline = {id(job): creation.recomputed(job) for job in users}
    moved: Dict[int, str] = {}
    try:
        for clone in pinned:
            clone._sis_id_cache = f"{clone._sis_id_cache}-moved"
        for job in users:  # inputs first: each user hashes the moved ids of the jobs before it
            moved[id(job)] = job._sis_id_cache = creation.recomputed(job)
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
