"""
``pin snapshot [SET ...]``: record, per set, the id of the job behind every registered output.

Each set's configs are loaded by real Sisyphus in a subprocess; no job runs and nothing is written to work/.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "snapshot", "skipped_line", "waiting_lines"]

import argparse
from pathlib import Path
from typing import List, Sequence

from sispin.cli.options import add_command, commit_option, commit_written, set_names
from sispin.cli.output import Output
from sispin.errors import ConcurrentChangeError, HashOverwriteError
from sispin.graph.build import load_graph
from sispin.graph.guard import recording_problems
from sispin.graph.probe.schema import SetGraph
from sispin.graph.snapshot import Snapshot, compare_outputs, read_bound, read_snapshot, record_graphs
from sispin.lock.files import snapshot_path
from sispin.lock.lockfile import find_lockfile, load_lockfile
from sispin.text import count, display_path, shown_key


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "snapshot",
        run,
        description="Load each set's configs with real Sisyphus (no job runs, nothing is written to work/) and "
        "record every registered output and the id of the job that creates it in pin.snapshot.toml, beside "
        "pin.toml. `pin check` compares against it. Exit 9 when Sisyphus is missing or a config fails to load, exit 7 "
        "(nothing recorded) when a clone output, or a copy of it that a job hashes, has hash_overwrite set.",
    )
    set_names(parser, "record")
    commit_option(parser)
    parser.set_defaults(trailing="sets")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    path = find_lockfile()
    code = snapshot(path, args.sets, out)
    if args.commit:
        commit_written(path, f"pin snapshot {' '.join(args.sets)}".rstrip(), [], out)
    return code


def snapshot(path: Path, names: Sequence[str], out: Output) -> int:
    """
    :param path: the pin.toml
    :param names: sets to record; empty for all
    :param out: what was recorded, and the problems
    :return: exit code
    :raises ConcurrentChangeError: after recording the others, when another process changed sets meanwhile
    """
    lockfile = load_lockfile(path)
    specs = lockfile.select_sets(names)
    for spec in specs if names else ():
        spec.check_not_frozen("pin snapshot")
    target = snapshot_path(lockfile.path)
    before = read_snapshot(target)
    # a set without configs has no graph yet (just created), a frozen one keeps its ids: said once each, and no
    # failure of the sets that are recorded
    for spec in specs:
        if spec.freeze:
            out.info(_frozen_line(spec.name, spec.name in before))
        elif not spec.configs:
            out.info(skipped_line(spec.name))
    names = [spec.name for spec in specs if spec.configs and not spec.freeze]
    # every job's record walked anew: one whose id stays can hold other unhashed state (its own hash(), a
    # ReturnnConfig's post_config), and a record kept from before would explain that as a change later
    graphs = [load_graph(lockfile, name, records="all") for name in names]
    # a snapshot of ids that do not depend on the commits would make `pin check` pass on exactly what it must catch
    bound = read_bound(target)
    hidden = [p for graph in graphs for p in recording_problems(lockfile, graph, bound)]
    if hidden:
        for problem in hidden:
            out.result(f"problem: {problem}")
            for detail in getattr(problem, "details", ()):
                out.detail(f"    {detail}")
        raise HashOverwriteError(
            f"{count(len(hidden), 'place')} in the job graph {'hides' if len(hidden) == 1 else 'hide'} a pinned commit "
            "from a job's hash (listed above): remove what hides it; nothing recorded"
        )
    # another command may have changed the lock (and the snapshot) while the graphs were built: decided when written
    written, changed = record_graphs(lockfile.path, graphs, lockfile)
    for graph in graphs:
        for line in waiting_lines(graph):
            out.info(line)
        out.info(_recorded_line(graph, before, changed, lockfile.path))
    out.info(f"{display_path(target)}: {'written' if written else 'unchanged'}")
    if changed:
        raise ConcurrentChangeError(
            f"{', '.join(f'sets.{shown_key(name)}' for name in changed)} changed while this snapshot ran: not recorded "
            f"(the other sets are); run `pin snapshot {' '.join(changed)}` again"
        )
    return 0


def waiting_lines(graph: SetGraph) -> List[str]:
    """:return: a line per async config whose ``py()`` waits for unfinished jobs (what follows is not built yet)"""
    return [
        f"sets.{shown_key(graph.set_name)}: {config} waits for unfinished jobs: what it builds after that is recorded "
        "and checked once they finished"
        for config in graph.waiting
    ]


def _recorded_line(graph: SetGraph, before: Snapshot, changed: Sequence[str], lock: Path) -> str:
    """:return: what became of a set's graph: recorded (with what changed against the snapshot), or not"""
    if graph.set_name in changed:
        return (
            f"sets.{shown_key(graph.set_name)}: not recorded: another process changed it in {display_path(lock)} while "
            "its graph was built"
        )
    if graph.set_name in before:
        moved = len(compare_outputs(before[graph.set_name], graph.outputs))
        news = f"{moved} output{'s' if moved != 1 else ''} changed"
    else:
        news = "new in the snapshot"
    return f"{graph.set_name}: {count(len(graph.outputs), 'output')}, {count(len(graph.jobs), 'job')} ({news})"


def _frozen_line(name: str, recorded: bool) -> str:
    if recorded:
        return f"sets.{shown_key(name)}: frozen: its recorded ids stay (`pin thaw {name}` to record anew)"
    return (
        f"sets.{shown_key(name)}: frozen, and not recorded (`pin check` fails on it): `pin thaw {name}`, `pin "
        f"snapshot {name}`, `pin freeze {name}`"
    )


def skipped_line(name: str) -> str:
    """
    :param name: a set whose ``configs`` is empty
    :return: the line `pin snapshot` and `pin check` print instead of loading its graph
    """
    return f"sets.{shown_key(name)}: skipped (no configs: add one with `pin configs {name} --add PATH`)"
