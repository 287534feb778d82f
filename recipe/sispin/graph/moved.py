"""
A set built once more with its pins moved, for the sets whose configs take a pinned value out of the graph (see
:mod:`sispin.graph.probe.moving`): everything that reads the lock (``exp.repo``, ``commit``, ``clone_job``,
``checkout``, ``imported``, ``current_set``) reads the moved pins, a hand-written clone of a pin clones the moved
commit, and an async config gets past the awaits the real build got past. Then a job that keeps its id must keep its
whole state.

The moved commit of a pin is its parent in the store's mirror (the head of its branch for a first commit), a real
commit, so that a checkout or an import of the moved code builds what that code builds; a repository whose code the
set never checks out or imports may move to a commit that exists nowhere (only ids depend on it).
"""

from __future__ import annotations

__all__ = ["MovedPins", "moved_pins", "moved_builds"]

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from sispin.errors import RevisionError, SisyphusError, UnsupportedVersionError
from sispin.git.history import branch_commit, parent_commit
from sispin.git.store import Store
from sispin.graph.build import GraphBuild, load_graphs
from sispin.graph.probe.schema import SetGraph
from sispin.lock.editing import render_lockfile
from sispin.lock.lockfile import Lockfile
from sispin.text import shown_key


@dataclass(frozen=True)
class MovedPins:
    """
    :param commits: repository -> (pinned commit, the commit it moves to)
    :param unmovable: repositories whose code the set checks out or imports but the store holds no other commit of
    """

    commits: Dict[str, Tuple[str, str]]
    unmovable: Tuple[str, ...] = ()


def _unreal(commit: str) -> str:
    """A commit that exists nowhere, one hex digit from commit: for repositories whose code nobody loads."""
    return commit[:-1] + format((int(commit[-1], 16) + 1) % 16, "x")


def moved_pins(lockfile: Lockfile, graph: SetGraph, store: Store) -> MovedPins:
    """
    :param lockfile: the setup's lockfile
    :param graph: the set at its pins
    :param store: whose mirrors give the moved commits (read as they are: no fetch)
    :return: where each of the set's pins moves
    """
    loaded = {use.repo for use in graph.value_uses if use.repo}
    commits, unmovable = {}, []
    for repo, pin in lockfile.get_set(graph.set_name).pins.items():
        spec = lockfile.get_repo(repo)
        other = _other_commit(store.mirror(spec.url), pin.commit, spec.branch)
        if other is None and repo in loaded:
            unmovable.append(repo)
        commits[repo] = (pin.commit, other or _unreal(pin.commit))
    return MovedPins(commits, tuple(unmovable))


def _other_commit(mirror: Optional[Path], commit: str, branch: Optional[str]) -> Optional[str]:
    """A real commit next to the pin in the mirror: its parent, else (a first commit) its branch's head."""
    if mirror is None:
        return None
    try:
        head = branch_commit(mirror, branch)
    except RevisionError:
        head = None
    return parent_commit(mirror, commit) or (head if head != commit else None)


def _moved_build(lockfile: Lockfile, graph: SetGraph, moves: MovedPins) -> GraphBuild:
    """
    :param lockfile: the setup's lockfile
    :param graph: the set at its pins (its awaits are passed as far in the moved build)
    :param moves: where each pin moves
    :return: the build of the set's graph with its pins moved, with every job's state
    """
    spec = lockfile.get_set(graph.set_name)
    # a moved pin has no alias: the hash_overwrite the lock binds stands for the old commit only
    pins = {
        repo: pin._replace(commit=moves.commits[repo][1], hash_overwrite=None) if repo in moves.commits else pin
        for repo, pin in spec.pins.items()
    }
    text = render_lockfile(lockfile._replace(sets={**lockfile.sets, spec.name: spec._replace(pins=pins)}))
    remap: List[Tuple[str, str, str]] = [
        (lockfile.get_repo(repo).url, old, new) for repo, (old, new) in moves.commits.items()
    ]
    moved = {"remap": remap, "awaits": graph.awaits}
    return GraphBuild(graph.set_name, text, states=True, moved=moved, scratch_checkouts=True)


def moved_builds(lockfile: Lockfile, graph: SetGraph, store: Store) -> Tuple[List[Tuple[str, SetGraph]], List[str]]:
    """
    The set built with each pin moved on its own (one build when it has one pin): moved together, a job that hashes
    one pin gets a new id and hides what it holds of another pin's code unhashed. The builds run side by side, forked
    after the modules the set's own build imported from the Python installation (see
    :func:`sispin.graph.build.load_graphs`).

    :return: (the pin moved, the set built so) for each pin, and why a build cannot be made (one line each; then no
        builds)
    """
    moves = moved_pins(lockfile, graph, store)
    if moves.unmovable:
        return [], [
            f"sets.{shown_key(graph.set_name)}: {repo}: the set checks out or imports its code, and the store holds no "
            "other commit of it to build the set with for the moved-commit check (run `pin status --fetch`)"
            for repo in moves.unmovable
        ]
    moving = sorted(moves.commits.items())
    try:
        built = load_graphs(
            lockfile,
            [_moved_build(lockfile, graph, MovedPins({repo: commits})) for repo, commits in moving],
            graph.site_modules,
        )
    except UnsupportedVersionError:
        raise
    except SisyphusError as exc:  # the builds took too long: no finding about the set, and no check of it either
        return [], [f"sets.{shown_key(graph.set_name)}: the moved-commit check cannot build the set: {exc}"]
    builds = []
    for (repo, commits), result in zip(moving, built):
        if isinstance(result, SisyphusError):
            return [], [
                f"sets.{shown_key(graph.set_name)}: the moved-commit check cannot build the set at {repo} "
                f"{commits[1][:7]}: {result}"
            ]
        builds.append((repo, result))
    return builds, []
