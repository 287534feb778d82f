"""
pin.snapshot.toml: per experiment set, the id of the job behind every registered output.

It lives beside pin.toml and is reviewed like code: a changed line is work that will be recomputed. ``pin
snapshot`` writes it, ``pin check`` compares against it, and ``pin upgrade`` and ``pin new`` change it together with
the lock: a journal (``.pin.journal.json``) written before either file records what the snapshot must become once
the lock has changed, so that a run killed between the two writes is completed by the next ``pin`` command. What each
job's id is made of (to name the argument that moved an id) is kept outside git, by :mod:`sispin.graph.recordcache`.
"""

from __future__ import annotations

__all__ = [
    "Snapshot",
    "read_snapshot",
    "read_recorded",
    "set_inputs",
    "record_graphs",
    "edit_lock_and_snapshot",
    "complete_interrupted",
    "compare_outputs",
    "parse_snapshot",
    "render_snapshot",
]

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Collection, Dict, List, Mapping, Optional, Tuple

import tomlkit

from sispin.clonejob import clone_identity, identity_commit
from sispin.errors import LockfileError
from sispin.graph.probe.schema import RecordedOutput, SetGraph
from sispin.graph.recordcache import write_records
from sispin.lock.cache import read_through
from sispin.lock.editing import edit_lockfile
from sispin.lock.files import (
    check_writable,
    file_lock,
    interrupted,
    journal_path,
    remove,
    remove_leftovers,
    snapshot_path,
    write_atomically,
)
from sispin.lock.loading import parse_lockfile, parse_toml, read_lockfile_bytes, read_lockfile_text
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path, is_bare_key, shown_key, unsupported_version

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - exercised by the Python 3.9 CI run
    pass

_HEADER = (
    "Written by `pin snapshot` (and `pin upgrade`, `pin new`): the job id behind every registered output of each set.\n"
    "`pin check` fails when a config change gives an output another id; `pin explain` names the argument that\n"
    "changed. Review changes like code."
)

Snapshot = Dict[str, Dict[str, RecordedOutput]]
#: one set's part of the snapshot, as plain data: {"outputs": {name: {"job", "path"}}, "aliases": {repo: {...}}}
Entry = Dict[str, Any]


def _load_all(path: Path) -> Tuple[Dict[str, Entry], Dict[str, List[str]]]:
    """
    :return: the snapshot's sets, checked: set name -> entry (empty when the file does not exist), and every clone
        each hash_overwrite value was ever bound to (its ``bound`` table, with the aliases of the sets in it)
    :raises LockfileError: when it is malformed or cannot be read (naming file and key)
    """
    if not os.path.lexists(path):
        return {}, {}
    data, text = read_lockfile_bytes(path)
    # parsing a snapshot of thousands of outputs took a dry run a tenth of what it spends besides the build
    return read_through(path, data, "snapshot cache 1", __name__, lambda: parse_snapshot(text, display_path(path)))


def parse_snapshot(text: str, where: str) -> Tuple[Dict[str, Entry], Dict[str, List[str]]]:
    """
    :param text: a snapshot's text
    :param where: how messages name the file
    :return: its sets, checked: set name -> entry, and every clone each hash_overwrite value was ever bound to (its
        ``bound`` table, with the aliases of the sets in it)
    :raises LockfileError: when it is malformed (naming file and key)
    """
    data = parse_toml(text, where)
    if data.get("version") != 1 or type(data.get("version")) is not int:
        raise LockfileError(f"{where}: version: {unsupported_version(data.get('version'), 1, 'version' not in data)}")
    sets = data.get("sets", {})
    if not isinstance(sets, dict):
        raise LockfileError(f"{where}: sets: must be a table")
    for set_name, entry in sets.items():
        _check_entry(where, set_name, entry)
    bound = data.get("bound", {})
    if not isinstance(bound, dict) or not all(
        isinstance(clones, list) and all(_is_clone(clone) for clone in clones) for clones in bound.values()
    ):
        raise LockfileError(
            f"{where}: bound: must be a table of hash_overwrite value -> list of clones ({{commit = ..., ...}})"
        )
    history = {value: [_clone_text(clone) for clone in clones] for value, clones in bound.items()}
    _add_aliases(history, sets)
    return sets, history


def _is_clone(clone: Any) -> bool:
    """Whether a ``[bound]`` entry is a clone (a table of its commit and other arguments) or a bare commit (before)."""
    return isinstance(clone, str) or (isinstance(clone, dict) and isinstance(clone.get("commit"), str))


def _clone_text(clone: Any) -> str:
    """:return: a ``[bound]`` entry as the history holds it: its clone_identity, or the bare commit written before"""
    return clone if isinstance(clone, str) else clone_identity(clone)


