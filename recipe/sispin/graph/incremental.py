"""
The incremental ``pin check``: a set whose check passed is not built again while nothing its builds read changed.

A pass is kept in ``.sispin-cache/checks/SET.json`` (outside git) with what its builds read (see
:mod:`sispin.graph.probe.inputs`: every file opened or imported, directory listed, path looked at, environment variable
read) and a key of everything else the verdict depends on: the set's lock section and those of the sets its configs
asked for, the repositories and ``[setup.*]`` checkouts (Sisyphus, i6_core), every alias the lock binds, the set's
snapshot entry and alias history, the Python and the source of sispin itself, and the environment the probe starts
with. Only passes are kept: a set with a problem is built again on every check, and a build that read the clock,
unseeded randomness, a process or the network (volatile) is never kept. Only a cache: what cannot be read or written
is as if it were not there. ``pin snapshot`` keeps the pass of each set it records the same way (its build checked
against what it recorded passes).

The build of a set at its pins that ``pin upgrade`` compares a move against is kept the same way, in
``.sispin-cache/builds/SET.json``, so that the next dry run of the set builds only the moved side (asking its
Sisyphus which of the kept graph's jobs finished since); an upgrade that writes builds both. A build whose configs
wait for jobs is not kept (volatile: its graph depends on work/).
"""

from __future__ import annotations

__all__ = ["KeptPass", "kept_pass", "keep_pass", "forget_pass", "kept_build", "keep_build"]

import functools
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Mapping, NamedTuple, Optional, Sequence, Tuple

from sispin.errors import PinError
from sispin.git.store import default_store_dir
from sispin.graph.build import probe_environment
from sispin.graph.probe.codec import DecodedOnAccess, read_json, report_form
from sispin.graph.probe.ledger import changed_input
from sispin.graph.probe.schema import JobRecord, RecordedOutput, SetGraph
from sispin.lock.cache import set_cache_file, sispin_sources, source_digests, write_set_cache
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path

#: the format of a kept pass; another one is not read
_VERSION = 1


class KeptPass(NamedTuple):
    """
    :param outputs: how many outputs the set's graph registers
    :param changes: how the graph differed from the snapshot (as ``pin check --json`` shows it)
    """

    outputs: int
    changes: Dict[str, Any]


def _file(root: Path, set_name: str) -> Path:
    return set_cache_file(root, "checks", set_name)


@functools.lru_cache(maxsize=None)  # noqa: UP033 - functools.cache is Python 3.9+, lru_cache reads on all
def _sispin_code() -> Optional[Tuple[Tuple[str, str], ...]]:
    """The source of sispin, which decides every verdict: read once per process (the code it runs)."""
    digests = source_digests(sispin_sources())
    return None if digests is None else tuple(digests)


def _key(
    lockfile: Lockfile,
    set_name: str,
    sets_read: Sequence[str],
    recorded: Mapping[str, RecordedOutput],
    bound: Mapping[str, Sequence[str]],
) -> str:
    """Everything a set's verdict depends on beside what its builds read."""
    environment = probe_environment(lockfile)
    aliases = sorted(
        (name, repo, pin.commit, pin.hash_overwrite)
        for name, spec in lockfile.sets.items()
        for repo, pin in spec.pins.items()
        if pin.hash_overwrite is not None
    )
    parts = {
        "version": _VERSION,
        # a copy of the setup (cp -a) holds this pass too, but what it read are the original's files
        "setup_root": str(lockfile.root.absolute()),
        # where the checkouts are (PIN_HOME, XDG_CACHE_HOME, HOME): sispin reads it, a config may hash a checkout's path
        "store": str(default_store_dir()),
        "python": [sys.version, sys.executable],
        "sispin": _sispin_code(),
        "sets": [repr(lockfile.sets.get(name)) for name in sorted({set_name, *sets_read})],
        # which sets list a config decides what current_set() is in it
        "configs": sorted((name, list(spec.configs)) for name, spec in lockfile.sets.items()),
        "repos": repr(lockfile.repos),
        "setup": repr(lockfile.setup),
        "aliases": aliases,
        "snapshot": sorted((name, output.job, output.path) for name, output in recorded.items()),
        "bound": sorted((value, list(commits)) for value, commits in bound.items()),
        # what the interpreter and the C library read themselves: the time zone and the locale among them
        "python_environment": sorted(
            (k, v) for k, v in environment.items() if k.startswith(("PYTHON", "LC_")) or k in ("TZ", "LANG")
        ),
    }
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def _standing(
    lockfile: Lockfile,
    set_name: str,
    data: Mapping[str, Any],
    recorded: Mapping[str, RecordedOutput],
    bound: Mapping[str, Sequence[str]],
) -> str:
    """:return: why what data keeps no longer stands, one phrase; "" when it does"""
    if data.get("version") != _VERSION:
        return "no earlier pass"
    if data["key"] != _key(lockfile, set_name, data["sets"], recorded, bound):
        return "pin.toml, the snapshot, the setup's or the store's location, Python or sispin changed"
    environment = probe_environment(lockfile)
    for ledger in data["ledgers"]:
        changed = changed_input(ledger, environment, str(lockfile.root))
        if changed:
            return changed
    return ""


