"""
What makes a set's job graph untrustworthy, whatever the snapshot says: a clone of a locked repository that is not
the set's pin (another commit, a branch, or not pinned by the set), a clone of any other repository that pins no
commit (its content changes under one id), and a clone output whose commit is hidden from a hash by
``hash_overwrite`` (on the job's own output, or on a copy that some job hashes). A set may accept clones outside the
lock by URL (``allow_unpinned``, ``allow_hash_overwrite``), never silently. Shared by ``pin check`` and ``pin
snapshot`` (which refuses to record hidden commits).
"""

from __future__ import annotations

__all__ = [
    "Problem",
    "overwrite_problems",
    "off_lock_problems",
    "commit_blind_problems",
    "changed_clone_problems",
    "state_problems",
    "rebound_alias_problems",
    "hidden_commit_problems",
    "recording_problems",
]

from dataclasses import dataclass
from typing import Callable, Collection, Dict, List, Mapping, Optional, Sequence, Tuple

from sispin.clonejob import clone_identity, shown_clone, stands_for
from sispin.git.store import Store
from sispin.graph.explain import short_id
from sispin.graph.moved import moved_builds
from sispin.graph.probe.schema import Clone, Escape, SetGraph
from sispin.lock.lockfile import Lockfile, SetSpec, is_full_sha
from sispin.lock.urls import same_repository
from sispin.text import capped, count, listed, shown_key


@dataclass(frozen=True)
class Problem:
    """
    One problem (one root cause): its line, and the lines that ``--verbose`` and ``--json`` add under it (every job
    and argument it stands for).

    :param text: the line (what ``str()`` of the problem renders), without the names it lists
    :param details: the lines under it
    :param named: what the line lists after ``text`` (the outputs a change renews): how many of them a report shows
        is the renderer's choice (``str()`` lists them all)
    """

    text: str
    details: Tuple[str, ...] = ()
    named: Tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # given as any sequence, kept as they were given
        object.__setattr__(self, "details", tuple(self.details))
        object.__setattr__(self, "named", tuple(self.named))

    def __str__(self) -> str:
        return f"{self.text}: {', '.join(self.named)}" if self.named else self.text


def overwrite_problems(lockfile: Lockfile, graph: SetGraph) -> List[Problem]:
    """
    Every hash_overwrite on a clone's path that hides a commit the lock does not bind it to, one line per root cause:
    the assignment in the configs (``file:line``), with the jobs whose ids it keeps (the first, and how many) and
    the outputs that depend on them. Accepted: the alias a pin binds to the clone's commit (and values derived from
    it by ``join_right``), and any overwrite on a clone outside the lock whose URL the set lists under
    ``allow_hash_overwrite``.

    :param lockfile: the setup's lockfile (to name the repository of a clone, its aliases, the accepted URLs)
    :param graph: a set's graph
    """
    spec = lockfile.get_set(graph.set_name)
    clones = {clone.job: clone for clone in graph.clones}
    causes: Dict[Tuple[str, str, str], List[Escape]] = {}
    for clone in graph.clones:
        if clone.hash_overwrite is not None and not _accepted(lockfile, spec, clone, clone.hash_overwrite, clone.alias):
            causes.setdefault(_cause(graph, clone.job, clone.hash_overwrite), [])
    for escape in graph.escapes:
        clone = clones.get(escape.clone)
        if clone is None or not _accepted(lockfile, spec, clone, escape.hash_overwrite, escape.alias):
            causes.setdefault(_cause(graph, escape.clone, escape.hash_overwrite), []).append(escape)
    above = graph.outputs_above()
    problems = [
        _overwrite_line(lockfile, graph, clones, cause, escapes, above) for cause, escapes in sorted(causes.items())
    ]
    return problems + _bound_value_problems(lockfile, graph)


