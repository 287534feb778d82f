"""
Legacy ``hash_overwrite`` values and the aliases that bind them to a commit, in the probe's process (with
Sisyphus).

An existing setup hides commits behind ``out_repository.hash_overwrite = "SOME_NAME"``; its finished work carries
ids made with that name. The lock may bind such a value to exactly one commit of the repository (a pin's
``hash_overwrite``): then the ids stay, and the value stands for that commit until the pin moves. This module
records where config code assigns overwrites on clone outputs (:class:`Assignments`), and catches two constructions
that one alias merges into one job although they differ otherwise (:class:`Collisions`: a value bound to several
commits of a set).
"""

from __future__ import annotations

__all__ = ["Assignments", "Collisions", "bound_aliases", "alias_of"]

import contextlib
import os
import sys
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from sispin.clonejob import is_clone
from sispin.graph.probe.adapter import SISPIN_DIR, job_arguments, job_id, overwrite_of, sisyphus_dir
from sispin.graph.probe.adapter.watches import construction_wrapped, overwrites_watched, path_hashing_watched
from sispin.graph.probe.schema import Assignment
from sispin.lock.urls import same_repository


def bound_aliases(set_name: str) -> List[Tuple[str, str, str, str]]:
    """
    :return: (url, clone, hash_overwrite, repository name) of each of the set's pins that binds one; the clone is
        what the value stands for: its :func:`~sispin.clonejob.clone_identity` as the lock makes it
    """
    from sispin.clonejob import clone_identity
    from sispin.sets import experiment_set

    exp = experiment_set(set_name)
    return [
        (exp.lockfile.repos[repo].url, clone_identity(exp.clone_kwargs(repo)), pin.hash_overwrite, repo)
        for repo, pin in exp.spec.pins.items()
        if pin.hash_overwrite is not None
    ]


def alias_of(clone: Any, aliases: Sequence[Sequence[str]]) -> Optional[str]:
    """
    :param aliases: (url, clone, value, ...) of the bound aliases
    :return: the value the lock binds to this clone (its repository, commit and every other argument), if any
    """
    from sispin.clonejob import clone_identity

    kwargs = job_arguments(clone)
    for url, identity, value, *_ in aliases:
        if clone_identity(kwargs) == identity and same_repository(kwargs.get("url", ""), url):
            return value
    return None


class Assignments:
    """
    Where config code assigns a ``hash_overwrite`` while configs load: on a path a clone job created, and (string
    values only: they hash like an alias) on any other path.
    """

    def __init__(self) -> None:
        self.found: List[Assignment] = []
        #: (value, path) of a string overwrite on a path no clone created -> file:line where it was first given
        self.elsewhere: Dict[Tuple[str, str], str] = {}

    @contextlib.contextmanager
    def recording(self) -> Iterator[None]:
        from sispin.graph.probe.values import taken_at
        from sispin.sets import shown_overwrite

        assignments = self

        def assigned(path: Any, value: Any, caller: Any) -> None:
            creator = path.__dict__.get("creator")
            if value is None:
                return
            overwrite = overwrite_of(path)
            if not is_clone(creator):
                if overwrite[0] is None:
                    where = taken_at(caller)
                    if where:
                        assignments.elsewhere.setdefault((overwrite[1], path.path), where)
                return
            file = os.path.abspath(caller.f_code.co_filename)
            if file.startswith(sisyphus_dir()):
                return  # Sisyphus carries an overwrite on to a copy (join_right): no assignment of the config's
            # sispin's own assignment is exp.repo() applying the alias a pin binds
            where = "pin.toml" if file.startswith(SISPIN_DIR) else taken_at(caller)
            # what exp.repo() does: on the clone's own output, before any job used it
            own = path is vars(creator).get("out_repository") and not getattr(path, "users", None)
            entry = Assignment(job_id(creator), str(shown_overwrite(overwrite)), where, own)
            if entry not in assignments.found:
                assignments.found.append(entry)

        with overwrites_watched(assigned):
            yield


class Collisions:
    """
    Two constructions that Sisyphus merged into one job although they differ but for an alias: a value the set binds
    to two commits (allowed within one set, as adoption needs it) must never make one job stand for both.

    Sisyphus hashes each construction's arguments before it looks for the job: every path it hashes that carries a
    value bound to several commits is noted with the clone behind it. Two constructions of one id that hid other
    clones (or other paths of them) behind such values are two jobs merged; the same clones, the same job. Only those
    paths are looked at: the check costs no hash of its own.

    :param aliases: (url, commit, value) of the set's bound aliases
    """

    def __init__(self, aliases: Sequence[Sequence[str]]):
        self.aliases = aliases
        #: (job id, file:line) of each construction merged into a job built before with other arguments
        self.found: List[Tuple[str, str]] = []
        values = [value for _, _, value, *_ in aliases]
        #: the values bound to several commits: only they can merge two constructions
        self.shared = {value for value in values if values.count(value) > 1}

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        """Watch every job construction while configs load (does nothing unless some value is shared)."""
        if not self.shared:
            yield
            return
        from sispin.graph.probe.values import carries_calls, taken_at
        from sispin.sets import shown_overwrite

        hidden: List[List[Tuple[str, str]]] = []  # per construction under way: the clones behind shared values
        seen: Dict[int, Tuple[Tuple[str, str], ...]] = {}
        collisions = self

        def noting(path: Any) -> None:
            overwrite = overwrite_of(path)
            if overwrite is not None and hidden and str(shown_overwrite(overwrite)) in collisions.shared:
                creator = path.__dict__.get("creator")
                if is_clone(creator) and alias_of(creator, collisions.aliases):
                    hidden[-1].append((job_id(creator), path.path))

        def wrap(create: Callable[..., Any]) -> Callable[..., Any]:
            @carries_calls
            def call(cls: Any, *args: Any, **kwargs: Any) -> Any:
                hidden.append([])
                try:
                    job = create(cls, *args, **kwargs)
                finally:
                    behind = tuple(hidden.pop())
                if seen.setdefault(id(job), behind) != behind:
                    entry = (job_id(job), taken_at(sys._getframe(1)))
                    if entry not in collisions.found:
                        collisions.found.append(entry)
                return job

            return call

        with construction_wrapped(wrap), path_hashing_watched(noting):
            yield
