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
    "overwrite_problems",
    "off_lock_problems",
    "commit_blind_problems",
    "changed_clone_problems",
    "state_problems",
    "hidden_commit_problems",
]

from typing import List, Optional

from sispin.git.store import Store
from sispin.graph.build import Clone, SetGraph, uses
from sispin.graph.moved import moved_build
from sispin.lock.lockfile import Lockfile, is_full_sha
from sispin.lock.urls import same_repository


def overwrite_problems(lockfile: Lockfile, graph: SetGraph) -> List[str]:
    """
    :param lockfile: the setup's lockfile (to name the repository of a clone, and the set's accepted URLs)
    :param graph: a set's graph
    :return: one line per clone output with a hash_overwrite: on the clone job's own output, and every path of a
        clone (a copy, ``join_right``...) that a job hashes, naming the outputs that depend on that job; a clone
        outside the lock whose URL the set lists under ``allow_hash_overwrite`` is accepted
    """
    where = f"sets.{graph.set_name}"
    accepted = lockfile.get_set(graph.set_name).allow_hash_overwrite
    clones = {clone.job: clone for clone in graph.clones}

    def allowed(clone: Optional[Clone]) -> bool:
        return clone is not None and any(same_repository(clone.url, url) for url in accepted)

    problems = [
        f"{where}: {clone.job}: hash_overwrite={clone.hash_overwrite!r} hides the commit from every hash"
        for clone in graph.clones
        if clone.hash_overwrite is not None and not allowed(clone)
    ]
    for escape in graph.escapes:
        if allowed(clones.get(escape.clone)):
            continue
        outputs = ", ".join(escape.outputs) or "none registered"
        problems.append(
            f"{where}: {escape.job} (outputs: {outputs}) hashes {escape.argument}, a path of "
            f"{_describe(lockfile, clones.get(escape.clone), escape.clone)} with hash_overwrite="
            f"{escape.hash_overwrite!r}: its id does not change with the commit"
        )
    return problems


def _describe(lockfile: Lockfile, clone: Optional[Clone], job: str) -> str:
    if clone is None:
        return job
    name = next((name for name, repo in lockfile.repos.items() if same_repository(clone.url, repo.url)), clone.url)
    return f"{job} ({name} {clone.commit[:7] if clone.commit else 'unpinned'})"


def off_lock_problems(lockfile: Lockfile, graph: SetGraph) -> List[str]:
    """
    :return: one line per clone that is not what the lock says: a clone of a locked repository (its URL up to
        spelling) at a commit none of the set's entries of that repository pins, following a branch, or of a
        repository the set does not pin; and a clone of any other repository that pins no full commit, unless the
        set accepts its URL under ``allow_unpinned``
    """
    spec = lockfile.get_set(graph.set_name)
    problems = []
    for clone in graph.clones:
        where = f"sets.{graph.set_name}: {clone.job}"
        # several entries may share a repository, each its own pin: the clone must match one of them
        entries = [name for name, repo in lockfile.repos.items() if same_repository(clone.url, repo.url)]
        pinned = {name: spec.pins[name].commit for name in entries if name in spec.pins}
        if not entries:
            if not is_full_sha(clone.commit) and not any(same_repository(clone.url, u) for u in spec.allow_unpinned):
                follows = f"commit {clone.commit!r}" if clone.commit else "no commit: it follows its branch"
                problems.append(
                    f"{where}: clones {clone.url} with {follows}, so its content changes under the same id "
                    f"(pin it, or accept it with allow_unpinned in [sets.{graph.set_name}])"
                )
        elif not pinned:
            problems.append(f"{where}: clones locked repository {entries[0]} ({clone.url}), which the set does not pin")
        elif clone.commit not in pinned.values():
            shown = " or ".join(commit[:7] for commit in pinned.values())
            name = next(iter(pinned))
            if clone.commit is None:
                problems.append(f"{where}: clones {name} following a branch instead of the pinned {shown}")
            else:
                # a short or uppercase SHA is shown whole: its first 7 characters may read like the pin's
                at = clone.commit[:7] if is_full_sha(clone.commit) else repr(clone.commit)
                problems.append(f"{where}: clones {name} at {at}, the set pins {shown}")
    return problems


