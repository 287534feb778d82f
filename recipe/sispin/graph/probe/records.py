"""
What a job's id is made of, in the probe's process: every argument path Sisyphus hashes, leaf by leaf, with a
digest of its content (what pin.snapshot.toml keeps and ``pin explain`` compares), and every path object among the
hashed arguments (to find a clone path whose commit a ``hash_overwrite`` hides). Both walks follow Sisyphus's own
(``sis_hash_helper``, ``extract_paths``).
"""

from __future__ import annotations

__all__ = [
    "MAX_LEAVES",
    "MAX_DETAIL_LEAVES",
    "MAX_DEPTH",
    "hashed_arguments",
    "recorded",
    "leaf_text",
    "relocating",
    "hashed_paths",
]

import enum
import hashlib
import inspect
from typing import Any, Callable, Dict, Iterator, List, Optional, Set, Tuple

from sispin.graph.probe.adapter import hash_bytes, hashes_as_job, is_internal, is_path, job_arguments, object_state
from sispin.graph.probe.schema import MAX_VALUE, Arg, JobRecord

#: a job's argument record lists at most this many leaves; below the cut, containers are single digests (what
#: pin.snapshot.toml keeps)
MAX_LEAVES = 300
#: the same for the detailed record of a live graph, which explains a change between two graphs built now (a
#: network dict of thousands of leaves, in the upgrade advisor)
MAX_DETAIL_LEAVES = 20_000
#: and goes at most this deep into nested arguments
MAX_DEPTH = 12


def hashed_arguments(job: Any) -> Dict[str, Any]:
    """
    :return: what Sisyphus hashes of the job (``Job.hash``): its arguments but those at their ``__sis_hash_exclude__``
        value, and ``__sis_version__``
    """
    excluded = type(job).__sis_hash_exclude__
    hashed = {k: v for k, v in job_arguments(job).items() if not (k in excluded and excluded[k] == v)}
    if type(job).__sis_version__ is not None:
        hashed["__sis_version__"] = type(job).__sis_version__
    return hashed


def has_own_hash(job: Any) -> bool:
    """:return: whether the job's class defines its own ``hash()``, so its arguments may not be what it hashes"""
    from sisyphus.job import Job

    return getattr(type(job).hash, "__func__", None) is not Job.hash.__func__


def recorded(job: Any, seen: Callable[[str], str] = str) -> Tuple[JobRecord, Dict[str, int]]:
    """
    What the job's id is made of, leaf by leaf: every argument path Sisyphus hashes (:func:`hashed_arguments`) with
    a digest of its content, its value
    when short, and for a path the id of the job that creates it. A path's digest covers its creator's class, file
    and hash_overwrite but not the creator's id, so that a changed input shows as an input, not as this job's own
    change. Above MAX_LEAVES or MAX_DEPTH, a container is one digest (a cut of the Merkle tree).

    :param seen: how a leaf's text is recorded (a build in a temporary copy of the setup writes the copy's location
        as the setup's own, before the digest, so that a value derived from where the configs run is no change)
    :return: the record, and the path objects its leaves are (their ``id()``) by argument path, of the detailed
        record where there is one
    """
    hashed = hashed_arguments(job)
    records, moved = [], []

    def noted(text: str) -> str:
        written = seen(text)
        if written != text:
            moved.append(True)
        return written

    for budget in (MAX_LEAVES, MAX_DETAIL_LEAVES):
        leaves: Dict[str, Arg] = {}
        paths: List[Tuple[str, int]] = []
        for name, value in sorted(hashed.items()):
            _walk(value, name, 1, leaves, (budget, noted, paths))
        records.append(leaves)
        if len(leaves) < MAX_LEAVES:
            break  # no container was cut for the budget (only for depth, the same in both): the detail is the same
    args, detail = records[0], records[-1]
    made = JobRecord(args, has_own_hash(job), detail if detail != args else None, bool(moved))
    return made, dict(paths)


#: a walk's leaf budget, how it writes a leaf's text, and where it notes the paths it made leaves
_Limits = Tuple[int, Callable[[str], str], List[Tuple[str, int]]]


