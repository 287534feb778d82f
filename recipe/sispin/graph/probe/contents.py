"""
A job's content key, in the probe's process: a digest of what its record (:mod:`sispin.graph.probe.records`) is made
of but its paths (where each stands, and which of them are one object), and each path in the order met: the id of
the job that creates it and its record's text (its creator's class, its file, its hash_overwrite). Two jobs of one
digest have records that differ in their paths alone.
A build compared with a kept graph (an upgrade's dry run, ``pin status --changes``) sends the key in place of the
record of each job whose digest a kept job has: a move of a pin renews every job below it, most with their content
as it was but their inputs' ids, and the jobs that take the clone's path itself differ in that path alone (its
commit, and an alias the move drops). The parent tells from the keys what differs, and makes a record from a kept
one where it needs one (:class:`sispin.graph.explain.RecordsCompared`).

Python's pickler walks the arguments in C and calls back only for what is no builtin value (a path, a job, an
object), so a key costs a fraction of a record's walk. The pickle holds at least what the record shows: each
builtin value as itself, a job, function, class or enum by its record's text, an object by the state the record
walks; the paths stand beside it. So one digest never stands for two records that differ elsewhere (of one
relocation: a build that relocates gets no keys). What the record shows only by Sisyphus's bytes (an object with no
state to walk), or what the pickler cannot take, gives no key, and the record is sent; so does a job whose record
does not show every path as a leaf of its own (a path in a set, below a container cut, or inside an object shown by
its bytes: a digest there holds the creator's id).
"""

from __future__ import annotations

__all__ = ["content_of", "records_and_contents"]

import collections
import enum
import hashlib
import inspect
import io
import pickle
from dataclasses import replace
from typing import Any, Callable, Counter, Dict, List, Optional, Tuple, Union

from sispin.graph.probe.adapter import hashes_as_job, is_path, object_state
from sispin.graph.probe.records import has_own_hash, hashed_arguments, leaf_text, recorded
from sispin.graph.probe.schema import Content, JobRecord


def _named(*parts: Any) -> None:
    """What a key's pickle names a leaf or an object by (the pickle is hashed, never read back)."""


class _Uncertain(Exception):
    """The record shows a value by Sisyphus's bytes (which hold creators' ids): no key stands for it."""


class _KeyPickler(pickle.Pickler):
    """A pickler whose pickle holds what the record shows but its paths (noted aside, in the order met)."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=4)
        # no memo: every occurrence of a path is met, each of which the record must show as a leaf (a cycle ends in
        # pickle's ValueError: no key)
        self.fast = True
        #: each path met: [the id of the job that creates it (None: none), its record's text]
        self.paths: List[List[Optional[str]]] = []
        #: the path objects met (their ``id()``) -> their first place in paths
        self.places: Dict[int, int] = {}
        #: the path objects met (their ``id()``) -> how often
        self.met: Counter[int] = collections.Counter()

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is complex or obj is _named:
            return NotImplemented  # a scalar (its own reduction holds its value), or the name of all else
        if is_path(obj):
            text, creator = leaf_text(obj)
            first = self.places.setdefault(id(obj), len(self.paths))
            self.met[id(obj)] += 1
            self.paths.append([creator, text])
            # which occurrences are one object is content (a leaf's place stands for all of them): [p, p] is not [a, b]
            return _named, ("path", first)
        if hashes_as_job(obj) or isinstance(obj, enum.Enum) or inspect.isfunction(obj) or inspect.isclass(obj):
            return _named, (leaf_text(obj)[0],)
        kind = leaf_text(type(obj))[0]  # its class, named as a record names a class
        if isinstance(obj, dict):  # a subclass of dict: the record walks its items
            return _named, (kind,), list(obj.items())
        state = object_state(obj)
        if isinstance(state, dict) and not state:
            raise _Uncertain(kind)
        return _named, (kind,), state


def content_of(job: Any) -> Optional[Tuple[Content, Dict[int, int], Counter[int]]]:
    """
    :return: the job's content key, the path objects its pickle met (their ``id()``) with their first places in the
        key, and how often each was met; None when no key can be made
    """
    file = io.BytesIO()
    pickler = _KeyPickler(file)
    try:
        pickler.dump((leaf_text(type(job))[0], sorted(hashed_arguments(job).items())))
    except Exception:  # noqa: BLE001 - recipe and config objects: what cannot be pickled gets its record instead
        return None
    digest = hashlib.sha256(file.getvalue()).hexdigest()[:32]
    return Content(digest, pickler.paths, has_own_hash(job)), pickler.places, pickler.met


def records_and_contents(
    jobs: List[Any], seen: Callable[[str], str], contents: Union[bool, List[str]]
) -> Tuple[Dict[str, JobRecord], Dict[str, Content]]:
    """
    :param jobs: the jobs to record
    :param seen: how a leaf's text is recorded (:func:`~sispin.graph.probe.records.relocating`)
    :param contents: True: each job's key beside its record, where the record shows every path the key met as a
        leaf (none hides in a digest of a container cut, which would hold its creator's id: the graph is kept for
        comparing); the keys of a kept graph: a job of one of them gets its key in place of its record; False:
        records only
    :return: job id -> record, job id -> content key
    """
    known = frozenset(contents) if isinstance(contents, list) else frozenset()
    records: Dict[str, JobRecord] = {}
    keys: Dict[str, Content] = {}
    for job in jobs:
        key = content_of(job) if contents else None
        if key is not None and key[0].digest in known:
            keys[job.job_id()] = key[0]
            continue
        made, shown = recorded(job, seen)
        records[job.job_id()] = made
        # every occurrence of a path the pickle met is a leaf of the record (the detailed one, by which a live graph
        # is compared): none hides in a set's text, a dict key's label, a cut's or an object's digest
        if contents is True and key is not None and collections.Counter(shown.values()) == key[2]:
            keys[job.job_id()] = replace(key[0], leaves={where: key[1][path] for where, path in shown.items()})
    return records, keys
