"""
Adopting a whole existing setup in one command (``pin import --config``): nothing recomputed, the guarantee from then
on.

The set's graph is built by real Sisyphus from its configs as they are; every clone in it becomes pin.toml's: a
clone at a full commit a pin of the set (its repository an entry, named as :mod:`sispin.adopt.propose` names them),
a ``hash_overwrite`` the configs set on it an alias the pin binds to that commit, a clone that follows a branch (or
pins no full commit) an ``allow_unpinned`` URL when the user accepts it. The adoption is confirmed by building the set
again against the new lock: every output must keep its job id and nothing may hide a commit, else nothing is written.
The configs stay as they are; they can move to ``exp.repo()`` later, one call at a time, with the same ids.
"""

from __future__ import annotations

__all__ = ["SetupAdoption", "adopt_setup", "add_adoption", "adopted_pins"]

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence

import tomlkit

from sispin.adopt.propose import Entries, Proposal, add_to_document, lock_document
from sispin.adopt.sites import CallSite
from sispin.clonejob import DEFAULTS
from sispin.errors import LockfileError, SisyphusError
from sispin.graph.build import load_graph
from sispin.graph.guard import Problem, recording_problems
from sispin.graph.probe.schema import Assignment, Clone, SetGraph
from sispin.graph.snapshot import read_recorded, read_snapshot
from sispin.lock.editing import add_value
from sispin.lock.files import snapshot_path
from sispin.lock.loading import parse_lockfile
from sispin.lock.lockfile import Lockfile, Pin, is_full_sha
from sispin.lock.urls import same_repository
from sispin.text import capped, display_path, listed, shown_key


@dataclass
class SetupAdoption:
    """
    :param proposal: the repositories and pins to add (a static scan's, and those of the graph's clones)
    :param configs: the set's configs
    :param accepted: whether clones that pin no full commit are accepted by URL (``--accept-unpinned``)
    :param pinned: repository entry -> the commit of each clone of the graph adopted as that entry's pin
    :param aliases: repository entry -> the hash_overwrite its pin binds
    :param movable: file:line of the overwrites set as ``exp.repo()`` sets an alias (on the clone's own output,
        before any job used it): a call whose overwrites are all such moves to ``exp.repo()`` with the same ids
    :param unpinned: URLs of clones that pin no full commit
    :param overwritten: those of them that carry a hash_overwrite
    :param problems: why the adoption cannot keep every id, one line each (empty: it can)
    :param outputs: how many outputs the set registers
    :param kept: how many of them keep their job id against the new lock
    :param jobs: how many jobs the set's graph has
    :param clones: how many clone jobs it has
    :param waiting: configs that wait for unfinished jobs (what they build after that is not adopted yet)
    :param graph: the set built against the new lock (recorded in the snapshot when written)
    :param text: pin.toml's text with the adoption added (what the graph was built from)
    """

    proposal: Proposal
    configs: List[str]
    accepted: bool
    pinned: Dict[str, str] = field(default_factory=dict)
    aliases: Dict[str, str] = field(default_factory=dict)
    movable: List[str] = field(default_factory=list)
    unpinned: List[str] = field(default_factory=list)
    overwritten: List[str] = field(default_factory=list)
    problems: List[Problem] = field(default_factory=list)
    outputs: int = 0
    kept: int = 0
    jobs: int = 0
    clones: int = 0
    waiting: List[str] = field(default_factory=list)
    graph: Optional[SetGraph] = None
    text: str = ""


def _site_of(clone: Clone) -> CallSite:
    """A clone of the graph as the call a person would have written (the arguments that differ from the defaults)."""
    given = clone.arguments()
    arguments = {name: value for name, value in given.items() if name in ("url", "commit") or value != DEFAULTS[name]}
    return CallSite(file="(graph)", line=0, arguments=arguments)


def _text(lockfile: Optional[Lockfile], adoption: SetupAdoption, set_name: str) -> str:
    """pin.toml's text with the adoption added."""
    document = lock_document(lockfile)
    add_adoption(document, adoption, set_name)
    return tomlkit.dumps(document)


def adopted_pins(adoption: SetupAdoption) -> Dict[str, Any]:
    """:return: the pins the adoption adds, as pin.toml writes them: each with the alias it binds"""
    pins = dict(adoption.proposal.pins)
    for repo, alias in adoption.aliases.items():
        if repo in pins:
            value = pins[repo]
            pins[repo] = {**({"commit": value} if isinstance(value, str) else value), "hash_overwrite": alias}
    return pins