def _alias_clone(alias: Mapping[str, Any]) -> str:
    """:return: what a set's alias entry stands for (an entry without ``arguments`` was written before: its commit)"""
    if "arguments" not in alias:
        return alias["commit"]
    return clone_identity({**alias["arguments"], "commit": alias["commit"]})


def _add_aliases(history: Dict[str, List[str]], sets: Mapping[str, Entry]) -> None:
    """
    Add the clone each alias of the sets binds to its value's history. A bare commit of before gives way to the whole
    clone once no set's entry of that value is one of before (the clone such an entry stands for is not known).
    """
    aliases = [alias for entry in sets.values() for alias in entry.get("aliases", {}).values()]
    unknown = {alias["hash_overwrite"] for alias in aliases if "arguments" not in alias}
    for alias in aliases:
        clones, clone = history.setdefault(alias["hash_overwrite"], []), _alias_clone(alias)
        bare = identity_commit(clone)
        if clone != bare and bare in clones and alias["hash_overwrite"] not in unknown:
            clones.remove(bare)
        if clone not in clones:
            clones.append(clone)


def _check_entry(where: str, set_name: str, entry: Any) -> None:
    """:raises LockfileError: when one set's entry (of the snapshot or of the journal) is malformed"""
    outputs = entry.get("outputs") if isinstance(entry, dict) else None
    if not isinstance(outputs, dict):
        raise LockfileError(f"{where}: sets.{shown_key(set_name)}.outputs: missing or not a table")
    for name, output in outputs.items():
        if not (
            isinstance(output, dict) and isinstance(output.get("job"), str) and isinstance(output.get("path", ""), str)
        ):
            raise LockfileError(
                f"{where}: sets.{shown_key(set_name)}.outputs.{shown_key(name)}: needs a 'job' string (and a 'path' "
                "string)"
            )
    aliases = entry.get("aliases", {})
    if not isinstance(aliases, dict) or not all(
        isinstance(alias, dict)
        and all(isinstance(alias.get(key), str) for key in ("commit", "hash_overwrite"))
        and isinstance(alias.get("arguments", {}), dict)
        for alias in aliases.values()
    ):
        raise LockfileError(
            f"{where}: sets.{shown_key(set_name)}.aliases: each must be a table of 'commit' and 'hash_overwrite'"
        )
    # "jobs" tables of snapshots written before the records left the file are read past, and dropped on a write


def read_snapshot(path: Path) -> Snapshot:
    """
    :param path: the snapshot file
    :return: set name -> output name -> output; empty when the file does not exist
    :raises LockfileError: when it is malformed or cannot be read (naming file and key)
    """
    return _outputs(_load_all(path)[0])


def read_recorded(path: Path) -> Tuple[Snapshot, Dict[str, List[str]]]:
    """
    :param path: the snapshot file
    :return: what :func:`read_snapshot` returns, and the alias history: hash_overwrite value -> every clone a pin
        bound it to when a set was recorded, in this set or any other, also in sets renamed or removed since (the ids
        made with it stand for those commits only, for good)
    :raises LockfileError: when it is malformed or cannot be read (naming file and key)
    """
    sets, bound = _load_all(path)
    return _outputs(sets), bound


def _outputs(sets: Mapping[str, Entry]) -> Snapshot:
    return {
        set_name: {name: RecordedOutput(job=o["job"], path=o.get("path", "")) for name, o in entry["outputs"].items()}
        for set_name, entry in sets.items()
    }


def _entry(graph: SetGraph) -> Entry:
    """A set's snapshot entry from its graph: its outputs, and the aliases its pins bind."""
    return {
        "outputs": {name: {"job": o.job, "path": o.path} for name, o in graph.outputs.items()},
        "aliases": {
            repo: {
                "commit": identity_commit(clone),
                "hash_overwrite": value,
                "arguments": {name: given for name, given in json.loads(clone).items() if name != "commit"},
            }
            for repo, (clone, value) in graph.aliases.items()
        },
    }


def render_snapshot(sets: Mapping[str, Entry], bound: Mapping[str, List[str]]) -> str:
    """
    The snapshot's text, written out directly: a generated file of one line per output, where tomlkit's document
    model (built for keeping a user's file intact) would cost more than the build it records at thousands of outputs.
    """
    lines = [f"# {line}" for line in _HEADER.splitlines()] + ["version = 1"]
    for set_name in sorted(sets):
        lines += ["", f"[sets.{_key(set_name)}.outputs]"]
        lines += [
            f"{_key(name)} = {{job = {_string(output['job'])}, path = {_string(output.get('path', ''))}}}"
            for name, output in sorted(sets[set_name]["outputs"].items())
        ]
        aliases = sets[set_name].get("aliases") or {}
        if aliases:
            lines += ["", f"[sets.{_key(set_name)}.aliases]"]
            lines += [f"{_key(repo)} = {_value(alias)}" for repo, alias in sorted(aliases.items())]
    if bound:
        lines += ["", "[bound]", "# every clone each hash_overwrite value stood for: it never stands for another"]
        lines += [
            f"{_key(value)} = [{', '.join(_value(_bound_entry(clone)) for clone in sorted(bound[value]))}]"
            for value in sorted(bound)
        ]
    return "\n".join(lines) + "\n"


