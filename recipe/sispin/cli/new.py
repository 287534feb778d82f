"""
``pin new SET [--from OTHER] [--configs PATH ...] [--config PATH]``: start an experiment set from the newest commits.

Without ``--from`` the set pins every repository of ``[repos]``; with it, the repositories OTHER pins (keeping
OTHER's extra CloneGitRepositoryJob arguments), each moved to the head of its branch. Existing sets never move. When
the set's graph can be built (Sisyphus, configs), its outputs go into pin.snapshot.toml together with the lock.
``--config PATH`` writes a starter config that uses ``experiment_set(SET)`` (never over an existing file).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "new_set"]

import argparse
import datetime
import os
from pathlib import Path, PurePosixPath
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import tomlkit

from sispin.cli.options import add_command, as_of, commit_option, commit_written, setup_relative
from sispin.cli.output import Output
from sispin.errors import ConcurrentChangeError, NameConflictError, RevisionError, SisyphusError, UsageError
from sispin.git.history import branch_commit, commit_as_of
from sispin.git.store import Store
from sispin.graph.build import load_graph
from sispin.graph.probe.schema import SetGraph
from sispin.graph.snapshot import edit_lock_and_snapshot
from sispin.lock.editing import append_table, edit_lockfile, toml_pin
from sispin.lock.files import check_writable, snapshot_path
from sispin.lock.lockfile import (
    Lockfile,
    Pin,
    find_lockfile,
    load_lockfile,
    parse_lockfile,
    read_lockfile_text,
    valid_name,
)
from sispin.text import count, display_path, shown_key

#: a starter config is never written over a file
_EXISTS = "--config {}: the file exists; refusing to overwrite it (list it with --configs)"


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "new",
        run,
        description="Add experiment set SET to pin.toml, pinned to the head of each repository's branch: all "
        "repositories of [repos], or those OTHER pins (--from). Refuses an existing name (exit 4).",
    )
    parser.add_argument("set", metavar="SET", help="name of the new set")
    parser.add_argument("--from", dest="from_set", metavar="OTHER", help="pin the repositories that set OTHER pins")
    parser.add_argument(
        "--configs",
        metavar="PATH",
        nargs="+",
        default=[],
        help="existing Sisyphus config files of the set (relative to where you are; pin.toml lists them relative "
        "to the setup root)",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="write a starter config at PATH (relative to where you are) that uses experiment_set(SET), and list it "
        "in the set's configs",
    )
    as_of(parser, "pin each repository's branch as it was then, not its head")
    commit_option(parser)


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    path = find_lockfile()
    configs = [setup_relative(path.parent, config, "--configs") for config in args.configs]
    starter = setup_relative(path.parent, args.config, "--config") if args.config else None
    code = new_set(
        path, args.set, out, from_set=args.from_set, configs=configs, store=Store(), starter=starter, as_of=args.as_of
    )
    if args.commit:
        pins = ", ".join(f"{repo} {pin.commit[:7]}" for repo, pin in load_lockfile(path).get_set(args.set).pins.items())
        written = [path.parent / starter] if starter else []  # the config the new set lists
        commit_written(path, f"pin new {args.set}: {pins}", [], out, also=written)
    return code


#: a pin.toml edit: changes the document, given the lockfile as it is when the edit is made
Edit = Callable[[Lockfile, tomlkit.TOMLDocument], None]


def new_set(
    path: Path,
    name: str,
    out: Output,
    *,
    from_set: Optional[str],
    configs: Sequence[str],
    store: Store,
    starter: Optional[str] = None,
    as_of: Optional[datetime.datetime] = None,
) -> int:
    """
    :param path: the pin.toml
    :param name: the new set's name
    :param out: what was added
    :param from_set: take the repositories (and their extra job arguments) from this set; None for all repositories
    :param configs: the new set's config files; each must exist
    :param store: the mirrors to resolve branch heads in (fetched first)
    :param starter: write a starter config here (setup-relative; must not exist) and add it to the configs
    :param as_of: pin each branch as it was at this time (None: its head)
    :return: exit code
    :raises ConcurrentChangeError: when another process added a set of that name meanwhile
    :raises UsageError: when a config of ``configs`` does not exist, or the starter's file does
    """
    text = read_lockfile_text(path)
    lockfile = parse_lockfile(text, path)
    configs = _checked_configs(lockfile, name, configs, starter)
    check_writable(path)  # say it before fetching, not after
    if from_set is not None:
        template = lockfile.get_set(from_set).pins
        pins: Dict[str, Dict[str, object]] = {repo: dict(pin.job_kwargs) for repo, pin in template.items()}
    else:
        pins = {repo: {} for repo in lockfile.repos}
    heads = {repo: _head(lockfile, repo, store, as_of) for repo in pins}
    add = _adding(name, configs, {repo: Pin(repo, heads[repo], kwargs) for repo, kwargs in pins.items()})
    parse_lockfile(_with_set(text, lockfile, add), path)  # a bad config path fails here, before any file is written
    written = _write_starter(lockfile.root, starter, name, list(pins)) if starter is not None else None
    try:
        graph, not_recorded = _new_graph(lockfile, text, name, add)
        if graph is None:
            edit_lockfile(path, add)
        else:
            edit_lock_and_snapshot(path, add, [graph])
    except BaseException:
        if written is not None:
            written.unlink()  # the set was not added: its starter config would belong to nothing
        raise
    out.info(f"{display_path(path)}: new set {name!r}" + (f" from {from_set!r}" if from_set else ""))
    if written is not None:
        out.info(f"{starter}: starter config written (it uses experiment_set({name!r}); build the set's graph in py())")
    _say_pins(out, lockfile, heads, as_of)
    return _say_recorded(out, path, name, graph, not_recorded, configs)


def _say_recorded(
    out: Output, path: Path, name: str, graph: Optional[SetGraph], not_recorded: str, configs: Sequence[str]
) -> int:
    """:return: the exit code: 9 when the set lists configs that do not load (the set is written all the same)"""
    snapshot = display_path(snapshot_path(path))
    if graph is not None:
        out.info(f"{snapshot}: recorded sets.{shown_key(name)} ({count(len(graph.outputs), 'output')})")
        return 0
    line = f"{snapshot}: sets.{shown_key(name)} not recorded ({not_recorded})"
    if not configs:
        out.info(line)  # a set without configs is a state the tools handle
        return 0
    # the set is written, but its configs do not load: a script must notice
    out.error(f"{line}: the set is in pin.toml; fix its configs, then `pin snapshot {name}`")
    return SisyphusError.exit_code


def _checked_configs(lockfile: Lockfile, name: str, configs: Sequence[str], starter: Optional[str]) -> List[str]:
    """
    :return: the new set's configs, the starter among them
    :raises UsageError: for an invalid name, a listed config that does not exist, a starter whose file does
    :raises NameConflictError: when the set exists
    """
    if not valid_name(name):
        raise UsageError(f"{name!r} is not a valid set name (letters, digits, '_', '.', '-')")
    if name in lockfile.sets:
        raise NameConflictError(f"{display_path(lockfile.path)}: experiment set {name!r} already exists")
    configs = list(configs) + ([starter] if starter is not None and starter not in configs else [])
    # a path that is not a clean relative one is refused by the lock's own validation later, naming the field
    for config in configs:
        exists = os.path.lexists(lockfile.root / config)
        if config == starter and exists:
            raise UsageError(_EXISTS.format(config))
        if config != starter and not exists and _clean_relative(config):
            raise UsageError(
                f"--configs {config}: no such file (write it first, or let --config {config} write a starter)"
            )
    return configs


def _say_pins(out: Output, lockfile: Lockfile, heads: Dict[str, str], as_of: Optional[datetime.datetime]) -> None:
    """A line per pin of the new set: where its commit comes from."""
    width = max((len(repo) for repo in heads), default=0)
    at = "head" if as_of is None else f"as of {as_of.isoformat()}"
    for repo, sha in heads.items():
        out.result(f"{repo:<{width}}  {sha[:7]}  ({lockfile.get_repo(repo).branch or 'default branch'} {at})")


def _head(lockfile: Lockfile, repo: str, store: Store, as_of: Optional[datetime.datetime]) -> str:
    """:return: the head of the repository's branch, fetched now (or as it was at as_of)"""
    spec = lockfile.get_repo(repo)
    try:
        mirror = store.fetch(spec.url)
        return branch_commit(mirror, spec.branch) if as_of is None else commit_as_of(mirror, spec.branch, as_of)
    except RevisionError as exc:
        raise RevisionError(f"repos.{repo} ({spec.url}): {exc}") from None