def _accepted(lockfile: Lockfile, spec: SetSpec, clone: Clone, overwrite: str, alias: Optional[str]) -> bool:
    """
    Whether an overwrite on a clone's path is exactly the alias a pin of the set binds to its clone (carried on by
    ``join_right``), or on a clone the set accepts by URL; a value the lock binds (or one that starts with it, which
    a ``join_right`` of the bound clone can reach) stands for its pin's clone only, whatever the set accepts.
    """
    if alias is not None and any(
        pin.hash_overwrite == alias
        and clone_identity(clone.arguments()) == clone_identity(lockfile.clone_kwargs(spec.name, repo))
        and same_repository(clone.url, lockfile.repos[repo].url)
        for repo, pin in spec.pins.items()
    ):
        return True
    if _bound_elsewhere(lockfile, overwrite) is not None:
        return False
    return any(same_repository(clone.url, url) for url in spec.allow_hash_overwrite)


def _bound_value_problems(lockfile: Lockfile, graph: SetGraph) -> List[Problem]:
    """
    A path that no clone created with a value the lock binds hashes exactly like the bound clone's path (Sisyphus
    hashes an overwritten path as its value alone): the jobs of the two would share ids across content.
    """
    problems = []
    for overwrite in graph.overwrites:
        bound = _bound_elsewhere(lockfile, overwrite.value, joined=True)
        if bound is not None:
            problems.append(
                Problem(
                    capped(
                        f"sets.{shown_key(graph.set_name)}: hash_overwrite {overwrite.value!r} set at "
                        f"{overwrite.where or '(where it was set is unknown)'} on {overwrite.path}, which no clone "
                        f"made: pin.toml binds the value to {bound}, so {short_id(overwrite.job)} (hashing it as "
                        f"{overwrite.argument}) would share its id with a job built from that commit (give the path "
                        "another value)"
                    )
                )
            )
    return problems


def _cause(graph: SetGraph, clone: str, overwrite: str) -> Tuple[str, str, str]:
    """(where, value, clone): the assignment the overwrite comes from (a join_right of it carries it on)."""
    made = [a for a in graph.assignments if a.clone == clone and overwrite.startswith(a.value)]
    first = max(made, key=lambda a: len(a.value)) if made else None
    return (
        (first.where or "pin.toml", first.value, clone)
        if first
        else ("(where it was set is unknown)", overwrite, clone)
    )


def _overwrite_line(
    lockfile: Lockfile,
    graph: SetGraph,
    clones: Dict[str, Clone],
    cause: Tuple[str, str, str],
    escapes: List[Escape],
    above: Callable[[str], Tuple[str, ...]],
) -> Problem:
    where, value, clone = cause
    described = _describe(lockfile, clones.get(clone), clone)
    text = f"sets.{shown_key(graph.set_name)}: hash_overwrite {value!r} set at {where} on {described}"
    other = _bound_elsewhere(lockfile, value)
    if other:
        text += f" (pin.toml binds it to {other})"
    jobs = sorted({escape.job for escape in escapes})
    if not jobs:
        return Problem(capped(text + " hides the commit from the clone's own output"))
    first = min(escapes, key=lambda escape: (escape.job, escape.argument))
    outputs = sorted({name for escape in escapes for name in above(escape.job)})
    details = [
        f"{escape.job} (outputs: {', '.join(above(escape.job)) or 'none registered'}) hashes {escape.argument}, a path "
        f"of {described} with hash_overwrite={escape.hash_overwrite!r}: its id does not change with the commit"
        for escape in sorted(escapes, key=lambda escape: (escape.job, escape.argument))
    ]
    return Problem(
        capped(
            f"{text} hides the commit from {count(len(jobs), 'job')} (first: "
            f"{short_id(first.job)} hashes {first.argument}; outputs: {listed(outputs)})"
        ),
        details,
    )


def _bound_elsewhere(lockfile: Lockfile, value: str, joined: bool = False) -> Optional[str]:
    """
    :param joined: count only the bound value itself and its ``join_right`` forms (``VALUE/...``), not every value
        that starts with it
    :return: ``R abc1234 in sets.S`` when a pin of the lock binds the value, or a value it starts with
    """
    for name, spec in lockfile.sets.items():
        for repo, pin in spec.pins.items():
            bound = pin.hash_overwrite
            if bound is not None and (value == bound or value.startswith(bound + "/" if joined else bound)):
                return f"{repo} {pin.commit[:7]} in sets.{shown_key(name)}"
    return None