def _bound_entry(clone: str) -> Any:
    """:return: a clone of the history as ``[bound]`` writes it: a table (commit first), or the bare commit of before"""
    if not clone.startswith("{"):
        return clone
    arguments = json.loads(clone)
    return {"commit": arguments.pop("commit"), **arguments}


def _value(value: Any) -> str:
    """A TOML value of the snapshot: a string, a boolean, or an inline table or array of them."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(name)} = {_value(item)}" for name, item in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    return _string(value)


def _key(name: str) -> str:
    """A TOML key: bare when TOML reads it bare, else a basic string."""
    return name if is_bare_key(name) else _string(name)


def _string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's; DEL, which JSON leaves as it is, TOML wants escaped)."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _write_sets(path: Path, entries: Mapping[str, Entry], sets_in_lock: Collection[str]) -> bool:
    """
    Merge sets' entries into the snapshot, drop the sets the lockfile no longer has, and write it when anything
    changed (the snapshot's lock is held).

    :return: whether the file was written
    """
    check_writable(path)
    loaded, bound = _load_all(path)
    sets = {name: entry for name, entry in loaded.items() if name in sets_in_lock}
    sets.update(entries)
    # a set dropped or renamed keeps its aliases' history (loaded above): a value never stands for another commit
    _add_aliases(bound, sets)
    text = render_snapshot(sets, bound)
    if os.path.isfile(path) and read_lockfile_text(path) == text:
        return False
    write_atomically(path, text)
    return True


def set_inputs(lockfile: Lockfile, set_name: str) -> Any:
    """
    :param lockfile: a lockfile
    :param set_name: one of its sets
    :return: what the set's job graph is built from in pin.toml — its section (configs, pins, accepted URLs), the
        entries of the repositories it pins, the setup's checkouts (the Sisyphus and i6_core that build it) — to be
        compared with ``==``; None when the lockfile has no such set
    """
    spec = lockfile.sets.get(set_name)
    if spec is None:
        return None
    return spec, {name: lockfile.repos.get(name) for name in spec.pins}, dict(lockfile.setup)


def record_graphs(path: Path, graphs: List[SetGraph], built_from: Lockfile) -> Tuple[bool, List[str]]:
    """
    Record freshly built graphs in the snapshot, decided against pin.toml as it is when the snapshot is written: a
    graph is built slowly, and another ``pin`` command may change the lock (and the snapshot with it) meanwhile.
    Both files' locks are held, in the order :func:`edit_lock_and_snapshot` takes them, so no such change lands
    between the decision and the write.

    :param path: the pin.toml
    :param graphs: the sets' graphs, built from ``built_from``
    :param built_from: the lockfile the graphs were built from (read before building them)
    :return: whether the snapshot was written, and the sets not recorded because pin.toml changed what their graph
        is built from (:func:`set_inputs`) meanwhile; the entries of the other sets, also of those added meanwhile,
        stay, and those of sets pin.toml no longer has are dropped
    :raises LockfileError: when pin.toml is gone or invalid now, or the snapshot is malformed (nothing written)
    """
    snapshot = snapshot_path(path)
    with file_lock(path), file_lock(snapshot):
        _complete(path)  # a killed change's journal first: its sets' entries are what its pins need
        current = parse_lockfile(read_lockfile_text(path), path)
        kept = {
            graph.set_name: _entry(graph)
            for graph in graphs
            if set_inputs(current, graph.set_name) == set_inputs(built_from, graph.set_name)
        }
        changed = [graph.set_name for graph in graphs if graph.set_name not in kept]
        written = _write_sets(snapshot, kept, current.sets)
        for graph in graphs:
            if graph.set_name in kept:
                write_records(path, graph)
    return written, changed


def edit_lock_and_snapshot(
    path: Path,
    edit: Callable[[Lockfile, tomlkit.TOMLDocument], None],
    graphs: List[SetGraph],
    *,
    create: bool = False,
    check: Optional[Callable[[Lockfile], None]] = None,
) -> Lockfile:
    """
    Change pin.toml (as :func:`sispin.lock.editing.edit_lockfile` does) and record the given sets in the snapshot, as
    one change: both files are checked before either is written, and a journal written first lets the next ``pin``
    command finish the snapshot if this one is killed after the lock was written.

    :param path: the pin.toml
    :param edit: the change of the lock (see edit_lockfile)
    :param graphs: the changed sets' graphs at the new pins
    :param create: start from an empty lockfile when there is none
    :param check: called with the lock's new content before anything is written; raises to write nothing
    :return: the lockfile as written
    :raises LockfileError: when the snapshot is malformed (nothing is written)
    """
    snapshot = snapshot_path(path)
    entries = {graph.set_name: _entry(graph) for graph in graphs}

    def write(lock: Path, text: str, updated: Lockfile) -> None:
        if check is not None:
            check(updated)
        with file_lock(snapshot):
            _complete(lock)  # another change's journal first: there is one journal at a time
            check_writable(snapshot)
            _load_all(snapshot)  # malformed: refuse before anything is written
            journal = {"sets": {name: {"pins": _pins(updated, name), "entry": entries[name]} for name in entries}}
            write_atomically(journal_path(lock), json.dumps(journal, indent=1) + "\n")
            write_atomically(lock, text)  # the change happens here; the snapshot follows it
            _write_sets(snapshot, entries, updated.sets)
            remove(journal_path(lock))
            for graph in graphs:
                write_records(lock, graph)

    return edit_lockfile(path, edit, create=create, write=write)


def _pins(lockfile: Lockfile, set_name: str) -> Optional[Dict[str, Any]]:
    spec = lockfile.sets.get(set_name)
    return None if spec is None else {repo: pin.value for repo, pin in spec.pins.items()}


def complete_interrupted(path: Path) -> Optional[str]:
    """
    Repair what a killed command left: finish a change of the lock and its snapshot that it left half done, and
    remove its temporary files. When the lock holds the journal's pins, the snapshot gets the journal's entries;
    otherwise the change never reached the lock (or the lock was edited by hand since), and the journal is dropped.
    Every ``pin`` command calls this first; it costs a directory listing when there is nothing to do.

    :param path: the pin.toml
    :return: what was done to the pair, for the user; None when that was nothing
    :raises LockfileError: when the journal is unreadable
    """
    if not interrupted(path):
        return None
    files = (path, snapshot_path(path), journal_path(path))
    with file_lock(path), file_lock(snapshot_path(path)):
        done = _complete(path)
        for file in files:
            remove_leftovers(file)
    return done


def _complete(path: Path) -> Optional[str]:
    """:func:`complete_interrupted`, with both locks held."""
    journal = journal_path(path)
    if not journal.exists():
        return None
    where = display_path(journal)
    try:
        recorded = json.loads(journal.read_text(encoding="utf-8"))["sets"]
        pins = {name: item["pins"] for name, item in recorded.items()}
        entries = {name: item["entry"] for name, item in recorded.items()}
        for name, entry in entries.items():
            _check_entry(where, name, entry)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, LockfileError) as exc:
        raise LockfileError(
            f"{where}: unreadable ({type(exc).__name__}: {exc}); it records an interrupted `pin upgrade`/`pin new`: "
            "remove it, then run `pin snapshot` for the sets it names"
        ) from None
    try:
        lockfile = parse_lockfile(read_lockfile_text(path), path)
    except LockfileError:
        return None  # the command that follows reports the lockfile; the journal waits for a valid one
    done = {name: entries[name] for name in recorded if _pins(lockfile, name) == pins[name]}
    if done:
        _write_sets(snapshot_path(path), done, lockfile.sets)
    remove(journal)
    if done:
        return f"completed an interrupted change of {_sets(done)}: {display_path(snapshot_path(path))} updated"
    return (
        f"dropped the journal of an interrupted change of {_sets(entries)}: pin.toml does not hold its pins (the "
        "change never reached it, or it was edited since)"
    )


def _sets(names: Mapping[str, Any]) -> str:
    return ", ".join(f"sets.{shown_key(name)}" for name in sorted(names))


def compare_outputs(recorded: Mapping[str, RecordedOutput], current: Mapping[str, RecordedOutput]) -> List[str]:
    """
    :param recorded: outputs as in the snapshot
    :param current: outputs as the configs build them now
    :return: one line per difference, ``output/NAME: OLD-ID -> NEW-ID`` (``(none)`` for an added or gone output)
    """
    lines = []
    for name in sorted(set(recorded) | set(current)):
        old = recorded[name].job if name in recorded else "(none)"
        new = current[name].job if name in current else "(none)"
        if old != new:
            lines.append(f"output/{name}: {old} -> {new}")
    return lines