def _adding(name: str, configs: Sequence[str], pins: Dict[str, Pin]) -> Edit:
    """:return: the edit that adds the set, refusing when another process added one of its name meanwhile"""

    def add(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        if name in current.sets:
            raise ConcurrentChangeError(
                f"{display_path(current.path)}: another process added experiment set {name!r} while this command "
                "ran; nothing written"
            )
        table = tomlkit.table()
        table["configs"] = list(configs)
        for repo, pin in pins.items():
            table[repo] = toml_pin(pin.value)
        append_table(document, "sets", name, table)

    return add


def _new_graph(lockfile: Lockfile, text: str, name: str, add: Edit) -> Tuple[Optional[SetGraph], str]:
    """
    The new set's job graph, built from the lock as it will be, so that its snapshot is written with it and `pin
    check` passes right away.

    :return: the graph, or None and why it cannot be built (e.g. no Sisyphus, or its configs do not exist yet)
    """
    candidate_text = _with_set(text, lockfile, add)
    try:
        graph = load_graph(parse_lockfile(candidate_text, lockfile.path), name, lock_text=candidate_text, records="all")
        return graph, ""
    except SisyphusError as exc:
        return None, str(exc)


def _with_set(text: str, lockfile: Lockfile, add: Edit) -> str:
    """:return: the text of pin.toml as it will be with the new set"""
    document = tomlkit.parse(text)
    add(lockfile, document)
    return tomlkit.dumps(document)


def _clean_relative(config: str) -> bool:
    """Whether the lock's validation accepts the path; if not, it names the field, which says more than "no file"."""
    path = PurePosixPath(config)
    return not config.startswith(("/", "\\", "~")) and ".." not in path.parts and bool(path.parts)


def _write_starter(root: Path, config: str, name: str, repos: Sequence[str]) -> Path:
    """
    Write a minimal Sisyphus config of set ``name``: it registers the pinned checkout of each repository as an
    output, so that the set has a graph (and a snapshot) from the start.

    :param root: the setup root
    :param config: setup-relative path of the new file (must not exist)
    :param name: the set's name
    :param repos: the repositories the set pins
    :return: the file written
    :raises UsageError: when the file exists (it is never overwritten)
    """
    target = root / config
    # names are letters, digits, "_", "." and "-": double quotes need no escaping, and are what black writes
    outputs = "".join(f'    tk.register_output("{name}/{repo}", exp.repo("{repo}"))\n' for repo in repos)
    content = (
        f'"""\nSisyphus config of experiment set {name!r} (a starter written by `pin new`).\n\n'
        f"Its repositories are pinned in pin.toml ([sets.{shown_key(name)}]): exp.repo(NAME) is the "
        "CloneGitRepositoryJob output "
        f'at the\npinned commit, so the commit is part of every job hash that uses it.\n"""\n\n'
        "from sisyphus import tk\n\nfrom sispin import experiment_set\n\n\n"
        "def py():\n"
        f'    """Sisyphus entry point: build the graph of set {name!r} and register its outputs."""\n'
        f'    exp = experiment_set("{name}")\n' + (outputs or "    # e.g. tk.register_output(..., exp.repo(NAME))\n")
    )
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with open(target, "x", encoding="utf-8") as handle:  # "x": a file made meanwhile is not overwritten either
            handle.write(content)
    except FileExistsError:
        raise UsageError(_EXISTS.format(config)) from None
    return target
