"""
The whole state of a job, in the probe's process: every value it holds, hashed or not — its arguments as given,
every attribute of the job object (its environment for ``set_env`` among them), and inside each object everything
its ``__dict__`` holds, also what its ``__sis_state__`` or its own hash leave out of the hash. Two builds of one id
must agree on all of it (:func:`job_states`), and every job a job holds in any of it uses that job
(:func:`referenced_jobs`).
"""

from __future__ import annotations

__all__ = ["requested_states", "job_states", "referenced_jobs", "held_jobs", "References"]

import enum
import functools
import hashlib
import inspect
from typing import Any, Dict, Iterator, List, Optional, Sequence, Set, Tuple, Union

from sispin.graph.probe.adapter import (
    input_paths,
    internal_names,
    is_job,
    is_path,
    job_arguments,
    job_id,
    object_state,
    own_environment,
)


def _attributes(job: Any) -> Dict[str, Any]:
    """
    The job's state by name: its arguments as given, its attributes but Sisyphus's bookkeeping, and the environment
    it was given with ``set_env`` (what settings.py sets for every job, the store's redirects among them, is the
    setup's, not the job's).
    """
    attributes = {"(arguments)": job_arguments(job)}
    internal = internal_names()  # is_internal's names, looked up here without a call per attribute (26 per job)
    attributes.update((name, value) for name, value in vars(job).items() if name not in internal)
    environment = own_environment(job)
    if environment is not None:
        attributes["(environment)"] = environment
    return attributes


@functools.cache
def _slot_names(cls: type) -> Tuple[str, ...]:
    """
    Every slot of the class and of its bases (a subclass's ``__slots__`` names only its own; a dataclass with
    ``slots=True`` that inherits keeps the base's fields in the base's slots), private names mangled as Python does.
    """
    names: List[str] = []
    for owner in cls.__mro__:
        declared = owner.__dict__.get("__slots__", ())
        for slot in (declared,) if isinstance(declared, str) else declared:
            if slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):
                slot = f"_{owner.__name__.lstrip('_')}{slot}"
            names.append(slot)
    return tuple(dict.fromkeys(names))


def _members(value: Any) -> Iterator[Tuple[Any, Any]]:
    """(key, item) of a container, or (name, value) of an object's whole state (never through its __sis_state__)."""
    if type(value) in (list, tuple, set, frozenset):
        yield from ((None, item) for item in value)
    elif isinstance(value, dict):
        yield from value.items()
    else:
        state = getattr(value, "__dict__", None)
        slots = [slot for slot in _slot_names(type(value)) if hasattr(value, slot)]
        if isinstance(state, dict):
            yield from state.items()
        yield from ((slot, getattr(value, slot)) for slot in slots)
        reduced = _reduced(value)
        yield from reduced
        if not isinstance(state, dict) and not slots and not reduced:
            # an object of C (a numpy array, a date): what Sisyphus hashes of it is all there is to see
            whole = object_state(value)
            if whole is not value:
                yield "", whole


#: the builtin types whose content a subclass holds outside its __dict__ (``class Text(str)``)
_BUILTIN_CONTENT = (str, bytes, bytearray, int, float, complex, list, tuple, set, frozenset)


def _reduced(value: Any) -> List[Tuple[str, Any]]:
    """
    What pickle would keep of an object beyond its __dict__ and slots — the content of a subclass of str or list, a
    ``functools.partial``'s function and arguments, a bound method's object: whatever its class reduces itself to
    (``__reduce_ex__``), for the objects that define a reduction or subclass a builtin; nothing when it cannot be
    reduced.
    """
    kind = type(value)
    custom = kind.__reduce_ex__ is not object.__reduce_ex__ or kind.__reduce__ is not object.__reduce__
    if not (custom or isinstance(value, _BUILTIN_CONTENT)):
        return []
    try:
        reduction = value.__reduce_ex__(4)
    except Exception:  # noqa: BLE001 - an object pickle cannot take: what Sisyphus sees of it stays
        return []
    if not isinstance(reduction, tuple):
        return []  # a global's name: the object is that global
    parts = list(reduction[1:3]) + [list(part) if part is not None else None for part in reduction[3:5]]
    names = ("(reduce args)", "(reduce state)", "(reduce items)", "(reduce mapping)")
    return [(name, part) for name, part in zip(names, parts) if part is not None]


#: the types whose values hold nothing further (most of what a state holds): told apart before any attribute is read
_SCALARS = (type(None), int, float, bool, str, complex, bytes)
#: the builtin containers: never a path, a job or a leaf
_CONTAINERS = (list, tuple, set, frozenset, dict)


def _leaf(value: Any) -> bool:
    return (
        type(value) in _SCALARS
        or inspect.isfunction(value)
        or inspect.isclass(value)
        or inspect.ismodule(value)
        or isinstance(value, enum.Enum)
    )