def _describe(lockfile: Lockfile, clone: Optional[Clone], job: str) -> str:
    if clone is None:
        return job
    name = next((name for name, repo in lockfile.repos.items() if same_repository(clone.url, repo.url)), clone.url)
    return f"{job} ({name} {clone.commit[:7] if clone.commit else 'unpinned'})"


def off_lock_problems(lockfile: Lockfile, graph: SetGraph) -> List[Problem]:
    """
    :return: one line per clone that is not what the lock says: a clone of a locked repository (its URL up to
        spelling) at a commit none of the set's entries of that repository pins, following a branch, or of a
        repository the set does not pin; and a clone of any other repository that pins no full commit, unless the
        set accepts its URL under ``allow_unpinned``
    """
    spec = lockfile.get_set(graph.set_name)
    problems = []
    for clone in graph.clones:
        where = f"sets.{shown_key(graph.set_name)}: {clone.job}" + (f" (made at {clone.where})" if clone.where else "")
        # several entries may share a repository, each its own pin: the clone must match one of them
        entries = [name for name, repo in lockfile.repos.items() if same_repository(clone.url, repo.url)]
        pinned = {name: spec.pins[name].commit for name in entries if name in spec.pins}
        if not entries:
            if not is_full_sha(clone.commit) and not any(same_repository(clone.url, u) for u in spec.allow_unpinned):
                follows = f"commit {clone.commit!r}" if clone.commit else "no commit: it follows its branch"
                problems.append(
                    Problem(
                        f"{where}: clones {clone.url} with {follows}, so its content changes under the same id "
                        f"(pin it, or accept it with allow_unpinned in [sets.{shown_key(graph.set_name)}])"
                    )
                )
        elif not pinned:
            problems.append(
                Problem(f"{where}: clones locked repository {entries[0]} ({clone.url}), which the set does not pin")
            )
        elif clone.commit not in pinned.values():
            shown = " or ".join(commit[:7] for commit in pinned.values())
            name = next(iter(pinned))
            if clone.commit is None:
                problems.append(Problem(f"{where}: clones {name} following a branch instead of the pinned {shown}"))
            else:
                # a short or uppercase SHA is shown whole: its first 7 characters may read like the pin's
                at = clone.commit[:7] if is_full_sha(clone.commit) else repr(clone.commit)
                problems.append(Problem(f"{where}: clones {name} at {at}, the set pins {shown}"))
    return problems


def commit_blind_problems(lockfile: Lockfile, graph: SetGraph) -> List[Problem]:
    """
    The check that does not depend on how a commit is hidden: every job that uses a clone of the set's pins (however
    that clone was built, directly or through other jobs, through any argument) must get another id when the commit
    moves (:func:`sispin.graph.probe.moving.blind_jobs`, Sisyphus's own hashes recomputed with the clones moved). One
    that keeps its id does not depend on the commit — a hash_overwrite on some path between, an object with a hash of
    its own, a job's own ``hash()`` that drops it, an argument the job does not hash.

    :param lockfile: the setup's lockfile
    :param graph: the set's graph at its pins
    :return: one line per job that is the first on its path to keep its id (the jobs above it keep theirs through
        it), naming the outputs that depend on it, and per job whose arguments changed after it got its id; jobs
        already named as hashing an overwritten clone path are left to that message
    """
    clones = {clone.job: clone for clone in graph.clones}
    problems = []
    for repo in sorted({repo for repos in graph.blind.values() for repo in repos}):
        blind = {job for job, repos in graph.blind.items() if repo in repos}
        # a job hashing an overwritten path of this pin's clone is named by the overwrite (or accepted as its alias)
        named = {escape.job for escape in graph.escapes if graph.pinned.get(escape.clone) == repo}
        # the first blind job on each path: none of its inputs is blind (those above it keep their ids through it)
        for job in sorted(j for j in blind - named if not any(used in blind for used in graph.inputs.get(j, ()))):
            through = [used for used in graph.inputs.get(job, ()) if graph.pinned.get(used) == repo or used in blind]
            via = ", ".join(_describe(lockfile, clones.get(used), used) for used in sorted(through))
            via = via or _pin(lockfile, graph, repo)
            problems.append(
                Problem(
                    f"sets.{shown_key(graph.set_name)}: {job} (outputs: {_outputs_of(graph, job)}) uses {via}"
                    f" but keeps its id when the pinned commit of {repo} moves: something between hides the commit "
                    "from its hash (a hash_overwrite, an object with a hash of its own, a job's own hash(), an "
                    "argument it does not hash)"
                )
            )
    problems += [
        Problem(
            f"sets.{shown_key(graph.set_name)}: {job} (outputs: {_outputs_of(graph, job)}) uses a pinned clone, and "
            "its arguments changed after it got its id: its id is not made of what it holds, so the id cannot follow "
            "the commit (pass what it should hold when the job is created)"
        )
        for job in sorted(graph.changed_jobs)
    ]
    return problems


