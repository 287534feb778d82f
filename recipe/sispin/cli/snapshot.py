"""
``pin snapshot [SET ...] [--commit]``: the command line of :mod:`sispin.ops.snapshot`, and its report (a line per
set recorded, the problems that keep anything from being recorded).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render", "skipped_line", "waiting_lines"]

import argparse
from pathlib import Path
from typing import List

from sispin.cli.options import add_command, commit_option, commit_written, set_names
from sispin.cli.output import Output
from sispin.graph.probe.schema import SetGraph
from sispin.lock.loading import find_lockfile
from sispin.ops.snapshot import SnapshotResult, snapshot
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
    code = render(snapshot(path, args.sets), path, out)
    if args.commit:
        commit_written(path, f"pin snapshot {' '.join(args.sets)}".rstrip(), [], out)
    return code


def render(result: SnapshotResult, lock: Path, out: Output) -> int:
    """
    :param result: what ``pin snapshot`` did
    :param lock: the pin.toml
    :param out: what was recorded, and the problems
    :return: exit code
    :raises PinError: the result's refusal, after what it refers to (the places that hide a pinned commit, or the
        sets recorded and those another process changed meanwhile)
    """
    for name, recorded in result.frozen:
        out.info(_frozen_line(name, recorded))
    for name in result.skipped:
        out.info(skipped_line(name))
    for problem in result.hidden:
        out.result(f"problem: {problem}")
        for detail in problem.details:
            out.detail(f"    {detail}")
    if not result.hidden:  # else nothing was recorded
        for graph in result.graphs:
            for line in waiting_lines(graph):
                out.info(line)
            out.info(_recorded_line(graph, result, lock))
        out.info(f"{display_path(result.target)}: {'written' if result.written else 'unchanged'}")
    if result.refusal is not None:
        raise result.refusal
    return 0


def waiting_lines(graph: SetGraph) -> List[str]:
    """:return: a line per async config whose ``py()`` waits for unfinished jobs (what follows is not built yet)"""
    return [
        f"sets.{shown_key(graph.set_name)}: {display_path(Path(config))} waits for unfinished jobs: what it builds "
        "after that is recorded "
        "and checked once they finished"
        for config in graph.waiting
    ]


def _recorded_line(graph: SetGraph, result: SnapshotResult, lock: Path) -> str:
    """:return: what became of a set's graph: recorded (with what changed against the snapshot), or not"""
    if graph.set_name in result.changed:
        return (
            f"sets.{shown_key(graph.set_name)}: not recorded: another process changed it in {display_path(lock)} while "
            "its graph was built"
        )
    if graph.set_name in result.before:
        news = f"{count(result.outputs_changed(graph), 'output')} changed"
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
