"""
pin.snapshot.toml: per experiment set, the id of the job behind every registered output.

It lives beside pin.toml and is reviewed like code: a changed line is work that will be recomputed. ``pin
snapshot`` writes it, ``pin check`` compares against it, and ``pin upgrade`` and ``pin new`` change it together with
the lock: a journal (``.pin.journal.json``) written before either file records what the snapshot must become once
the lock has changed, so that a run killed between the two writes is completed by the next ``pin`` command.
"""

from __future__ import annotations

__all__ = [
    "SNAPSHOT_NAME",
    "JOURNAL_NAME",
    "snapshot_path",
    "journal_path",
    "read_snapshot",
    "update_snapshot",
    "edit_lock_and_snapshot",
    "complete_interrupted",
    "compare_outputs",
]

import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional

import tomlkit

from sispin.editing import edit_lockfile
from sispin.errors import LockfileError
from sispin.files import check_writable, file_lock, leftovers, remove, remove_leftovers, write_atomically
from sispin.graph import Output, SetGraph
from sispin.lockfile import Lockfile, display_path, parse_lockfile, read_lockfile_text, valid_name

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the Python 3.9 CI run
    import tomli as tomllib

SNAPSHOT_NAME = "pin.snapshot.toml"
JOURNAL_NAME = ".pin.journal.json"
_HEADER = (
    "Written by `pin snapshot` (and `pin upgrade`, `pin new`): the job id behind every registered output of each set.\n"
    "`pin check` fails when a config change gives an output another id. Review changes like code."
)

Snapshot = Dict[str, Dict[str, Output]]


def snapshot_path(lockfile_path: Path) -> Path:
    """:return: the snapshot file that belongs to a lockfile"""
    return Path(lockfile_path).with_name(SNAPSHOT_NAME)


def journal_path(lockfile_path: Path) -> Path:
    """:return: where a change of the lock and its snapshot is recorded until both are written"""
    return Path(lockfile_path).with_name(JOURNAL_NAME)


