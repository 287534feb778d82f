"""
``pin new``: start an experiment set from the newest commits.

Without a template set the new set pins every repository of ``[repos]``; with one, the repositories it pins (keeping
its extra CloneGitRepositoryJob arguments), each at the head of its branch (or the branch as it was at a moment).
Existing sets never move. When the set's graph can be built (Sisyphus, configs), its outputs go into
pin.snapshot.toml together with the lock. A starter config that uses ``experiment_set(SET)`` may be written too
(never over an existing file).
"""

from __future__ import annotations

__all__ = ["NewPin", "NewSet", "new_set"]

import datetime
import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import tomlkit

from sispin.errors import ConcurrentChangeError, NameConflictError, RevisionError, SisyphusError, UsageError
from sispin.git.history import branch_commit, commit_as_of
from sispin.git.store import Store
from sispin.graph.build import GraphBuild, load_graphs
from sispin.graph.probe.schema import SetGraph
from sispin.graph.snapshot import edit_lock_and_snapshot
from sispin.lock.editing import append_table, edit_lockfile, toml_pin
from sispin.lock.files import check_writable, snapshot_path
from sispin.lock.loading import parse_lockfile, read_lockfile_text
from sispin.lock.lockfile import Lockfile, Pin, valid_name
from sispin.ops.upgrade_judge import BlastRadius, blast_radius
from sispin.text import display_path, shown_key

#: a starter config is never written over a file
_EXISTS = "--config {}: the file exists; refusing to overwrite it (list it with --configs)"

#: a pin.toml edit: changes the document, given the lockfile as it is when the edit is made
Edit = Callable[[Lockfile, tomlkit.TOMLDocument], None]


@dataclass(frozen=True)
class NewPin:
    """
    :param repo: the repository
    :param commit: the commit the new set pins
    :param branch: the branch it was taken from (None: the default branch)
    """

    repo: str
    commit: str
    branch: Optional[str]


@dataclass(frozen=True)
class NewSet:
    """
    :param lock: the pin.toml the set was added to
    :param name: the new set
    :param from_set: the set whose repositories it pins; None when it pins all of ``[repos]``
    :param pins: its pins, in order
    :param as_of: the moment the branches were taken as of; None: their heads
    :param configs: its configs
    :param starter: the starter config written (setup-relative); None when none was asked for
    :param graph: its graph, recorded in the snapshot; None when it could not be built
    :param not_recorded: why it could not be built ("" when it was)
    :param reuse: with a template set, what starting at the newest commits renews of the graph the set would have
        at the template's commits (the jobs it would run, the finished ones it would not reuse, and their price);
        None without one, or when a graph could not be built
    :param reuse_unknown: why the template's graph could not be built ("" when it was, or without a template)
    """

    lock: Path
    name: str
    from_set: Optional[str]
    pins: Tuple[NewPin, ...]
    as_of: Optional[datetime.datetime]
    configs: Tuple[str, ...]
    starter: Optional[str]
    graph: Optional[SetGraph]
    not_recorded: str
    reuse: Optional[BlastRadius] = None
    reuse_unknown: str = ""

    @property
    def snapshot(self) -> Path:
        """The pin.snapshot.toml the graph goes into."""
        return snapshot_path(self.lock)

    @property
    def configs_fail(self) -> bool:
        """Whether the set lists configs that do not load (it is written all the same; a script must notice)."""
        return self.graph is None and bool(self.configs)

    def commit_message(self) -> Tuple[str, List[str], List[Path]]:
        """:return: the summary and body of ``--commit``'s commit, and the files it commits beside the lock"""
        pins = ", ".join(f"{pin.repo} {pin.commit[:7]}" for pin in self.pins)
        return f"pin new {self.name}: {pins}", [], [self.lock.parent / self.starter] if self.starter else []


def new_set(
    path: Path,
    name: str,
    *,
    from_set: Optional[str],
    configs: Sequence[str],
    store: Store,
    starter: Optional[str] = None,
    as_of: Optional[datetime.datetime] = None,
) -> NewSet:
    """
    :param path: the pin.toml
    :param name: the new set's name
    :param from_set: take the repositories (and their extra job arguments) from this set; None for all repositories
    :param configs: the new set's config files (setup-relative); each must exist
    :param store: the mirrors to resolve branch heads in (fetched first)
    :param starter: write a starter config here (setup-relative; must not exist) and add it to the configs
    :param as_of: pin each branch as it was at this time (None: its head)
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
    at_template = None
    if from_set is not None:
        # the same set at the template's commits: what starting there would reuse, to weigh against the newest
        at_template = _adding(
            name, configs, {repo: Pin(repo, pin.commit, pin.job_kwargs) for repo, pin in template.items()}
        )
    try:
        (graph, not_recorded), (reuse, reuse_unknown) = _new_graph(lockfile, text, name, (add, at_template))
        if graph is None:
            edit_lockfile(path, add)
        else:
            edit_lock_and_snapshot(path, add, [graph])
    except BaseException:
        if written is not None:
            written.unlink()  # the set was not added: its starter config would belong to nothing
        raise
    new_pins = tuple(NewPin(repo, sha, lockfile.get_repo(repo).branch) for repo, sha in heads.items())
    return NewSet(
        path, name, from_set, new_pins, as_of, tuple(configs), starter, graph, not_recorded, reuse, reuse_unknown
    )


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


def _new_graph(
    lockfile: Lockfile, text: str, name: str, edits: Tuple[Edit, Optional[Edit]]
) -> Tuple[Tuple[Optional[SetGraph], str], Tuple[Optional[BlastRadius], str]]:
    """
    The new set's job graph, built from the lock as it will be, so that its snapshot is written with it and `pin
    check` passes right away; beside it, side by side, the same set at its template's commits.

    :param edits: the edit that adds the set at the newest commits, and the one that adds it at its template's
        (None: no template)
    :return: the graph, or None and why it cannot be built (e.g. no Sisyphus, or its configs do not exist yet); and
        what starting at the newest commits renews of starting at the template's, or None and why it is not known
        ("" without a template)
    """
    add, at_template = edits
    candidate_text = _with_set(text, lockfile, add)
    template_text = _with_set(text, lockfile, at_template) if at_template is not None else candidate_text
    builds = [GraphBuild(name, candidate_text, records="all", requests=at_template is not None)]
    if template_text != candidate_text:
        builds.append(GraphBuild(name, template_text, records="all", blind=False))
    try:
        graphs = load_graphs(parse_lockfile(candidate_text, lockfile.path), builds)
    except SisyphusError as exc:
        return (None, str(exc)), (None, "")
    graph, template = graphs[0], graphs[-1]
    if isinstance(graph, SisyphusError):
        return (None, str(graph)), (None, "")
    if at_template is None:
        return (graph, ""), (None, "")
    if isinstance(template, SisyphusError):
        return (graph, ""), (None, str(template))
    return (graph, ""), (blast_radius(template, graph, lockfile.root / "work"), "")


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