def _walk(value: Any, where: str, depth: int, leaves: Dict[str, Arg], limits: _Limits) -> None:
    """
    Add value's leaves below ``where`` to leaves, following Sisyphus's sis_hash_helper; each path object made a leaf
    goes to the limits' list, with its argument path (its ``id()``).
    """
    budget, seen, paths = limits
    if type(value) in _SCALARS:  # most leaves (a network dict's): no children, and their record repeats
        leaves[where] = _scalar_leaf(seen(repr(value)))
        return
    children = _children(value) if depth < MAX_DEPTH and len(leaves) < budget else None
    if children is None:
        text, creator = leaf_text(value)
        if is_path(value):
            paths.append((where, id(value)))
        leaves[where] = Arg.of_text(seen(text), creator)
        return
    for suffix, child in children:
        _walk(child, f"{where}{suffix}", depth + 1, leaves, limits)


#: the types of leaves whose text is their repr()
_SCALARS = (type(None), int, float, bool, str, complex)
#: a scalar leaf's text -> its record: the same few texts ('relu', 512, 0.1) fill every layer of every job's config
_SCALAR_LEAVES: Dict[str, Arg] = {}


def _scalar_leaf(text: str) -> Arg:
    """:return: the record of a scalar leaf (no creating job) of that text"""
    leaf = _SCALAR_LEAVES.get(text)
    if leaf is None:
        leaf = Arg.of_text(text)
        if len(text) <= MAX_VALUE:  # a long text (a whole script) is seldom seen twice: not kept for the probe's life
            _SCALAR_LEAVES[text] = leaf
    return leaf


def _children(value: Any) -> Any:
    """(path suffix, child) pairs of a container Sisyphus hashes element by element; None for a leaf."""
    if type(value) is bytes or is_path(value):  # a scalar never gets here (see _walk)
        return None
    if hashes_as_job(value) or isinstance(value, enum.Enum) or inspect.isfunction(value) or inspect.isclass(value):
        return None
    if type(value) in (list, tuple):
        return [(f"[{i}]", item) for i, item in enumerate(value)] or None
    if type(value) in (set, frozenset):
        return None
    if isinstance(value, dict):
        # by label alone: two keys of one label (objects of one state) keep their order, their values uncompared
        labelled = sorted(((_stable_repr(key), item) for key, item in value.items()), key=_first)
        return [(f"[{label}]", item) for label, item in labelled] or None
    # an object with its own hash (i6_core's ReturnnConfig) hashes part of its state: its state is walked all
    # the same, so that a change shows at the attribute that holds it
    try:
        state = object_state(value)
    except TypeError:  # a kind Sisyphus refuses to hash (a list subclass): never part of an id, one leaf here
        return None
    if isinstance(state, dict):
        return [(f".{key}", item) for key, item in _by_key(state)] or None
    return [("", state)]


def _first(pair: Tuple[Any, Any]) -> Any:
    return pair[0]


def _by_key(state: Dict[Any, Any]) -> List[Tuple[Any, Any]]:
    """:return: a state's items by key; keys of kinds that do not compare (an ``__sis_state__`` of 1 and "b") by text"""
    try:
        return sorted(state.items(), key=_first)
    except TypeError:
        return sorted(state.items(), key=lambda pair: _stable_repr(pair[0]))


def _stable_repr(value: Any) -> str:
    """
    repr() without what changes from process to process: an object's default repr names its address, so such
    objects are named by their type and a digest of what Sisyphus hashes of them (same state, same name).
    """
    text = repr(value)
    if " at 0x" not in text:
        return text
    try:
        content = hash_bytes(value)
    except (TypeError, RecursionError):  # no bytes of Sisyphus's to name it by (see _content): its kind alone
        return f"<{type(value).__qualname__}>"
    return f"<{type(value).__qualname__} {hashlib.sha256(content).hexdigest()[:8]}>"