def commit_blind_problems(lockfile: Lockfile, graph: SetGraph) -> List[str]:
    """
    The check that does not depend on how a commit is hidden: every job that uses a clone of the set's pins (however
    that clone was built, directly or through other jobs, through any argument) must get another id when the commit
    moves (:func:`sispin.graph.moving.blind_jobs`, Sisyphus's own hashes recomputed with the clones moved). One that
    keeps its id does not depend on the commit — a hash_overwrite on some path between, an object with its own
    ``_sis_hash``, a job's own ``hash()`` that drops it, an argument the job does not hash.

    :param lockfile: the setup's lockfile
    :param graph: the set's graph at its pins
    :return: one line per job that is the first on its path to keep its id (the jobs above it keep theirs through
        it), naming the outputs that depend on it, and per job whose arguments changed after it got its id; jobs
        already named as hashing an overwritten clone path are left to that message
    """
    blind = {job for job, verdict in graph.blind.items() if verdict == "blind"}
    named = {escape.job for escape in graph.escapes}
    # the first blind job on each path: none of its inputs is blind (those above it keep their ids through it)
    first = sorted(
        job for job in blind if job not in named and not any(used in blind for used in graph.inputs.get(job, ()))
    )
    clones = {clone.job: clone for clone in graph.clones}
    problems = []
    for job in first:
        through = sorted(used for used in graph.inputs.get(job, ()) if used in graph.blind or used in graph.pinned)
        via = ", ".join(_describe(lockfile, clones.get(used), used) for used in through)
        problems.append(
            f"sets.{graph.set_name}: {job} (outputs: {_outputs_of(graph, job)}) uses {via} but keeps its id when the "
            "pinned commit moves: something between hides the commit from its hash (a hash_overwrite, an object "
            "with its own _sis_hash, a job's own hash(), an argument it does not hash)"
        )
    problems += [
        f"sets.{graph.set_name}: {job} (outputs: {_outputs_of(graph, job)}) uses a pinned clone, and its arguments "
        "changed after it got its id: its id is not made of what it holds, so the id cannot follow the commit (pass "
        "what it should hold when the job is created)"
        for job, verdict in sorted(graph.blind.items())
        if verdict == "changed"
    ]
    return problems


def _outputs_of(graph: SetGraph, job: str, shown: int = 5) -> str:
    """The registered outputs that depend on a job: the first few, and how many more."""
    names = sorted(name for name, output in graph.outputs.items() if output.job and uses(graph.inputs, output.job, job))
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return (", ".join(names[:shown]) + more) or "none registered"


def changed_clone_problems(graph: SetGraph) -> List[str]:
    """:return: one line per clone job whose object was changed after it got its id (it checks out something else)"""
    return [
        f"sets.{graph.set_name}: {clone.job} was changed after it got its id ({'; '.join(clone.changed)}): what it "
        "checks out is not what its id says; pass the value when the job is created (a pin table can carry it)"
        for clone in graph.clones
        if clone.changed
    ]


def state_problems(graph: SetGraph, moved: SetGraph) -> List[str]:
    """
    :param graph: the set at its pins, with every job's state
    :param moved: the set with its pins moved, with every job's state
    :return: one line per job that keeps its id when the pins move but holds something else (an argument it does not
        hash, an attribute set later), naming the first attribute that differs and where the configs took a pinned
        value out of the graph
    """
    before, after = graph.states or {}, moved.states or {}
    uses_seen = graph.value_uses or moved.value_uses
    taken = "; ".join(f"{use.what} at {use.where}" for use in uses_seen[:2]) or "in the configs"
    more = f" (+{len(uses_seen) - 2} more)" if len(uses_seen) > 2 else ""
    problems = []
    for job in sorted(set(before) & set(after)):
        differing = sorted(
            name for name in set(before[job]) | set(after[job]) if before[job].get(name) != after[job].get(name)
        )
        if differing:
            problems.append(
                f"sets.{graph.set_name}: {job} (outputs: {_outputs_of(graph, job)}) keeps its id when the pins move, "
                f"but its {differing[0]} differs: it holds something built from a pinned value it does not hash "
                f"(taken at: {taken}{more})"
            )
    return problems


def hidden_commit_problems(lockfile: Lockfile, graph: SetGraph, store: Optional[Store] = None) -> List[str]:
    """
    Everything that hides a pinned commit from a job's hash: :func:`overwrite_problems`,
    :func:`commit_blind_problems`, :func:`changed_clone_problems`, and when the configs took a pinned value out of
    the graph, :func:`state_problems` against the set built once more with its pins moved.

    :param store: where the moved commits come from (default: the user's store)
    """
    problems = overwrite_problems(lockfile, graph) + commit_blind_problems(lockfile, graph)
    problems += changed_clone_problems(graph)
    if graph.value_uses:
        moved, cannot = moved_build(lockfile, graph, store or Store())
        problems += cannot if moved is None else state_problems(graph, moved)
    return problems
