"""
The probe's side of the moved-commit check, in the probe's process (with Sisyphus): does every job that uses a
pinned commit get another id when that commit moves, however the commit reached it?

- :func:`pinned_clones`: every CloneGitRepositoryJob of the graph that clones one of the set's pins: a locked
  repository (its URL up to spelling) at a commit the set pins, whoever built it (``exp.repo()``, a hand-written
  call, a helper given ``exp.commit()``).
- :func:`blind_jobs`: the ids of every job using those clones, recomputed with the clones' ids moved (the hash walk
  is Sisyphus's own: a job's ``hash()``, objects' own hashes, paths through their creator's id and their
  hash_overwrite); a job that keeps its id is blind to the commit.
- :mod:`sispin.graph.probe.values` records where config code took a pinned value out of the graph as a plain value:
  what is built from such a value can only be checked by building the set once more with the pins moved.
- :class:`Awaits`: how far async configs got (``await tk.async_run(...)`` passes only when the jobs are finished), so
  that the moved build gets as far.
- :func:`hand_written_clones_moved`: in that moved build, hand-written clones of a pin clone the moved commit too.
"""

from __future__ import annotations

__all__ = [
    "set_pins",
    "pinned_clones",
    "blind_jobs",
    "CreationArguments",
    "Awaits",
    "hand_written_clones_moved",
]

import contextlib
import hashlib
import inspect
import io
import pickle
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from sispin.clonejob import class_parameters, is_clone, job_class
from sispin.graph.probe.adapter import (
    current_config,
    hashes_itself,
    input_paths,
    is_job,
    job_arguments,
    job_id,
    set_job_id,
)
from sispin.graph.probe.adapter.watches import (
    async_run_wrapped,
    construction_wrapped,
    creation_watched,
    hashing_wrapped,
    recomputed_digest,
)
from sispin.graph.probe.state import References
from sispin.graph.probe.values import carries_calls
from sispin.lock.urls import same_repository


def set_pins(set_name: str) -> List[Tuple[str, str]]:
    """(url, commit) of each of the set's pins."""
    from sispin.sets import experiment_set

    exp = experiment_set(set_name)
    return [(exp.lockfile.repos[repo].url, pin.commit) for repo, pin in exp.spec.pins.items()]


def pinned_clones(jobs: Sequence[Any], set_name: str) -> Dict[str, List[Any]]:
    """
    :return: per pin of the set (its repository entry; entries of one URL at one commit count as one, the first
        named), the jobs that clone it: the locked repository, up to spelling, at the pinned commit
    """
    from sispin.sets import experiment_set

    exp = experiment_set(set_name)
    found: Dict[str, List[Any]] = {}
    for repo, pin in exp.spec.pins.items():
        url = exp.lockfile.repos[repo].url
        if any(
            same_repository(url, exp.lockfile.repos[other].url) and exp.spec.pins[other].commit == pin.commit
            for other in found
        ):
            continue
        found[repo] = [
            job
            for job in jobs
            if is_clone(job) and job_arguments(job).get("commit") == pin.commit and same_repository(job.url, url)
        ]
    return {repo: clones for repo, clones in found.items() if clones}


def _users(jobs: Sequence[Any], roots: Sequence[Any], references: References) -> List[Any]:
    """The jobs that use the roots' outputs (through any path among their arguments), directly or not, in an order
    where every job comes after the jobs whose outputs it uses."""
    users_of: Dict[int, List[Any]] = {}
    for job in jobs:
        # everything the job holds, not only what Sisyphus extracts as inputs: an object may hide a path from
        # extract_paths (its __sis_state__), a path may be set on the job after it was created
        for used in references.of(job):
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
            stack.extend((path.creator, False) for path in input_paths(job) if path.creator is not None)
    return order


#: stands for an argument that a job's hash() took out of the arguments it was given
_TAKEN = object()


