"""
What makes a set's job graph untrustworthy, whatever the snapshot says: a clone of a locked repository that is not
the set's pin (another commit, a branch, or not pinned by the set), a clone of any other repository that pins no
commit (its content changes under one id), and a clone output whose commit is hidden from a hash by
``hash_overwrite`` (on the job's own output, or on a copy that some job hashes). A set may accept clones outside the
lock by URL (``allow_unpinned``, ``allow_hash_overwrite``), never silently. Shared by ``pin check`` and ``pin
snapshot`` (which refuses to record hidden commits).
"""

from __future__ import annotations

__all__ = ["overwrite_problems", "off_lock_problems", "commit_blind_problems", "hidden_commit_problems"]

from typing import Dict, List, Optional

from sispin.graph.build import Clone, SetGraph, load_graph, uses
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
                problems.append(f"{where}: clones {name} at {clone.commit[:7]}, the set pins {shown}")
    return problems


def commit_blind_problems(lockfile: Lockfile, graph: SetGraph, moved: SetGraph) -> List[str]:
    """
    The check that does not depend on how a commit is hidden: ``moved`` is the same set built with every pinned clone
    at another commit, and every job that uses a pinned checkout (directly or through other jobs) must get another
    id there. One that keeps its id does not depend on the commit — a hash_overwrite on some path between, an object
    with its own ``_sis_hash``, a job's own ``hash()`` that drops it, an argument the job does not hash.

    :param lockfile: the setup's lockfile
    :param graph: the set's graph at its pins
    :param moved: the set's graph with the pinned clones at other commits
    :return: one line per job that is the first on its path to keep its id (the jobs above it keep theirs through
        it), naming the outputs that depend on it; jobs already named as hashing an overwritten clone path are left
        to that message
    """
    pinned = {clone.job for clone in graph.clones if clone.job not in moved.jobs}
    users: Dict[str, List[str]] = {}
    for job, inputs in graph.inputs.items():
        for used in inputs:
            users.setdefault(used, []).append(job)
    depends = set()
    queue = list(pinned)
    while queue:
        for user in users.get(queue.pop(), ()):
            if user not in depends:
                depends.add(user)
                queue.append(user)
    blind = {job for job in depends if job in moved.jobs}
    named = {escape.job for escape in graph.escapes}
    # the first blind job on each path: its inputs that lead to a pinned clone all moved
    first = sorted(
        job for job in blind if job not in named and not any(used in blind for used in graph.inputs.get(job, ()))
    )
    clones = {clone.job: clone for clone in graph.clones}
    problems = []
    for job in first:
        through = sorted(used for used in graph.inputs.get(job, ()) if used in depends or used in pinned)
        via = ", ".join(_describe(lockfile, clones.get(used), used) for used in through)
        outputs = sorted(name for name, output in graph.outputs.items() if uses(graph.inputs, output.job, job))
        problems.append(
            f"sets.{graph.set_name}: {job} (outputs: {', '.join(outputs) or 'none registered'}) uses {via} but keeps "
            "its id when the pinned commit moves: something between hides the commit from its hash (a hash_overwrite, "
            "an object with its own _sis_hash, a job's own hash(), an argument it does not hash)"
        )
    return problems


def hidden_commit_problems(lockfile: Lockfile, graph: SetGraph) -> List[str]:
    """
    Everything that hides a pinned commit from a job's hash: :func:`overwrite_problems`, then, when the set pins
    anything, :func:`commit_blind_problems` against the set built once more with its pinned clones moved.

    :raises SisyphusError: when the moved graph cannot be built
    """
    problems = overwrite_problems(lockfile, graph)
    if lockfile.get_set(graph.set_name).pins:
        problems += commit_blind_problems(lockfile, graph, load_graph(lockfile, graph.set_name, moved_pins=True))
    return problems
