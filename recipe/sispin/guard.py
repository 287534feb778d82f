"""
What makes a set's job graph untrustworthy, whatever the snapshot says: a clone of a locked repository that is not
the set's pin (another commit, a branch, or not pinned by the set), a clone of any other repository that pins no
commit (its content changes under one id), and a clone output whose commit is hidden from a hash by
``hash_overwrite`` (on the job's own output, or on a copy that some job hashes). A set may accept clones outside the
lock by URL (``allow_unpinned``, ``allow_hash_overwrite``), never silently. Shared by ``pin check`` and ``pin
snapshot`` (which refuses to record hidden commits).
"""

from __future__ import annotations

__all__ = ["overwrite_problems", "off_lock_problems"]

from typing import List, Optional

from sispin.graph import Clone, SetGraph
from sispin.lockfile import Lockfile, is_full_sha
from sispin.urls import same_repository


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