def leaf_text(value: Any) -> Tuple[str, Any]:
    """(canonical text of a leaf that is no scalar, id of the job that creates it when it is a path)"""
    from sispin.sets import shown_overwrite

    if is_path(value):
        creator = value.creator
        overwrite = f" hash_overwrite={shown_overwrite(value.hash_overwrite)!r}" if value.hash_overwrite else ""
        if creator is None:
            return f"Path({value.path!r}{overwrite})", None
        return f"Path({type(creator).__name__}, {value.path!r}{overwrite})", creator.job_id()
    if inspect.isfunction(value) or inspect.isclass(value):  # a job's class too, as Sisyphus hashes it: by its name
        return f"{value.__module__}.{value.__qualname__}", None
    if hashes_as_job(value):
        return f"Job({value.job_id()})", value.job_id()
    if type(value) in (list, tuple, dict) and not value:
        return repr(value), None
    if type(value) in (set, frozenset):
        return "{" + ", ".join(sorted(_stable_repr(item) for item in value)) + "}", None
    # anything else (a cut container, bytes, an enum...): Sisyphus's own bytes, shown as a type and digest
    return f"<{type(value).__qualname__} {hashlib.sha256(_content(value)).hexdigest()[:8]}>", None


def _content(value: Any) -> bytes:
    """:return: Sisyphus's bytes of value; where Sisyphus refuses it (or it holds a cycle its own hash never walks:
    it sits where no id looks), its text"""
    try:
        return hash_bytes(value)
    except (TypeError, RecursionError):
        return repr(value).encode("utf-8", "backslashreplace")


def relocating(relocated: Optional[Dict[str, str]]) -> Callable[[str], str]:
    """
    :param relocated: {place: as}, or None
    :return: how :func:`record` writes a leaf's text: each place as its value, the longest first
    """
    if not relocated:
        return str
    places = sorted(relocated, key=len, reverse=True)

    def seen(text: str) -> str:
        for place in places:
            text = text.replace(place, relocated[place])
        return text

    return seen


#: scalars: no path below them
_NO_PATHS = (type(None), bool, int, float, complex, str, bytes)


def hashed_paths(job: Any) -> Iterator[Tuple[str, Any]]:
    """
    Every Sisyphus path object in the job's hashed arguments, with the argument path that leads to it (e.g.
    ``returnn_config.config['rc_root']``). The walk is Sisyphus's own (``sisyphus.tools.extract_paths``: lists,
    tuples, sets, dicts without Sisyphus's own keys, other objects through their hashed state), but keeps every path
    object: Sisyphus's set of inputs merges a copy that carries a hash_overwrite into the original it equals.
    """
    from sisyphus.block import Block

    excluded = getattr(job, "__sis_hash_exclude__", {})
    stack: List[Tuple[str, Any]] = [
        (name, value)
        for name, value in sorted(job_arguments(job).items(), reverse=True)
        if not (name in excluded and excluded[name] == value)
    ]
    seen: Set[int] = set()
    while stack:
        where, value = stack.pop()
        if id(value) in seen or value is None or isinstance(value, _NO_PATHS):
            continue
        seen.add(id(value))
        if isinstance(value, (Block, enum.Enum)) or type(value) is type or hashes_as_job(value):
            continue  # a job among the arguments is hashed as its id: its own arguments are its own
        # a container's scalars (most of a network dict) hold no path: no argument path is made for them
        if is_path(value):
            yield where, value
        elif isinstance(value, (list, tuple)):
            items = [(i, item) for i, item in enumerate(value) if type(item) not in _NO_PATHS]
            stack.extend((f"{where}[{i}]", item) for i, item in reversed(items))
        elif isinstance(value, (set, frozenset)):
            stack.extend((f"{where}{{}}", item) for item in value if type(item) not in _NO_PATHS)
        elif isinstance(value, dict):
            pairs = [(key, item) for key, item in value.items() if type(item) not in _NO_PATHS and not is_internal(key)]
            stack.extend((f"{where}[{key!r}]", item) for key, item in reversed(pairs))
        else:
            state = object_state(value)
            if isinstance(state, dict):
                stack.extend((f"{where}.{key}", item) for key, item in reversed(list(state.items())))
            else:
                stack.append((where, state))
