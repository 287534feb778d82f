"""
``pin new SET [--from OTHER] [--configs PATH ...]``: start an experiment set from the newest commits.

Without ``--from`` the set pins every repository of ``[repos]``; with it, the repositories OTHER pins (keeping
OTHER's extra CloneGitRepositoryJob arguments), each moved to the head of its branch. Existing sets never move.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "new_set"]

import argparse
from pathlib import Path
from typing import Dict, Optional, Sequence

import tomlkit

from sispin import git
from sispin.editing import append_table, edit_lockfile, toml_pin
from sispin.errors import NameConflictError, RevisionError, UsageError
from sispin.lockfile import Lockfile, Pin, display_path, find_lockfile, load_lockfile, valid_name
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
    """
    lockfile = load_lockfile(path)
    if not valid_name(name):
        raise UsageError(f"{name!r} is not a valid set name (letters, digits, '_', '.', '-')")
    _refuse_existing(lockfile, name)
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
        _refuse_existing(current, name)  # another process may have added it meanwhile
        table = tomlkit.table()
        table["configs"] = list(configs)
        for repo, kwargs in pins.items():
            table[repo] = toml_pin(Pin(repo, heads[repo], kwargs).value)
        append_table(document, "sets", name, table)

    edit_lockfile(path, add)
    width = max((len(repo) for repo in heads), default=0)
    print(f"{display_path(path)}: new set {name!r}" + (f" from {from_set!r}" if from_set else ""))
    for repo, sha in heads.items():
        branch = lockfile.get_repo(repo).branch or "default branch"
        print(f"{repo:<{width}}  {sha[:7]}  ({branch} head)")
    return 0


def _refuse_existing(lockfile: Lockfile, name: str) -> None:
    if name in lockfile.sets:
        raise NameConflictError(f"{display_path(lockfile.path)}: experiment set {name!r} already exists")