def add_adoption(document: tomlkit.TOMLDocument, adoption: SetupAdoption, set_name: str) -> None:
    """
    Add an adoption to pin.toml's document: its repositories, pins and aliases, the set's configs and accepted URLs;
    existing entries are never changed.

    :param document: pin.toml's document
    :param adoption: what to add
    :param set_name: the adopting set
    """
    add_to_document(document, Proposal(adoption.proposal.repos, adopted_pins(adoption)), set_name)
    table = document["sets"][set_name]
    lists = {
        "configs": adoption.configs,
        "allow_unpinned": adoption.unpinned if adoption.accepted else [],
        "allow_hash_overwrite": adoption.overwritten if adoption.accepted else [],
    }
    for key, values in lists.items():
        new = [value for value in values if value not in list(table.get(key, []))]
        if new and key not in table:
            add_value(table, key, tomlkit.array())
        for value in new:
            table[key].append(value)


def adopt_setup(
    lockfile: Optional[Lockfile],
    path: Path,
    set_name: str,
    configs: Sequence[str],
    *,
    accept_unpinned: bool,
    proposal: Proposal,
) -> SetupAdoption:
    """
    :param lockfile: the setup's pin.toml (None: there is none yet)
    :param path: where pin.toml is (or will be)
    :param set_name: the set to adopt the configs as
    :param configs: the configs, relative to the setup root
    :param accept_unpinned: accept clones that pin no full commit by their URL
    :param proposal: what a static scan proposes already (its entries' names are kept); the graph's clones are added
    :raises SisyphusError: when the setup's graph cannot be built as it is (nothing is adopted)
    """
    adoption = SetupAdoption(Proposal(), configs=list(dict.fromkeys(configs)), accepted=accept_unpinned)
    text = _text(lockfile, adoption, set_name)  # the set with its configs and no new pin: the setup as it is
    before = load_graph(parse_lockfile(text, path), set_name, text)
    adoption.waiting = list(before.waiting)
    adoption.proposal = proposal
    entries = Entries(proposal, lockfile, set_name)
    existing = lockfile.sets[set_name].pins if lockfile and set_name in lockfile.sets else {}
    for clone in sorted(before.clones, key=lambda clone: clone.job):
        assigned = [a for a in before.assignments if a.clone == clone.job]
        if is_full_sha(clone.commit):
            _adopt_pinned(adoption, entries.entry_for(_site_of(clone)), clone, assigned, existing)
        elif clone.commit and is_full_sha(clone.commit.lower()):
            adoption.problems.append(
                Problem(
                    f"{clone.url} is cloned at {clone.commit!r}, a full SHA in uppercase: pin.toml holds commits in "
                    "lowercase, and the lowercase commit gives the clone another id; nor can the URL be accepted "
                    "unpinned, for its commit would then move unseen (lower it in the config: its jobs rerun)"
                )
            )
        else:
            adoption.unpinned += [clone.url] if clone.url not in adoption.unpinned else []
            adoption.overwritten += [clone.url] if assigned and clone.url not in adoption.overwritten else []
    # the set pins what its configs build: a call the scan found that no config reaches stays as written, unpinned
    proposal.pins = {repo: pin for repo, pin in proposal.pins.items() if repo in adoption.pinned}
    proposal.repos = {repo: table for repo, table in proposal.repos.items() if repo in adoption.pinned}
    _check_unpinned(adoption, lockfile, set_name)
    _check_recorded(adoption, before, path, set_name)
    _confirm(adoption, before, lockfile, path, set_name)
    return adoption


def _adopt_pinned(
    adoption: SetupAdoption, repo: str, clone: Clone, assigned: List[Assignment], existing: Mapping[str, Pin]
) -> None:
    """A clone at a full commit becomes the pin of repo; the one overwrite it carries becomes the pin's alias."""
    adoption.pinned[repo] = clone.commit or ""
    values = sorted({a.value for a in assigned})
    places = ", ".join(sorted({a.where for a in assigned}))
    if len(values) > 1:
        adoption.problems.append(
            Problem(
                f"{clone.url} {clone.commit[:7] if clone.commit else ''} carries {len(values)} hash_overwrite values "
                f"(set at {places}): a pin binds one"
            )
        )
    elif values and repo in existing and existing[repo].hash_overwrite != values[0]:
        # an existing pin is never rewritten: the user adds the alias (or the code stops setting the value)
        adoption.problems.append(
            Problem(
                f"pin.toml pins {repo} at {clone.commit[:7] if clone.commit else ''} already, without binding "
                f'hash_overwrite {values[0]!r} (set at {places}): write it as {repo} = {{ commit = "{clone.commit}", '
                f'hash_overwrite = "{values[0]}" }}'
            )
        )
    elif values:
        adoption.aliases[repo] = values[0]
        adoption.movable += sorted({a.where for a in assigned if a.own} - {a.where for a in assigned if not a.own})


