"""
The places in Sisyphus that the probe watches while configs load, each while a context lasts: job creation (after a
class hashed its arguments, before a job's ``__init__``) and construction, the hash walk of every value, a path's
hash and each assignment of its ``hash_overwrite``, and ``tk.async_run``. Part of the adapter: the variant a version
needs is chosen by what that version has.

Only the probe's own process imports this module (it imports Sisyphus, lazily).
"""

from __future__ import annotations

__all__ = [
    "creation_watched",
    "recomputed_digest",
    "construction_wrapped",
    "hashing_wrapped",
    "async_run_wrapped",
    "path_hashing_watched",
    "overwrites_watched",
]

import contextlib
import sys
from typing import Any, Callable, Dict, Iterator

from sispin.graph.probe.adapter import path_class


@contextlib.contextmanager
def creation_watched(
    hashed: Callable[[Any, Dict[str, Any], Dict[str, Any], str], None], created: Callable[[Any, Dict[str, Any]], None]
) -> Iterator[None]:
    """
    While the context lasts, tell of each job's creation: ``hashed(cls, given, parsed_args, digest)`` after the
    class hashed its arguments (given: a copy from before, for a job's own ``hash()`` may change them), and
    ``created(job, parsed_args)`` before the job's ``__init__`` sees them.
    """
    from sisyphus.job import Job

    original, init = Job.__dict__["_sis_hash_static"], Job._sis_init

    def hash_static(cls: Any, parsed_args: Dict[str, Any]) -> str:
        given = dict(parsed_args)
        digest = original.__func__(cls, parsed_args)
        hashed(cls, given, parsed_args, digest)
        return digest

    def sis_init(job: Any, args: Any, kwargs: Any, parsed_args: Dict[str, Any]) -> None:
        created(job, parsed_args)
        init(job, args, kwargs, parsed_args)

    Job._sis_hash_static, Job._sis_init = classmethod(hash_static), sis_init
    try:
        yield
    finally:
        Job._sis_hash_static, Job._sis_init = original, init


def recomputed_digest(job: Any, arguments: Dict[str, Any]) -> str:
    """:return: the digest part of the id Sisyphus gives a job of the job's class created with these arguments"""
    return type(job)._sis_hash_static(arguments)


@contextlib.contextmanager
def _replaced(owner: Any, name: str, wrap: Callable[[Any], Any]) -> Iterator[None]:
    """While the context lasts, ``owner.name`` is ``wrap(what it was)``; after it, what it was."""
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, wrap(original))
    try:
        yield
    finally:
        setattr(owner, name, original)


def construction_wrapped(
    wrap: Callable[[Callable[..., Any]], Callable[..., Any]],
) -> contextlib.AbstractContextManager[None]:
    """
    While the context lasts, every job construction (``SomeJob(...)``, which Sisyphus turns into one job object per
    id) goes through ``wrap(create)(cls, *args, **kwargs)``, create being Sisyphus's own.
    """
    from sisyphus.job import JobSingleton

    return _replaced(JobSingleton, "__call__", wrap)


def hashing_wrapped(
    wrap: Callable[[Callable[[Any], bytes]], Callable[[Any], bytes]],
) -> contextlib.AbstractContextManager[None]:
    """While the context lasts, Sisyphus's hash walk of each value goes through ``wrap(original)(value)``."""
    from sisyphus import hash as sisyphus_hash

    return _replaced(sisyphus_hash, "sis_hash_helper", wrap)


@contextlib.contextmanager
def async_run_wrapped(wrap: Callable[[Callable[[Any], Any]], Callable[[Any], Any]]) -> Iterator[None]:
    """While the context lasts, a config's ``await tk.async_run(obj)`` awaits ``wrap(original)(obj)``."""
    from sisyphus import async_workflow
    from sisyphus import toolkit as tk

    original = async_workflow.async_run
    async_workflow.async_run = tk.async_run = wrap(original)
    try:
        yield
    finally:
        async_workflow.async_run = tk.async_run = original


def path_hashing_watched(noted: Callable[[Any], None]) -> contextlib.AbstractContextManager[None]:
    """While the context lasts, call ``noted(path)`` each time Sisyphus hashes a path (before it does)."""

    def wrap(original: Callable[[Any], bytes]) -> Callable[[Any], bytes]:
        def hashing(path: Any) -> bytes:
            noted(path)
            return original(path)

        return hashing

    return _replaced(path_class(), "_sis_hash", wrap)


@contextlib.contextmanager
def overwrites_watched(assigned: Callable[[Any, Any, Any], None]) -> Iterator[None]:
    """
    Call ``assigned(path, value, frame)`` after each assignment of a path's ``hash_overwrite`` (frame: the
    assigning code's), while the context lasts. Sisyphus since a5b9c46 (2022-07) sets it through a property;
    before it, it is a plain attribute, which a property on the class takes over for the while.
    """
    owner = path_class()
    existing = owner.__dict__.get("hash_overwrite")
    if isinstance(existing, property):
        store, read = existing.fset, existing.fget
    else:

        def store(path: Any, value: Any) -> None:
            vars(path)["hash_overwrite"] = value

        def read(path: Any) -> Any:
            return vars(path).get("hash_overwrite")

    def setter(path: Any, value: Any) -> None:
        store(path, value)
        assigned(path, value, sys._getframe(1))

    owner.hash_overwrite = property(read, setter)
    try:
        yield
    finally:
        if existing is None:
            del owner.hash_overwrite
        else:
            owner.hash_overwrite = existing
