"""
``pin new SET [--from OTHER] [--configs PATH ...]``: start an experiment set from the newest commits.

Without ``--from`` the set pins every repository of ``[repos]``; with it, the repositories OTHER pins (keeping
OTHER's extra CloneGitRepositoryJob arguments), each moved to the head of its branch. Existing sets never move. When
the set's graph can be built (Sisyphus, configs), its outputs go into pin.snapshot.toml together with the lock.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "new_set"]

import argparse
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence, Tuple

import tomlkit

from sispin import git
from sispin.editing import append_table, edit_lockfile, toml_pin
from sispin.errors import ConcurrentChangeError, NameConflictError, RevisionError, SisyphusError, UsageError
from sispin.files import check_writable
from sispin.graph import SetGraph, load_graph
from sispin.lockfile import Lockfile, Pin, display_path, find_lockfile, parse_lockfile, read_lockfile_text, valid_name
from sispin.snapshot import edit_lock_and_snapshot, snapshot_path
from sispin.store import Store


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = subparsers.add_parser(
        "new",
        help="start a new experiment set at the newest commits",
        description="Add experiment set SET to pin.toml, pinned to the head of each repository's branch: all "
        "repositories of [repos], or those OTHER pins (--from). Refuses an existing name (exit 4).",
    )
    parser.add_argument("set", metavar="SET", help="name of the new set")
    parser.add_argument("--from", dest="from_set", metavar="OTHER", help="pin the repositories that set OTHER pins")
    parser.add_argument(
        "--configs", metavar="PATH", nargs="+", default=[], help="Sisyphus config files of the set (setup-relative)"
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """:param args: parsed command line"""
    return new_set(find_lockfile(), args.set, from_set=args.from_set, configs=args.configs, store=Store())


def new_set(path: Path, name: str, *, from_set: Optional[str], configs: Sequence[str], store: Store) -> int:
    """
    :param path: the pin.toml
    :param name: the new set's name
    :param from_set: take the repositories (and their extra job arguments) from this set; None for all repositories
    :param configs: the new set's config files
    :param store: the mirrors to resolve branch heads in (fetched first)
    :return: exit code
    :raises ConcurrentChangeError: when another process added a set of that name meanwhile
    """
    text = read_lockfile_text(path)
    lockfile = parse_lockfile(text, path)
    if not valid_name(name):
        raise UsageError(f"{name!r} is not a valid set name (letters, digits, '_', '.', '-')")
    if name in lockfile.sets:
        raise NameConflictError(f"{display_path(lockfile.path)}: experiment set {name!r} already exists")
    check_writable(path)  # say it before fetching, not after
    if from_set is not None:
        template = lockfile.get_set(from_set).pins
        pins: Dict[str, Dict[str, object]] = {repo: dict(pin.job_kwargs) for repo, pin in template.items()}
    else:
        pins = {repo: {} for repo in lockfile.repos}

    heads = {}
    for repo in pins:
        spec = lockfile.get_repo(repo)
        try:
            heads[repo] = git.branch_commit(store.fetch(spec.url), spec.branch)
        except RevisionError as exc:
            raise RevisionError(f"repos.{repo} ({spec.url}): {exc}") from None

    def add(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        if name in current.sets:
            raise ConcurrentChangeError(
                f"{display_path(current.path)}: another process added experiment set {name!r} while this command "
                f"ran; nothing written"
            )
        table = tomlkit.table()
        table["configs"] = list(configs)
        for repo, kwargs in pins.items():
            table[repo] = toml_pin(Pin(repo, heads[repo], kwargs).value)
        append_table(document, "sets", name, table)

    graph, not_recorded = _new_graph(lockfile, text, name, add)
    if graph is None:
        edit_lockfile(path, add)
    else:
        edit_lock_and_snapshot(path, add, [graph])
    width = max((len(repo) for repo in heads), default=0)
    print(f"{display_path(path)}: new set {name!r}" + (f" from {from_set!r}" if from_set else ""))
    for repo, sha in heads.items():
        branch = lockfile.get_repo(repo).branch or "default branch"
        print(f"{repo:<{width}}  {sha[:7]}  ({branch} head)")
    if graph is not None:
        print(f"{display_path(snapshot_path(path))}: recorded sets.{name} ({len(graph.outputs)} outputs)")
    else:
        print(f"{display_path(snapshot_path(path))}: sets.{name} not recorded ({not_recorded})")
    return 0


def _new_graph(
    lockfile: Lockfile, text: str, name: str, add: Callable[[Lockfile, tomlkit.TOMLDocument], None]
) -> Tuple[Optional[SetGraph], str]:
    """
    The new set's job graph, built from the lock as it will be, so that its snapshot is written with it and `pin
    check` passes right away.

    :return: the graph, or None and why it cannot be built (e.g. no Sisyphus, or its configs do not exist yet)
    """
    document = tomlkit.parse(text)
    add(lockfile, document)
    candidate_text = tomlkit.dumps(document)
    try:
        return load_graph(parse_lockfile(candidate_text, lockfile.path), name, lock_text=candidate_text), ""
    except SisyphusError as exc:
        return None, str(exc)
