"""
pin.snapshot.toml: per experiment set, the id of the job behind every registered output.

It lives beside pin.toml and is reviewed like code: a changed line is work that will be recomputed. ``pin
snapshot`` writes it, ``pin check`` compares against it, and a real ``pin upgrade`` updates it with the lock.
"""

from __future__ import annotations

__all__ = ["SNAPSHOT_NAME", "snapshot_path", "read_snapshot", "update_snapshot", "compare_outputs"]

import sys
from pathlib import Path
from typing import Dict, List, Mapping

import tomlkit
from filelock import FileLock

from sispin.editing import write_atomically
from sispin.errors import LockfileError
from sispin.graph import Output, SetGraph
from sispin.lockfile import display_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the Python 3.9 CI run
    import tomli as tomllib

SNAPSHOT_NAME = "pin.snapshot.toml"
_HEADER = (
    "Written by `pin snapshot` (and `pin upgrade`): the job id behind every registered output of each set.\n"
    "`pin check` fails when a config change gives an output another id. Review changes like code."
)

Snapshot = Dict[str, Dict[str, Output]]


def snapshot_path(lockfile_path: Path) -> Path:
    """:return: the snapshot file that belongs to a lockfile"""
    return Path(lockfile_path).with_name(SNAPSHOT_NAME)


def read_snapshot(path: Path) -> Snapshot:
    """
    :param path: the snapshot file
    :return: set name -> output name -> output; empty when the file does not exist
    :raises LockfileError: when it is malformed (naming file and key)
    """
    if not path.exists():
        return {}
    where = display_path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LockfileError(f"{where}: invalid TOML: {exc}") from None
    if data.get("version") != 1:
        raise LockfileError(f"{where}: version: unsupported version {data.get('version')!r} (expected 1)")
    snapshot: Snapshot = {}
    for set_name, table in data.get("sets", {}).items():
        outputs = table.get("outputs") if isinstance(table, dict) else None
        if not isinstance(outputs, dict):
            raise LockfileError(f"{where}: sets.{set_name}.outputs: missing or not a table")
        snapshot[set_name] = {}
        for name, output in outputs.items():
            if not (isinstance(output, dict) and isinstance(output.get("job"), str)):
                raise LockfileError(f"{where}: sets.{set_name}.outputs.{name}: needs a 'job' string")
            snapshot[set_name][name] = Output(job=output["job"], path=str(output.get("path", "")))
    return snapshot


def update_snapshot(path: Path, graphs: List[SetGraph]) -> None:
    """
    Record the outputs of the given sets, keeping other sets' entries; atomic and under a file lock.

    :param path: the snapshot file
    :param graphs: the sets' freshly built graphs
    """
    with FileLock(str(path) + ".lock"):
        snapshot = read_snapshot(path)
        for graph in graphs:
            snapshot[graph.set_name] = dict(graph.outputs)
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
        write_atomically(path, tomlkit.dumps(document))


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