class CreationArguments:
    """
    What each job was created with, recorded while the configs load:

    - what a job's own ``hash()`` took out of (or replaced in) the arguments it was given, as i6_core's
      ``del parsed_args["mini_task"]`` does: Sisyphus keeps the arguments as ``hash()`` left them, so an id computed
      again from them needs those back (and a fresh dict each time, for hash() changes it again);
    - a fingerprint of the arguments the job keeps (Sisyphus's copy, before the job's ``__init__`` sees them): while
      they pickle to the same bytes, they still give the job its id, and computing it again is not needed to know.
    """

    def __init__(self) -> None:
        self.taken: Dict[Tuple[type, str], Dict[str, Any]] = {}
        self.prints: Dict[int, Optional[bytes]] = {}

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        """Record, while configs load, what each job class's hash() takes, and each new job's arguments."""
        taken, prints = self.taken, self.prints

        def hashed(cls: Any, given: Dict[str, Any], parsed_args: Dict[str, Any], digest: str) -> None:
            changed = {key: value for key, value in given.items() if parsed_args.get(key, _TAKEN) is not value}
            if changed:
                taken.setdefault((cls, digest), changed)

        def created(job: Any, parsed_args: Dict[str, Any]) -> None:
            prints[id(job)] = _fingerprint(parsed_args)

        with creation_watched(hashed, created):
            yield

    def unchanged(self, job: Any) -> bool:
        """Whether the job still holds the arguments it was created with (then they give its id)."""
        created = self.prints.get(id(job))
        return created is not None and _fingerprint(job_arguments(job)) == created

    def recomputed(self, job: Any) -> str:
        """The job's id computed now from its arguments, as Sisyphus computes it when the job is created."""
        prefix, digest = job_id(job).rsplit(".", 1)
        arguments = {**job_arguments(job), **self.taken.get((type(job), digest), {})}
        return f"{prefix}.{recomputed_digest(job, arguments)}"


class _Pickler(pickle.Pickler):
    """Pickles arguments with every job as its id: what a job holds is its own."""

    def reducer_override(self, obj: Any) -> Any:
        if is_job(obj):
            return str, (job_id(obj),)
        return NotImplemented


def _fingerprint(arguments: Dict[str, Any]) -> Optional[bytes]:
    """:return: a digest of the arguments' whole state; None when they do not pickle (then ids are computed again)"""
    buffer = io.BytesIO()
    try:
        _Pickler(buffer, protocol=4).dump(arguments)
    except Exception:  # anything may refuse to pickle (a lambda, a lock, an object's own __reduce__)
        return None
    return hashlib.sha256(buffer.getvalue()).digest()


def blind_jobs(
    jobs: Sequence[Any], pinned: Mapping[str, Sequence[Any]], creation: CreationArguments, references: References
) -> Tuple[Dict[str, List[str]], List[str]]:
    """
    Every job that uses a pin's clones must get another id when that pin's commit moves, each pin on its own: a job
    that hashes one pin could otherwise hide that it uses another where no hash sees it. A job that hashes a path
    with a hash_overwrite is blind too (the guard names it by its overwrite, bound to the commit as an alias or not).

    :param jobs: every job of the graph
    :param pinned: per pin, the clones of it (:func:`pinned_clones`)
    :param creation: what the jobs' own hash() took from their arguments while the configs loaded
    :param references: the jobs each job holds
    :return: job id -> the pins it keeps its id for although it uses them (directly or through other jobs, through
        any path among its arguments, hashed or not); and the jobs using a pin whose arguments no longer give their
        id (changed after they were created), which cannot be checked this way
    """
    blind: Dict[str, List[str]] = {}
    users = {repo: _users(jobs, clones, references) for repo, clones in pinned.items()}
    # several pins: what holds no id is walked once for all of their passes
    with _memoized_hashing() if len(pinned) > 1 else contextlib.nullcontext():
        # a job whose arguments changed since it got its id: the id is not made of them, moving shows nothing
        changed = {
            id(job): job
            for job in {id(job): job for group in users.values() for job in group}.values()
            if not creation.unchanged(job) and creation.recomputed(job) != job_id(job)
        }
        for repo, clones in pinned.items():
            saved = {id(job): job_id(job) for job in [*clones, *users[repo]]}
            moved: Dict[int, str] = {}
            try:
                for clone in clones:
                    set_job_id(clone, f"{job_id(clone)}-moved")
                for job in users[repo]:  # inputs first: each user hashes the moved ids of the jobs before it
                    moved[id(job)] = creation.recomputed(job)
                    set_job_id(job, moved[id(job)])
            finally:
                for job in [*clones, *users[repo]]:
                    set_job_id(job, saved[id(job)])
            for job in users[repo]:
                if id(job) not in changed and moved[id(job)] == saved[id(job)]:
                    blind.setdefault(saved[id(job)], []).append(repo)
    return blind, sorted(job_id(job) for job in changed.values())