def _check_unpinned(adoption: SetupAdoption, lockfile: Optional[Lockfile], set_name: str) -> None:
    """Clones without a full commit: accepted by URL when asked, never one of a repository the set pins."""
    adoption.unpinned.sort()
    adoption.overwritten.sort()
    urls = [table["url"] for table in adoption.proposal.repos.values()]
    urls += [lockfile.repos[repo].url for repo in adoption.pinned if lockfile and repo in lockfile.repos]
    locked = [url for url in adoption.unpinned if any(same_repository(url, other) for other in urls)]
    for url in locked:
        adoption.problems.append(
            Problem(
                f"{url} is cloned both at a pinned commit and without one: a pinned repository's clones must all be "
                "its pin, so the other cannot be accepted unpinned (pin it in the config: its jobs rerun; or leave the "
                "setup as it is)"
            )
        )
    adoption.unpinned = [url for url in adoption.unpinned if url not in locked]
    adoption.overwritten = [url for url in adoption.overwritten if url not in locked]
    if adoption.unpinned and not adoption.accepted:
        adoption.problems += [
            Problem(
                f"{url} is cloned without a full commit: accept it with allow_unpinned = [{url!r}] in "
                f"[sets.{shown_key(set_name)}] (--accept-unpinned writes it), or pin a commit in the config"
            )
            for url in adoption.unpinned
        ]


def _check_recorded(adoption: SetupAdoption, before: SetGraph, path: Path, set_name: str) -> None:
    """A set recorded before must build what was recorded: the adoption never records a change of its ids."""
    recorded = read_snapshot(snapshot_path(path)).get(set_name)
    if recorded is None:
        return
    drifted = sorted(
        name for name in set(recorded) | set(before.outputs) if recorded.get(name) != before.outputs.get(name)
    )
    if drifted:
        details = [
            f"output {name}: {recorded[name].job if name in recorded else '(none)'} -> "
            f"{before.outputs[name].job if name in before.outputs else '(none)'}"
            for name in drifted
        ]
        line = (
            f"sets.{shown_key(set_name)} already differs from {display_path(snapshot_path(path))} in {len(drifted)} "
            "outputs "
            f"({listed(drifted)}): review it with `pin explain {set_name}`, record it with `pin snapshot {set_name}`"
        )
        adoption.problems.append(Problem(capped(line), details))


def _confirm(
    adoption: SetupAdoption, before: SetGraph, lockfile: Optional[Lockfile], path: Path, set_name: str
) -> None:
    """Build the set against the new lock: every output keeps its job id, nothing hides a commit."""
    adoption.text = _text(lockfile, adoption, set_name)
    adoption.outputs, adoption.jobs, adoption.clones = len(before.outputs), len(before.jobs), len(before.clones)
    try:
        adopted = parse_lockfile(adoption.text, path)
        after = load_graph(adopted, set_name, adoption.text, records="all")
    except LockfileError as exc:
        adoption.problems.append(Problem(f"the adopted pins would not make a valid pin.toml: {exc}"))
        return
    except SisyphusError as exc:
        adoption.problems.append(Problem(f"the set does not build against the adopted pins: {exc}"))
        return
    adoption.graph = after
    adoption.kept = sum(after.outputs.get(name) == output for name, output in before.outputs.items())
    changed = sorted(name for name, output in before.outputs.items() if after.outputs.get(name) != output)
    if changed:
        now = {name: after.outputs[name].job if name in after.outputs else "(none)" for name in changed}
        details = [f"output {name}: {before.outputs[name].job} -> {now[name]}" for name in changed]
        line = f"{len(changed)} of {adoption.outputs} outputs would get another job id: {listed(changed)}"
        adoption.problems.append(Problem(capped(line), details))
    adoption.problems += recording_problems(adopted, after, read_recorded(snapshot_path(adopted.path))[1])