def _pin(lockfile: Lockfile, graph: SetGraph, repo: str) -> str:
    """A pin as a problem names it when the job holds it where Sisyphus sees no input: entry and commit."""
    return f"{repo} {lockfile.sets[graph.set_name].pins[repo].commit[:7]} (in what it holds)"


def _outputs_of(graph: SetGraph, job: str) -> str:
    """The registered outputs that depend on a job: the first few, and how many more."""
    return listed(list(graph.outputs_above()(job)))


def rebound_alias_problems(graph: SetGraph, bound: Mapping[str, Sequence[str]]) -> List[Problem]:
    """
    :param graph: the set now (its pins' bound hash_overwrite values)
    :param bound: hash_overwrite value -> every clone it stood for when a set was recorded (see
        :func:`sispin.graph.snapshot.read_recorded`)
    :return: one line per value the lock now binds to a clone it never stood for (another commit, other patches,
        files, submodules or checkout folder): the old ids would pass for other code (an alias dies with its clone:
        remove it from the pin, and the ids move as they must)
    """
    # a value may stand for several clones (one overwrite on several clones, their jobs kept apart)
    return [
        Problem(
            f"sets.{shown_key(graph.set_name)}.{shown_key(repo)}: hash_overwrite {value!r} stood for "
            f"{', '.join(shown_clone(old) for old in bound[value])} when recorded in pin.snapshot.toml (in this set or "
            f"another, also one renamed or removed since); pin.toml binds it to {shown_clone(clone)} now: the old ids "
            "would pass for other code (remove it from the pin: the ids move, as they must; or restore the pin)"
        )
        for repo, (clone, value) in sorted(graph.aliases.items())
        if value in bound and not any(stands_for(old, clone) for old in bound[value])
    ]


def collision_problems(graph: SetGraph) -> List[Problem]:
    """:return: one line per construction that a hash_overwrite bound to several commits merged into another job"""
    return [
        Problem(
            f"sets.{shown_key(graph.set_name)}: {where or 'a config'} builds {job} again with other arguments, which "
            "a hash_overwrite bound to several commits hides: one job would stand for both; give the two commits' "
            "pins different hash_overwrite values, or none"
        )
        for job, where in graph.collisions
    ]


def changed_clone_problems(graph: SetGraph) -> List[Problem]:
    """:return: one line per clone job whose object was changed after it got its id (it checks out something else)"""
    return [
        Problem(
            f"sets.{shown_key(graph.set_name)}: {clone.job} was changed after it got its id "
            f"({'; '.join(clone.changed)}): what it checks out is not what its id says; pass the value when the job is "
            "created (a pin table can carry it)"
        )
        for clone in graph.clones
        if clone.changed
    ]