def referenced_jobs(job: Any) -> List[Any]:
    """:return: every other job whose object or path the job holds anywhere in its state"""
    found: Dict[int, Any] = {}
    seen: Set[int] = set()
    stack: List[Any] = list(_attributes(job).values()) + input_paths(job)
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind in _SCALARS or id(value) in seen:
            continue
        seen.add(id(value))
        if kind in _CONTAINERS:
            if kind is dict:  # as _members walks it: each value, then its key (the order jobs are found in)
                for key, item in value.items():
                    stack.append(item)
                    if type(key) not in _SCALARS:
                        stack.append(key)
            else:
                stack.extend(value)
            continue
        if _leaf(value):
            continue
        if is_path(value):
            creator = value.__dict__.get("creator")
            if creator is not None and creator is not job:
                found[id(creator)] = creator
            continue
        if is_job(value):
            if value is not job:
                found[id(value)] = value
            continue
        for key, item in _members(value):
            stack.append(item)
            if key is not None and not _leaf(key):
                stack.append(key)
    return list(found.values())


class References:
    """The jobs each job holds (:func:`referenced_jobs`), walked once per job: only once the configs have loaded."""

    def __init__(self) -> None:
        self._held: Dict[int, List[Any]] = {}

    def of(self, job: Any) -> List[Any]:
        """:return: every other job whose object or path the job holds anywhere in its state"""
        if id(job) not in self._held:
            self._held[id(job)] = referenced_jobs(job)
        return self._held[id(job)]


def held_jobs(jobs: Sequence[Any], references: References) -> List[Any]:
    """:return: the jobs, and every job they hold anywhere in their state, directly or through each other"""
    found = {id(job): job for job in jobs}
    stack = list(jobs)
    while stack:
        for held in references.of(stack.pop()):
            if id(held) not in found:
                found[id(held)] = held
                stack.append(held)
    return list(found.values())


def requested_states(
    jobs: Sequence[Any], wanted: Union[bool, List[str], None], values_left: bool
) -> Optional[Dict[str, Dict[str, str]]]:
    """
    :param wanted: a request's "states": every job's, none, or only those of these ids (a kept graph's jobs: a job
        the other graph does not hold is compared with none)
    :param values_left: pinned values left the graph (the check compares every job's state then)
    :return: the states asked for (see :func:`job_states`), or None
    """
    if not wanted and not values_left:
        return None
    if isinstance(wanted, list) and not values_left:
        compared = set(wanted)
        return job_states([job for job in jobs if job_id(job) in compared])
    return job_states(jobs)


def job_states(jobs: Sequence[Any]) -> Dict[str, Dict[str, str]]:
    """
    :return: job id -> attribute -> digest of its whole value, hashed or not (see the module docstring): two builds
        of one id must agree on all of them
    """
    return {
        job_id(job): {
            name: hashlib.sha256(_state_bytes(value, set())).hexdigest()[:16]
            for name, value in _attributes(job).items()
        }
        for job in jobs
    }


def _state_bytes(value: Any, active: Set[int]) -> bytes:
    """Like Sisyphus's sis_hash_helper, but every object is walked through its whole state, not what it hashes."""
    kind = type(value).__qualname__.encode()
    if type(value) in _SCALARS:
        return kind + b":" + repr(value).encode()
    if type(value) in _CONTAINERS:
        return _container_bytes(value, kind, active)
    if is_path(value):
        creator = value.__dict__.get("creator")
        who = job_id(creator) if is_job(creator) else repr(creator)
        return f"Path({who}, {value.path!r}, {value.hash_overwrite!r})".encode()
    if is_job(value):
        return f"Job({job_id(value)})".encode()
    if _leaf(value):
        name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None) or repr(value)
        return f"{kind.decode()}:{getattr(value, '__module__', '')}.{name}".encode()
    return _container_bytes(value, kind, active)


def _container_bytes(value: Any, kind: bytes, active: Set[int]) -> bytes:
    """What :func:`_state_bytes` makes of a container or an object: its members' bytes, each once (a cycle cut)"""
    if id(value) in active:
        return b"(cycle)"
    active.add(id(value))
    try:
        if type(value) in (set, frozenset):
            parts = sorted(_state_bytes(item, active) for item in value)
        elif isinstance(value, dict):
            parts = sorted(_state_bytes(key, active) + b"=" + _state_bytes(item, active) for key, item in value.items())
        elif type(value) in (list, tuple):
            parts = [_state_bytes(item, active) for item in value]
        else:
            parts = sorted(f"{name}=".encode() + _state_bytes(item, active) for name, item in _members(value))
    finally:
        active.discard(id(value))
    data = kind + b"(" + b",".join(parts) + b")"
    return hashlib.sha256(data).digest() if len(data) > 4096 else data