@contextlib.contextmanager
def _memoized_hashing() -> Iterator[None]:
    """
    While ids are computed again (after the configs loaded: nothing changes any more but the ids set aside), keep
    what Sisyphus's hash walk makes of every container that holds no path, job or object hashing itself: those bytes
    cannot depend on an id. A network dict is then walked once for all pins, not once per pin and pass. The objects
    are kept alive meanwhile, so that no other object can take the address of one remembered.
    """
    remembered: Dict[int, Tuple[Any, bytes]] = {}
    holds_ids = [False]  # per container under way: whether something in it hashes an id

    def wrap(original: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
        def helper(obj: Any) -> bytes:
            kind = type(obj)
            if kind in _LEAVES:
                return original(obj)
            if hashes_itself(obj):
                holds_ids[-1] = True
                return original(obj)
            known = remembered.get(id(obj))
            if known is not None:
                return known[1]
            holds_ids.append(False)
            try:
                result = original(obj)
            finally:
                holds = holds_ids.pop()
            if holds:
                holds_ids[-1] = True
            elif kind is not tuple:  # tuples are mostly a dict's items, made anew for each walk
                remembered[id(obj)] = (obj, result)
            return result

        return helper

    with hashing_wrapped(wrap):
        yield


#: values Sisyphus hashes by their repr: nothing to remember
_LEAVES = frozenset((str, int, float, bool, bytes, type(None), complex))


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
        from sisyphus import graph

        awaits = self

        def wrap(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
            async def async_run(obj: Any) -> None:
                config = current_config()
                if awaits.allowed is not None and awaits.passed.get(config, 0) < awaits.allowed.get(config, 0):
                    graph.graph.add_target(graph.OutputTarget(name="async_run", inputs=obj))
                else:
                    await original(obj)
                awaits.passed[config] = awaits.passed.get(config, 0) + 1

            return async_run

        with async_run_wrapped(wrap):
            yield


@contextlib.contextmanager
def hand_written_clones_moved(remap: Sequence[Tuple[str, str, str]]) -> Iterator[None]:
    """
    In a moved build, while configs load: a CloneGitRepositoryJob of a pin, however it is built, clones the moved
    commit.

    :param remap: (url, pinned commit, moved commit) of each of the set's pins
    """
    clone = job_class()
    signature = inspect.signature(clone.__init__)

    def wrap(create: Callable[..., Any]) -> Callable[..., Any]:
        @carries_calls
        def call(cls: Any, *args: Any, **kwargs: Any) -> Any:
            if cls is clone:
                try:
                    bound = signature.bind(None, *args, **{k: v for k, v in kwargs.items() if k != "sis_tags"})
                except TypeError:  # Sisyphus says what is wrong with the call
                    return create(cls, *args, **kwargs)
                url, commit = bound.arguments.get("url"), bound.arguments.get("commit")
                for locked, pinned, moved in remap:
                    if commit == pinned and isinstance(url, str) and same_repository(url, locked):
                        names = [name for name, _ in class_parameters()]
                        position = names.index("commit")
                        if len(args) > position:
                            args = (*args[:position], moved, *args[position + 1 :])
                        else:
                            kwargs = {**kwargs, "commit": moved}
                        break
            return create(cls, *args, **kwargs)

        return call

    with construction_wrapped(wrap):
        yield
