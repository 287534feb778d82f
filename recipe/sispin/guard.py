"""
What makes a set's job graph untrustworthy, whatever the snapshot says: a clone of a locked repository that is not
the set's pin (another commit, a branch, or not pinned by the set), and a clone output whose commit is hidden from a
hash by ``hash_overwrite`` (on the job's own output, or on a copy that some job hashes). Shared by ``pin check``
and ``pin snapshot`` (which refuses to record such a graph).
"""

from __future__ import annotations

__all__ = ["overwrite_problems", "off_lock_problems"]

from typing import List, Optional

from sispin.graph import Clone, SetGraph
from sispin.lockfile import Lockfile
from sispin.urls import same_repository


def overwrite_problems(lockfile: Lockfile, graph: SetGraph) -> List[str]:
    """
    :param lockfile: the setup's lockfile (to name the repository of a clone)
    :param graph: a set's graph
    :return: one line per clone output with a hash_overwrite: on the clone job's own output, and every path of a
        clone (a copy, ``join_right``...) that a job hashes, naming the outputs that depend on that job
    """
    where = f"sets.{graph.set_name}"
    problems = [
        f"{where}: {clone.job}: hash_overwrite={clone.hash_overwrite!r} hides the commit from every hash"
        for clone in graph.clones
        if clone.hash_overwrite is not None
    ]
    clones = {clone.job: clone for clone in graph.clones}
    for escape in graph.escapes:
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
    :return: one line per clone of a locked repository (its URL up to spelling) that is not the set's pin: another
        commit, a branch instead of a commit, or a repository the set does not pin
    """
    pins = lockfile.get_set(graph.set_name).pins
    problems = []
    for clone in graph.clones:
        where = f"sets.{graph.set_name}: {clone.job}"
        for name, repo in lockfile.repos.items():
            if not same_repository(clone.url, repo.url):
                continue
            if name not in pins:
                problems.append(f"{where}: clones locked repository {name} ({clone.url}), which the set does not pin")
            elif clone.commit is None:
                problems.append(
                    f"{where}: clones {name} following a branch instead of the pinned {pins[name].commit[:7]}"
                )
            elif clone.commit != pins[name].commit:
                problems.append(f"{where}: clones {name} at {clone.commit[:7]}, the set pins {pins[name].commit[:7]}")
    return problems
