"""
History in a mirror: revisions resolved to commits (tags, branches, short SHAs, never ambiguous), branch heads,
commit counts and logs between two commits, and the dates and distances of many pins at once.
"""

from __future__ import annotations

__all__ = [
    "PinFacts",
    "branch_commit",
    "resolve_revision",
    "on_a_ref",
    "parent_commit",
    "count_commits",
    "log_oneline",
    "pin_facts",
]

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import git

from sispin.errors import RevisionError
from sispin.git.env import missing_commits
from sispin.git.process import runner
from sispin.lock.lockfile import is_sha_prefix

# what `pin upgrade --to` accepts: ref-name characters only, so that no revision syntax (a..b, @{...}, :path)
# and no option can get through (matched with fullmatch: "$" would also match before a trailing newline)
_REVISION_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")


@dataclass(frozen=True)
class PinFacts:
    """
    :param date: committer date of the pinned commit, ISO 8601
    :param behind: commits on the branch head that the pin lacks (None: unknown)
    :param off_branch: commits of the pin that are not on the branch head (None: unknown)
    """

    date: str
    behind: Optional[int]
    off_branch: Optional[int]


def _rev_parse(path: Path, ref: str) -> Optional[str]:
    try:
        return runner(path).rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except git.GitCommandError:
        return None


def branch_commit(path: Path, branch: Optional[str]) -> str:
    """
    :param path: a mirror
    :param branch: branch name; None for the remote's default branch
    :return: the commit the branch points to
    :raises RevisionError: when the branch does not exist
    """
    ref = f"refs/heads/{branch}" if branch else "HEAD"
    sha = _rev_parse(path, ref)
    if sha is None:
        raise RevisionError(f"branch {branch!r} does not exist" if branch else "the remote has no default branch")
    return sha


def resolve_revision(path: Path, revision: str) -> str:
    """
    Resolve a tag, branch or (possibly short) commit SHA to a full SHA, refusing ambiguity.

    :param path: a mirror
    :param revision: tag, branch or hex SHA prefix (at least 4 digits)
    :raises RevisionError: when the revision is malformed, unknown, or names different commits
    """
    if not _REVISION_RE.fullmatch(revision) or ".." in revision:
        raise RevisionError(f"{revision!r} is not a tag, branch or commit SHA")
    found: List[Tuple[str, str]] = []
    for kind, ref in (("tag", f"refs/tags/{revision}"), ("branch", f"refs/heads/{revision}")):
        sha = _rev_parse(path, ref)
        if sha:
            found.append((kind, sha))
    if is_sha_prefix(revision):
        found.extend(("commit", sha) for sha in _commits_with_prefix(path, revision))
    commits = sorted({sha for _, sha in found})
    if not commits:
        raise RevisionError(f"no tag, branch or commit {revision!r}")
    if len(commits) > 1:
        named = ", ".join(f"{kind} {sha[:12]}" for kind, sha in found)
        raise RevisionError(f"{revision!r} is ambiguous: {named}; give more of the SHA")
    return commits[0]


def on_a_ref(path: Path, commit: str) -> bool:
    """:return: whether some branch or tag of the repository contains commit (it may hold unreachable ones too)"""
    try:
        return bool(runner(path).for_each_ref("--count=1", f"--contains={commit}", "refs/heads", "refs/tags"))
    except git.GitCommandError:
        return False


def _commits_with_prefix(path: Path, prefix: str) -> List[str]:
    if len(prefix) == 40:
        candidates = [prefix]
    else:
        try:
            candidates = runner(path).rev_parse(f"--disambiguate={prefix}").split()
        except git.GitCommandError:
            return []
    missing = set(missing_commits(path, candidates))  # blobs and trees share the prefix space
    return [sha for sha in candidates if sha not in missing]


def parent_commit(path: Path, commit: str) -> Optional[str]:
    """:return: the first parent of commit in the repository, or None (a root commit, or one it does not hold)"""
    return _rev_parse(path, f"{commit}^")


def count_commits(path: Path, exclude: str, include: str) -> int:
    """:return: how many commits are reachable from include but not from exclude"""
    return int(runner(path).rev_list("--count", f"{exclude}..{include}"))


def log_oneline(path: Path, exclude: str, include: str, limit: int) -> List[str]:
    """:return: up to limit lines "<short sha> <subject>" of exclude..include, newest first"""
    out = runner(path).log(f"--max-count={limit}", "--format=%h %s", f"{exclude}..{include}")
    return out.splitlines()


def pin_facts(path: Path, head: Optional[str], commits: Sequence[str]) -> Dict[str, PinFacts]:
    """
    Date and distance to the branch head of many commits at once: a few git processes per repository, however
    many sets pin it (``pin status`` over many sets stays fast).

    :param path: a mirror
    :param head: the branch head to measure against (None: distances unknown)
    :param commits: pinned commits
    :return: facts for each commit the repository holds (missing ones are left out)
    """
    missing = set(missing_commits(path, commits))
    present = [commit for commit in dict.fromkeys(commits) if commit not in missing]
    if not present:
        return {}
    lines = runner(path).show("-s", "--format=%H %cI", *present).splitlines()
    dates = dict(line.split(" ", 1) for line in lines if line)
    if head is None:
        return {commit: PinFacts(dates[commit], None, None) for commit in present}
    history = runner(path).rev_list("--topo-order", "--reverse", "--parents", head, *present).splitlines()
    if len(history) > _MAX_BITSET_HISTORY:
        return {c: PinFacts(dates[c], count_commits(path, c, head), count_commits(path, head, c)) for c in present}
    reachable = _ancestor_sets(history)
    return {
        commit: PinFacts(
            dates[commit],
            _bit_count(reachable[head] & ~reachable[commit]),
            _bit_count(reachable[commit] & ~reachable[head]),
        )
        for commit in present
    }


#: above this many commits, per-commit ``rev-list --count`` replaces the in-memory ancestor sets (N^2/16 bytes)
_MAX_BITSET_HISTORY = 50_000


def _ancestor_sets(history: List[str]) -> Dict[str, int]:
    """
    :param history: ``rev-list --reverse --topo-order --parents`` lines: every commit after its parents
    :return: commit -> its ancestors (itself included) as a bit set over the listed commits
    """
    reachable: Dict[str, int] = {}
    for position, line in enumerate(history):
        commit, *parents = line.split()
        mask = 1 << position
        for parent in parents:
            mask |= reachable[parent]
        reachable[commit] = mask
    return reachable


def _bit_count(value: int) -> int:
    return bin(value).count("1")