def read_snapshot(path: Path) -> Snapshot:
    """
    :param path: the snapshot file
    :return: set name -> output name -> output; empty when the file does not exist
    :raises LockfileError: when it is malformed or cannot be read (naming file and key)
    """
    if not os.path.lexists(path):
        return {}
    where = display_path(path)
    try:
        data = tomllib.loads(read_lockfile_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise LockfileError(f"{where}: invalid TOML: {exc}") from None
    except RecursionError:
        raise LockfileError(f"{where}: invalid TOML: arrays or tables nested too deeply") from None
    if data.get("version") != 1 or type(data.get("version")) is not int:
        raise LockfileError(f"{where}: version: unsupported version {data.get('version')!r:.40} (expected 1)")
    sets = data.get("sets", {})
    if not isinstance(sets, dict):
        raise LockfileError(f"{where}: sets: must be a table")
    snapshot: Snapshot = {}
    for set_name, table in sets.items():
        outputs = table.get("outputs") if isinstance(table, dict) else None
        if not isinstance(outputs, dict):
            raise LockfileError(f"{where}: sets.{_key(set_name)}.outputs: missing or not a table")
        snapshot[set_name] = {}
        for name, output in outputs.items():
            if not (
                isinstance(output, dict)
                and isinstance(output.get("job"), str)
                and isinstance(output.get("path", ""), str)
            ):
                raise LockfileError(
                    f"{where}: sets.{_key(set_name)}.outputs.{_key(name)}: needs a 'job' string (and a 'path' string)"
                )
            snapshot[set_name][name] = Output(job=output["job"], path=output.get("path", ""))
    return snapshot


def _key(name: str) -> str:
    """A TOML key in a message: as it is when it is plain, quoted (one line, cut) otherwise."""
    return name if valid_name(name) and len(name) <= 60 else f"{name!r:.60}"


def _render(snapshot: Snapshot) -> str:
    document = tomlkit.document()
    for line in _HEADER.splitlines():
        document.add(tomlkit.comment(line))
    document.add("version", 1)
    sets = tomlkit.table(is_super_table=True)
    for set_name in sorted(snapshot):
        outputs = tomlkit.table()
        for name in sorted(snapshot[set_name]):
            output = snapshot[set_name][name]
            entry = tomlkit.inline_table()
            entry.update({"job": output.job, "path": output.path})
            outputs[name] = entry
        table = tomlkit.table(is_super_table=True)
        table["outputs"] = outputs
        sets[set_name] = table
    document["sets"] = sets
    return tomlkit.dumps(document)


def update_snapshot(path: Path, graphs: List[SetGraph]) -> None:
    """
    Record the outputs of the given sets, keeping other sets' entries; atomic and under a file lock.

    :param path: the snapshot file
    :param graphs: the sets' freshly built graphs
    """
    with file_lock(path):
        _write_outputs(path, {graph.set_name: dict(graph.outputs) for graph in graphs})


def _write_outputs(path: Path, outputs: Mapping[str, Dict[str, Output]]) -> None:
    """Merge sets' outputs into the snapshot and write it (the snapshot's lock is held)."""
    check_writable(path)
    snapshot = read_snapshot(path)
    snapshot.update(outputs)
    write_atomically(path, _render(snapshot))


def edit_lock_and_snapshot(
    path: Path, edit: Callable[[Lockfile, tomlkit.TOMLDocument], None], graphs: List[SetGraph]
) -> Lockfile:
    """
    Change pin.toml (as :func:`sispin.editing.edit_lockfile` does) and record the given sets' outputs in the
    snapshot, as one change: both files are checked before either is written, and a journal written first lets the
    next ``pin`` command finish the snapshot if this one is killed after the lock was written.

    :param path: the pin.toml
    :param edit: the change of the lock (see edit_lockfile)
    :param graphs: the changed sets' graphs at the new pins
    :return: the lockfile as written
    :raises LockfileError: when the snapshot is malformed (nothing is written)
    """
    snapshot = snapshot_path(path)
    outputs = {graph.set_name: dict(graph.outputs) for graph in graphs}

    def write(lock: Path, text: str, updated: Lockfile) -> None:
        with file_lock(snapshot):
            _complete(lock)  # another change's journal first: there is one journal at a time
            check_writable(snapshot)
            read_snapshot(snapshot)  # malformed: refuse before anything is written
            journal = {
                "sets": {
                    name: {"pins": _pins(updated, name), "outputs": {k: vars(v) for k, v in outputs[name].items()}}
                    for name in outputs
                }
            }
            write_atomically(journal_path(lock), json.dumps(journal, indent=1) + "\n")
            write_atomically(lock, text)  # the change happens here; the snapshot follows it
            _write_outputs(snapshot, outputs)
            remove(journal_path(lock))

    return edit_lockfile(path, edit, write=write)


def _pins(lockfile: Lockfile, set_name: str) -> Optional[Dict[str, Any]]:
    spec = lockfile.sets.get(set_name)
    return None if spec is None else {repo: pin.value for repo, pin in spec.pins.items()}


def complete_interrupted(path: Path) -> Optional[str]:
    """
    Repair what a killed command left: finish a change of the lock and its snapshot that it left half done, and
    remove its temporary files. When the lock holds the journal's pins, the snapshot gets the journal's outputs;
    otherwise the change never reached the lock (or the lock was edited by hand since), and the journal is dropped.
    Every ``pin`` command calls this first; it costs a directory listing when there is nothing to do.

    :param path: the pin.toml
    :return: what was done to the pair, for the user; None when that was nothing
    :raises LockfileError: when the journal is unreadable
    """
    files = (path, snapshot_path(path), journal_path(path))
    if not journal_path(path).exists() and not any(leftovers(file) for file in files):
        return None
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
        pins = {name: entry["pins"] for name, entry in recorded.items()}
        outputs = {
            name: {output: _output(**fields) for output, fields in entry["outputs"].items()}
            for name, entry in recorded.items()
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise LockfileError(
            f"{where}: unreadable ({type(exc).__name__}: {exc}); it records an interrupted `pin upgrade`/`pin new`: "
            f"remove it, then run `pin snapshot` for the sets it names"
        ) from None
    try:
        lockfile = parse_lockfile(read_lockfile_text(path), path)
    except LockfileError:
        return None  # the command that follows reports the lockfile; the journal waits for a valid one
    done = {name: outputs[name] for name in recorded if _pins(lockfile, name) == pins[name]}
    if done:
        _write_outputs(snapshot_path(path), done)
    remove(journal)
    if done:
        return f"completed an interrupted change of {_sets(done)}: {display_path(snapshot_path(path))} updated"
    return (
        f"dropped the journal of an interrupted change of {_sets(outputs)}: pin.toml does not hold its pins (the "
        f"change never reached it, or it was edited since)"
    )


def _output(job: str, path: str) -> Output:
    """An output as the journal records it; TypeError when it is not two strings."""
    if not isinstance(job, str) or not isinstance(path, str):
        raise TypeError("an output's job and path must be strings")
    return Output(job=job, path=path)


def _sets(names: Mapping[str, Any]) -> str:
    return ", ".join(f"sets.{name}" for name in sorted(names))


def compare_outputs(recorded: Mapping[str, Output], current: Mapping[str, Output]) -> List[str]:
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
