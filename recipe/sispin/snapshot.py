"""
pin.snapshot.toml: per experiment set, the id of the job behind every registered output, and what each job's id
is made of.

It lives beside pin.toml and is reviewed like code: a changed line is work that will be recomputed. ``pin
snapshot`` writes it, ``pin check`` compares against it, and a real ``pin upgrade`` updates it with the lock. Each
job's hashed arguments are kept one line per leaf (a digest, the value when short, the input job of a path), so
that ``pin check`` and ``pin explain`` can name the argument that moved an id from this file alone.
"""

from __future__ import annotations

__all__ = ["SNAPSHOT_NAME", "snapshot_path", "read_snapshot", "read_records", "update_snapshot", "compare_outputs"]

import sys
from pathlib import Path
from typing import Any, Collection, Dict, List, Mapping

import tomlkit
from filelock import FileLock

from sispin.editing import write_atomically
from sispin.errors import LockfileError
from sispin.explain import Arg, JobRecord
from sispin.graph import Output, SetGraph
from sispin.lockfile import display_path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised by the Python 3.9 CI run
    import tomli as tomllib

SNAPSHOT_NAME = "pin.snapshot.toml"
_HEADER = (
    "Written by `pin snapshot` (and `pin upgrade`): the job id behind every registered output of each set, and per\n"
    "job its hashed arguments (digest, short value, input job). `pin check` fails when a config change gives an\n"
    "output another id; `pin explain` names the argument. Review changes like code."
)

Snapshot = Dict[str, Dict[str, Output]]
#: a recorded value longer than this is kept as its digest only, so that the file stays reviewable
MAX_STORED_VALUE = 80


def snapshot_path(lockfile_path: Path) -> Path:
    """:return: the snapshot file that belongs to a lockfile"""
    return Path(lockfile_path).with_name(SNAPSHOT_NAME)


def _load(path: Path) -> Dict[str, Any]:
    """The snapshot's sets tables, checked: {set name: {"outputs": {...}, "jobs": {...}}}; empty without a file."""
    if not path.exists():
        return {}
    where = display_path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise LockfileError(f"{where}: invalid TOML: {exc}") from None
    if data.get("version") != 1:
        raise LockfileError(f"{where}: version: unsupported version {data.get('version')!r} (expected 1)")
    sets = data.get("sets", {})
    for set_name, table in sets.items():
        outputs = table.get("outputs") if isinstance(table, dict) else None
        if not isinstance(outputs, dict):
            raise LockfileError(f"{where}: sets.{set_name}.outputs: missing or not a table")
        for name, output in outputs.items():
            if not (isinstance(output, dict) and isinstance(output.get("job"), str)):
                raise LockfileError(f"{where}: sets.{set_name}.outputs.{name}: needs a 'job' string")
        jobs = table.get("jobs", {})
        if not isinstance(jobs, dict) or not all(
            isinstance(args, dict) and all(isinstance(leaf, str) for leaf in args.values()) for args in jobs.values()
        ):
            raise LockfileError(f"{where}: sets.{set_name}.jobs: each job must be a table of argument strings")
    return sets


def read_snapshot(path: Path) -> Snapshot:
    """
    :param path: the snapshot file
    :return: set name -> output name -> output; empty when the file does not exist
    :raises LockfileError: when it is malformed (naming file and key)
    """
    return {
        set_name: {
            name: Output(job=output["job"], path=str(output.get("path", "")))
            for name, output in table["outputs"].items()
        }
        for set_name, table in _load(path).items()
    }


def read_records(path: Path) -> Dict[str, Dict[str, JobRecord]]:
    """
    :param path: the snapshot file
    :return: set name -> job id -> the job's recorded arguments (empty for a set recorded without them)
    :raises LockfileError: when it is malformed
    """
    return {
        set_name: {
            job: JobRecord({arg: Arg.decode(leaf) for arg, leaf in args.items()})
            for job, args in table.get("jobs", {}).items()
        }
        for set_name, table in _load(path).items()
    }


def update_snapshot(path: Path, graphs: List[SetGraph], sets_in_lock: Collection[str]) -> bool:
    """
    Record the outputs and job records of the given sets, keeping other sets' entries and dropping those of sets
    the lockfile no longer has; atomic and under a file lock, and only when something changed.

    :param path: the snapshot file
    :param graphs: the sets' freshly built graphs
    :param sets_in_lock: the names of the lockfile's sets
    :return: whether the file was written
    """
    with FileLock(str(path) + ".lock"):
        kept = _load(path)
        document = tomlkit.document()
        for line in _HEADER.splitlines():
            document.add(tomlkit.comment(line))
        document.add("version", 1)
        sets = tomlkit.table(is_super_table=True)
        fresh = {graph.set_name: graph for graph in graphs}
        for set_name in sorted((set(kept) & set(sets_in_lock)) | set(fresh)):
            if set_name in fresh:
                sets[set_name] = _set_table(fresh[set_name])
            else:
                sets[set_name] = kept[set_name]
        document["sets"] = sets
        text = tomlkit.dumps(document)
        if path.exists() and path.read_text(encoding="utf-8") == text:
            return False
        write_atomically(path, text)
        return True


def _set_table(graph: SetGraph) -> Any:
    outputs = tomlkit.table()
    for name in sorted(graph.outputs):
        output = graph.outputs[name]
        entry = tomlkit.inline_table()
        entry.update({"job": output.job, "path": output.path})
        outputs[name] = entry
    jobs = tomlkit.table(is_super_table=True)
    for job in sorted(graph.records):
        args = tomlkit.table()
        for arg, leaf in sorted(graph.records[job].args.items()):
            short = leaf.value if leaf.value is not None and len(leaf.value) <= MAX_STORED_VALUE else None
            args[arg] = Arg(leaf.digest, short, leaf.job).encode()
        jobs[job] = args
    table = tomlkit.table(is_super_table=True)
    table["outputs"] = outputs
    table["jobs"] = jobs
    return table


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