def _kept(
    lockfile: Lockfile,
    set_name: str,
    recorded: Mapping[str, RecordedOutput],
    bound: Mapping[str, Sequence[str]],
    ledgers: Sequence[Optional[Mapping[str, Any]]],
) -> Tuple[Optional[Dict[str, Any]], str]:
    """:return: what keeps the builds' verdict valid (their key and what they read), or None and why it cannot"""
    if not ledgers or any(ledger is None for ledger in ledgers):
        return None, "a build recorded nothing"
    volatile = next((ledger["volatile"] for ledger in ledgers if ledger["volatile"]), None)
    if volatile:
        return None, volatile
    sets_read = sorted({name for ledger in ledgers if ledger for name in ledger["sets"]})
    key = _key(lockfile, set_name, sets_read, recorded, bound)
    return {"version": _VERSION, "key": key, "sets": sets_read, "ledgers": list(ledgers)}, ""


#: what a kept file cannot be read as: a damaged or foreign file, or a setup the key cannot be made for (its Sisyphus
#: gone); the build says why
_UNREADABLE = (OSError, ValueError, LookupError, TypeError, AttributeError, RecursionError, PinError)


def kept_pass(
    lockfile: Lockfile, set_name: str, recorded: Mapping[str, RecordedOutput], bound: Mapping[str, Sequence[str]]
) -> Tuple[Optional[KeptPass], str]:
    """
    :param lockfile: the setup's lockfile
    :param set_name: a set with configs
    :param recorded: its outputs in the snapshot
    :param bound: the snapshot's alias history
    :return: (the set's kept pass, when it still stands; why it does not, one phrase)
    """
    try:
        data = json.loads(_file(lockfile.root, set_name).read_bytes())
        why = _standing(lockfile, set_name, data, recorded, bound)
        return (None, why) if why else (KeptPass(int(data["outputs"]), dict(data["changes"])), "")
    except _UNREADABLE:
        return None, "no earlier pass"


def keep_pass(
    lockfile: Lockfile,
    set_name: str,
    recorded: Mapping[str, RecordedOutput],
    bound: Mapping[str, Sequence[str]],
    ledgers: Sequence[Optional[Mapping[str, Any]]],
    passed: KeptPass,
) -> Optional[str]:
    """
    Keep a set's pass with what its builds read (replacing an earlier one).

    :param ledgers: what each build of the check read
    :param passed: what the check found
    :return: why it cannot be kept (a volatile build), or None
    """
    data, why = _kept(lockfile, set_name, recorded, bound, ledgers)
    if data is None:
        _forget(_file(lockfile.root, set_name))
        return why
    data.update(outputs=passed.outputs, changes=passed.changes)
    write_set_cache(lockfile.path, "checks", set_name, data)  # a setup that cannot hold it builds every time
    return None


def kept_build(
    lockfile: Lockfile, set_name: str, recorded: Mapping[str, RecordedOutput], bound: Mapping[str, Sequence[str]]
) -> Optional[Tuple[SetGraph, Mapping[str, Any]]]:
    """
    :param recorded: the set's outputs in the snapshot
    :param bound: the snapshot's alias history
    :return: the set's build at its pins as ``pin upgrade`` makes it (every state and record) and what it read, when
        nothing it read changed since (which of its jobs finished is as it was then: ask Sisyphus again); else None
    """
    try:
        kept = set_cache_file(lockfile.root, "builds", set_name)
        data = read_json(kept.read_bytes())
        if _standing(lockfile, set_name, data, recorded, bound):
            return None
        # the records read as they are looked up: a move's content keys stand for most of them
        texts = data["records"]
        if type(texts) is not dict or not all(type(text) is str for text in texts.values()):
            return None  # not what keep_build writes
        records = DecodedOnAccess(JobRecord, texts, display_path(kept))
        return replace(SetGraph.from_json(data["graph"]), records=records), data["ledgers"][0]
    except _UNREADABLE:
        return None


def keep_build(
    lockfile: Lockfile,
    set_name: str,
    recorded: Mapping[str, RecordedOutput],
    bound: Mapping[str, Sequence[str]],
    built: Tuple[SetGraph, Optional[Mapping[str, Any]]],
) -> None:
    """
    Keep the set's build at its pins, as ``pin upgrade`` made it, for the next upgrade (replacing an earlier one).

    :param built: the graph, and what its build read
    """
    graph, ledger = built
    data, _ = _kept(lockfile, set_name, recorded, bound, [ledger])
    if data is None:
        _forget(set_cache_file(lockfile.root, "builds", set_name))
        return
    # each record as a text of its own, parsed only when looked up (see kept_build)
    data["graph"] = replace(graph, records={})
    data["records"] = {job: record.to_json_text() for job, record in graph.records.items()}
    write_set_cache(lockfile.path, "builds", set_name, data, default=report_form)


def _forget(target: Path) -> None:
    try:
        target.unlink()
    except OSError:
        pass


def forget_pass(lockfile: Lockfile, set_name: str) -> None:
    """Drop a set's kept pass (its check found a problem)."""
    _forget(_file(lockfile.root, set_name))
