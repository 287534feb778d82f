"""
Which commits a repository holds (:func:`missing_commits`: one git process), and for a mirror of the store, known
without a git process while nothing in its object store changed since git last said (:func:`missing_in_mirror`):
every Sisyphus manager asks (settings.py decides the store redirects), for every pinned URL.

A commit is a loose object in ``objects/<first two hex digits>/`` or lies in a pack in ``objects/pack/``; whatever
adds or removes it (a fetch, a repack, a prune) changes the time of one of those directories. git's answer is kept in
the mirror (``sispin-commits.json``) with those times, and taken again while they are the same.
"""

from __future__ import annotations

__all__ = ["missing_commits", "missing_in_mirror"]

import hashlib
import json
import os
import time
from pathlib import Path
from typing import List, Optional, Sequence

from sispin.errors import GitError
from sispin.git.process import read_git

#: the answer kept in a mirror
_ANSWER = "sispin-commits.json"


def _time(path: Path) -> Optional[int]:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return None


def missing_commits(repository: Path, commits: Sequence[str]) -> List[str]:
    """
    :param repository: a repository (bare or not)
    :param commits: full commit SHAs
    :return: those the repository does not hold, or all of them when git cannot read it (one git process)
    """
    if not commits:
        return []
    try:
        answer = read_git(
            repository, "cat-file", "--batch-check=%(objecttype)", stdin="".join(f"{c}\n" for c in commits)
        ).splitlines()
    except GitError:
        return list(commits)
    return [sha for sha, kind in zip(commits, answer) if kind.strip() != "commit"]


def missing_in_mirror(mirror: Path, commits: Sequence[str]) -> List[str]:
    """
    :param mirror: a bare mirror of the store
    :param commits: full commit SHAs
    :return: those the mirror does not hold (git's answer, kept while the object store is unchanged)
    """
    wanted = sorted(set(commits))
    objects = Path(mirror) / "objects"
    times = [_time(objects / "pack"), *(_time(objects / commit[:2]) for commit in wanted)]
    key = hashlib.sha256(json.dumps([wanted, times]).encode()).hexdigest()
    answer = Path(mirror) / _ANSWER
    try:
        kept = json.loads(answer.read_bytes())
        if kept["key"] == key:
            return list(kept["missing"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    missing = missing_commits(Path(mirror), wanted)
    from sispin.lock.files import RACY_NS, replace_file  # only after git answered: not imported by every manager

    # directory times this close to now may still change: such an answer is not kept
    if all(t is None or t < time.time_ns() - RACY_NS for t in times):
        try:
            replace_file(answer, json.dumps({"key": key, "missing": missing}).encode(), 0o644)
        except OSError:
            pass  # a read-only store: git answers every time
    return missing