def state_problems(graph: SetGraph, moved: SetGraph, aliased: Collection[str] = ()) -> List[Problem]:
    """
    :param graph: the set at its pins, with every job's state
    :param moved: the set with its pins moved, with every job's state
    :param aliased: jobs that keep their ids through an alias the lock binds to the pin (it dies with the move)
    :return: one line per job that keeps its id when the pins move but holds something else (an argument it does not
        hash, an attribute set later), naming the first attribute that differs and where the configs took a pinned
        value out of the graph
    """
    before, after = graph.states or {}, moved.states or {}
    uses_seen = graph.value_uses or moved.value_uses
    taken = "; ".join(f"{use.what} at {use.where}" for use in uses_seen[:2]) or "a place the recording did not see"
    more = f" (+{len(uses_seen) - 2} more)" if len(uses_seen) > 2 else ""
    problems = []
    for job in sorted(set(before) & set(after) - set(aliased)):
        differing = sorted(
            name for name in set(before[job]) | set(after[job]) if before[job].get(name) != after[job].get(name)
        )
        if differing:
            problems.append(
                Problem(
                    f"sets.{shown_key(graph.set_name)}: {job} (outputs: {_outputs_of(graph, job)}) keeps its id when "
                    f"the pins move, but its {differing[0]} differs: it holds something built from a pinned value it "
                    f"does not hash (taken at: {taken}{more})"
                )
            )
    return problems


def _other_set_problems(graph: SetGraph) -> List[Problem]:
    """
    Another set's pinned values taken out of the graph in this set's configs: neither the check of this set (which
    moves this set's pins) nor an upgrade of the other set (which builds that set) would see them move.
    """
    return [
        Problem(
            f"sets.{shown_key(graph.set_name)}: {use.what} taken at {use.where}: the configs of set "
            f"{graph.set_name!r} use another set's pinned values outside the job graph, which no check moves with "
            f"that set's pins; pin the repository in set {graph.set_name!r} and use experiment_set({graph.set_name!r})"
        )
        for use in graph.value_uses
        if use.set_name is not None and use.set_name != graph.set_name
    ]


def hidden_commit_problems(lockfile: Lockfile, graph: SetGraph, store: Optional[Store] = None) -> List[Problem]:
    """
    Everything that hides a pinned commit from a job's hash: :func:`overwrite_problems`,
    :func:`commit_blind_problems`, :func:`changed_clone_problems`, and when the configs took a pinned value out of
    the graph, :func:`state_problems` against the set built once more with its pins moved.

    :param store: where the moved commits come from (default: the user's store)
    """
    problems = overwrite_problems(lockfile, graph) + commit_blind_problems(lockfile, graph)
    problems += changed_clone_problems(graph) + collision_problems(graph) + _other_set_problems(graph)
    if graph.value_uses:
        builds, cannot = moved_builds(lockfile, graph, store or Store())
        spec, clones = lockfile.get_set(graph.set_name), {clone.job: clone for clone in graph.clones}
        found: List[Problem] = []
        for repo, moved in builds:
            aliased = {
                escape.job
                for escape in graph.escapes
                if escape.clone in clones
                and graph.pinned.get(escape.clone) == repo
                and _accepted(lockfile, spec, clones[escape.clone], escape.hash_overwrite, escape.alias)
            }
            found += state_problems(graph, moved, aliased)
        problems += [Problem(line) for line in cannot] + list(dict.fromkeys(found))
    return problems


def recording_problems(lockfile: Lockfile, graph: SetGraph, bound: Mapping[str, Sequence[str]]) -> List[Problem]:
    """
    What keeps a set's ids from being trusted (``pin check``) or recorded (``pin snapshot``, an adoption): a record of
    ids that do not depend on the commits would make ``pin check`` pass on exactly what it must catch.

    :param lockfile: the lock the graph was built from
    :param graph: the set's graph
    :param bound: every commit each hash_overwrite value stood for (see :func:`rebound_alias_problems`)
    :return: one line per clone off the lock, place hiding a pinned commit, and alias bound to another commit
    """
    return (
        off_lock_problems(lockfile, graph)
        + hidden_commit_problems(lockfile, graph)
        + rebound_alias_problems(graph, bound)
    )
