"""
A job's content key, in the probe's process: a digest of what its record (:mod:`sispin.graph.probe.records`) is made
of, less the ids of the jobs that create its paths, and those ids in the order met. Two jobs of one key have records
that differ in those ids alone. A build compared with a kept graph (an upgrade's dry run, ``pin status --changes``)
sends the key in place of the record of each job whose key a kept job has: a move of a pin renews every job below
it, most with their content as it was, and the parent makes their records from the kept ones
(:class:`sispin.graph.explain.RecordsCompared`).

Python's pickler walks the arguments in C and calls back only for what is no builtin value (a path, a job, an
object), so a key costs a fifth of a record's walk. The pickle holds at least what the record shows: each builtin
value as itself, a path by its record's text less its creator's id, a job, function, class or enum by its record's
text, an object by the state the record walks. So one key never stands for two records (of one relocation: a build
that relocates gets no keys). What the record shows only by Sisyphus's bytes (an object with no state to walk), or
what the pickler cannot take, gives no key, and the record is sent.
"""

from __future__ import annotations

__all__ = ["content_of", "records_and_contents"]

import enum
import hashlib
import inspect
import io
import pickle
from dataclasses import replace
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Set, Tuple, Union

from sispin.graph.probe.adapter import hashes_as_job, is_path, object_state
from sispin.graph.probe.records import hashed_arguments, leaf_text, recorded
from sispin.graph.probe.schema import Content, JobRecord


def _named(*parts: Any) -> None:
    """What a key's pickle names a leaf or an object by (the pickle is hashed, never read back)."""


class _Uncertain(Exception):
    """The record shows a value by Sisyphus's bytes (which hold creators' ids): no key stands for it."""


class _KeyPickler(pickle.Pickler):
    """A pickler whose pickle holds what the record shows, less the ids of the paths' creators (noted aside)."""

    def __init__(self, file: io.BytesIO) -> None:
        super().__init__(file, protocol=4)
        #: the id of each path's creating job, in the order met
        self.creators: List[str] = []
        #: the path objects met (their ``id()``)
        self.paths: Set[int] = set()
        #: the ids of the jobs held as values (the record names them in its text: they are part of the key)
        self.held: Set[str] = set()

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is complex or obj is _named:
            return NotImplemented  # a scalar (its own reduction holds its value), or the name of all else
        if is_path(obj):
            text, creator = leaf_text(obj)
            if creator is not None:
                self.creators.append(creator)
            self.paths.add(id(obj))
            return _named, (text,)
        if hashes_as_job(obj) or isinstance(obj, enum.Enum) or inspect.isfunction(obj) or inspect.isclass(obj):
            text, creator = leaf_text(obj)
            if creator is not None:
                self.held.add(creator)
            return _named, (text,)
        kind = f"{type(obj).__module__}.{type(obj).__qualname__}"
        if isinstance(obj, dict):  # a subclass of dict: the record walks its items
            return _named, (kind,), list(obj.items())
        state = object_state(obj)
        if isinstance(state, dict) and not state:
            raise _Uncertain(kind)
        # the state last (pickle's BUILD): the object is in the pickle's memo by then, so a cycle back to it ends
        return _named, (kind,), state


def content_of(job: Any) -> Optional[Tuple[Content, FrozenSet[int]]]:
    """
    :return: the job's content key, and the path objects its pickle met (their ``id()``: where the record shows each
        of them as a leaf, no creator's id hides in a digest); None when no key can be made
    """
    file = io.BytesIO()
    pickler = _KeyPickler(file)
    try:
        pickler.dump((f"{type(job).__module__}.{type(job).__qualname__}", sorted(hashed_arguments(job).items())))
    except Exception:  # noqa: BLE001 - recipe and config objects: what cannot be pickled gets its record instead
        return None
    if pickler.held & set(pickler.creators):
        return None  # a job held as a value creates a path too: the parent could not tell which leaves to give ids
    # which creators are one job: a key stands for jobs whose paths come from as many jobs, in the same places
    first: Dict[str, int] = {}
    pattern = [first.setdefault(creator, len(first)) for creator in pickler.creators]
    digest = hashlib.sha256(file.getvalue() + repr(pattern).encode()).hexdigest()[:32]
    return Content(digest, pickler.creators), frozenset(pickler.paths)


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
        if contents is True and key is not None and shown == key[1]:
            leaves = made.args if made.detail is None else made.detail
            named = {path: arg.job for path, arg in leaves.items() if arg.job}
            keys[job.job_id()] = replace(key[0], leaves=named)
    return records, keys
