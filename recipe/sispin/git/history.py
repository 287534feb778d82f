"""
History in a mirror: revisions resolved to commits (tags, branches, short SHAs, never ambiguous), branch heads,
commit counts and logs between two commits, and the dates and distances of many pins at once.
"""

from __future__ import annotations

__all__ = [
    "PinFacts",
    "branch_commit",
    "commit_as_of",
    "resolve_revision",
    "tag_commit",
    "newest_release",
    "releases_behind",
    "on_a_ref",
    "parent_commit",
    "count_commits",
    "log_oneline",
    "Change",
    "changes_to",
    "tracked_files",
    "pin_facts",
]

import datetime
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from sispin.errors import GitError, RevisionError
from sispin.git.presence import missing_commits
from sispin.git.process import read_git
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
        return read_git(path, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except GitError:
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


#: 2100-01-01T00:00:00Z, where the dates git reads end
_GIT_DATES_END = 4_102_444_800


def commit_as_of(path: Path, branch: Optional[str], moment: datetime.datetime) -> str:
    """
    :param path: a mirror
    :param branch: branch name; None for the remote's default branch
    :param moment: a time with its time zone
    :return: the branch as it was then: the newest commit of its first-parent line committed at or before moment
        (what was merged into it counts from the merge)
    :raises RevisionError: when the branch does not exist or has no commit that old
    """
    head = branch_commit(path, branch)
    # git reads no date from 2100 on (and no timestamp that large): a later moment takes every commit
    before = [f"--before=@{int(moment.timestamp())}"] if moment.timestamp() < _GIT_DATES_END else []
    # before 1970 there are no commits (and git reads no negative timestamp)
    found = read_git(path, "rev-list", "-1", "--first-parent", *before, head) if moment.timestamp() >= 0 else ""
    if not found:
        where = f"branch {branch!r}" if branch else "the default branch"
        raise RevisionError(f"{where} has no commit at or before {moment.isoformat()}")
    return found


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


def tag_commit(path: Path, name: str) -> Optional[str]:
    """:return: the commit the tag name points to, or None when there is no such tag"""
    return _rev_parse(path, f"refs/tags/{name}")


def _release_refs(pattern: Optional[str]) -> str:
    """The refs a release pattern (a glob over tag names; None: every tag) selects, as for-each-ref reads them."""
    return f"refs/tags/{pattern}" if pattern else "refs/tags"


def newest_release(path: Path, branch: Optional[str], pattern: Optional[str]) -> Tuple[str, str]:
    """
    :param path: a mirror
    :param branch: the branch the release must be on (None: the default branch)
    :param pattern: a glob the release tags' names match (``v*``); None for every tag
    :return: the newest release tag on the branch by version order (``v1.10`` after ``v1.9``), and its commit
    :raises RevisionError: when the branch holds no such tag
    """
    head = branch_commit(path, branch)
    # "-" starts a pre-release: v2.0-rc1 comes before v2.0, not after it
    names = read_git(
        path, "-c", "versionsort.suffix=-", "for-each-ref", "--count=1", f"--merged={head}", "--sort=-v:refname",
        "--format=%(refname:strip=2)", _release_refs(pattern),
    )  # fmt: skip
    if not names:
        where = f"branch {branch!r}" if branch else "the default branch"
        raise RevisionError(f"{where} has no release tag" + (f" matching {pattern!r}" if pattern else ""))
    return names, _rev_parse(path, f"refs/tags/{names}") or ""


def releases_behind(
    path: Path, branch: Optional[str], pattern: Optional[str], commits: Sequence[str]
) -> Dict[str, int]:
    """
    :param path: a mirror
    :param branch: the branch (None: the default branch)
    :param pattern: a glob over tag names (see :func:`newest_release`)
    :param commits: pinned commits the mirror holds
    :return: per commit, how many release tags the branch's head has that the commit has not; empty when the
        repository has no release tags, or the branch is not in the mirror
    """
    head = _rev_parse(path, f"refs/heads/{branch}" if branch else "HEAD")
    if head is None or not read_git(path, "for-each-ref", "--count=1", "--format=x", _release_refs(pattern)):
        return {}
    behind = {}
    for commit in dict.fromkeys(commits):
        found = read_git(
            path, "for-each-ref", f"--merged={head}", f"--no-merged={commit}", "--format=x", _release_refs(pattern)
        )
        behind[commit] = len(found.splitlines())
    return behind


def on_a_ref(path: Path, commit: str) -> bool:
    """:return: whether some branch or tag of the repository contains commit (it may hold unreachable ones too)"""
    try:
        return bool(read_git(path, "for-each-ref", "--count=1", f"--contains={commit}", "refs/heads", "refs/tags"))
    except GitError:
        return False


def _commits_with_prefix(path: Path, prefix: str) -> List[str]:
    if len(prefix) == 40:
        candidates = [prefix]
    else:
        try:
            candidates = read_git(path, "rev-parse", f"--disambiguate={prefix}").split()
        except GitError:
            return []
    missing = set(missing_commits(path, candidates))  # blobs and trees share the prefix space
    return [sha for sha in candidates if sha not in missing]


def parent_commit(path: Path, commit: str) -> Optional[str]:
    """:return: the first parent of commit in the repository, or None (a root commit, or one it does not hold)"""
    return _rev_parse(path, f"{commit}^")


def count_commits(path: Path, exclude: str, include: str) -> int:
    """:return: how many commits are reachable from include but not from exclude"""
    return int(read_git(path, "rev-list", "--count", f"{exclude}..{include}"))


def log_oneline(path: Path, exclude: str, include: str, limit: int) -> List[str]:
    """:return: up to limit lines "<short sha> <subject>" of exclude..include, newest first"""
    # one NUL after each: a subject may hold a carriage return or another character str.splitlines() splits at
    out = read_git(path, "log", f"--max-count={limit}", "--format=%h %s%x00", f"{exclude}..{include}")
    return [line.lstrip("\n") for line in out.split("\0") if line.strip("\n")]


@dataclass(frozen=True)
class Change:
    """
    :param commit: its short SHA
    :param date: its author date, YYYY-MM-DD
    :param subject: its message's first line
    :param files: the files it changes among those asked about
    """

    commit: str
    date: str
    subject: str
    files: Tuple[str, ...]


def changes_to(path: Path, exclude: str, include: str, files: Sequence[str], limit: int) -> Tuple[int, List[Change]]:
    """
    The commits of exclude..include that change any of the files (``git log -- FILES``: by path, renames not
    followed), newest first.

    :param path: the repository
    :param files: paths relative to its top; a directory stands for everything below it, "." for everything
    :param limit: how many to describe
    :return: how many there are, and up to limit of them
    """
    if not files:
        return 0, []
    # literal: a file named "*.py" or ":x" is that file, not a pattern or pathspec magic
    count = int(read_git(path, "--literal-pathspecs", "rev-list", "--count", f"{exclude}..{include}", "--", *files))
    if not limit:
        return count, []
    out = read_git(
        path,
        "-c",
        "core.quotePath=false",  # file names as they are, not octal escapes
        "--literal-pathspecs",
        "log",
        f"--max-count={limit}",
        "--format=%x00%h%x1f%ad%x1f%s",
        "--date=short",
        "--name-only",
        f"{exclude}..{include}",
        "--",
        *files,
    )
    changes = []
    for entry in out.split("\0")[1:]:
        head, _, names = entry.partition("\n")
        commit, date, subject = head.split("\x1f", 2)
        # names end at newlines only (git quotes a name that holds one): a carriage return is part of a name
        changes.append(Change(commit, date, subject, tuple(name for name in names.split("\n") if name)))
    return count, changes


def tracked_files(path: Path, commit: str) -> List[str]:
    """:return: every file of the commit's tree, relative to its top"""
    return read_git(path, "ls-tree", "-r", "--name-only", "--full-tree", commit).splitlines()


def pin_facts(path: Path, branch: Optional[str], commits: Sequence[str]) -> Dict[str, PinFacts]:
    """
    Date and distance to the branch head of many commits at once: three git processes per repository, however many
    sets pin it (``pin status`` over many sets stays fast).

    :param path: a mirror
    :param branch: the branch whose head to measure against (None: the default branch; distances are unknown when
        the mirror has no such branch)
    :param commits: pinned commits
    :return: facts for each commit the repository holds (missing ones are left out)
    """
    wanted = list(dict.fromkeys(commits))
    head_name = f"refs/heads/{branch}^{{commit}}" if branch else "HEAD^{commit}"
    # one process says which of them exist, and where the branch points
    found = read_git(
        path,
        "cat-file",
        "--batch-check=%(objectname) %(objecttype)",
        stdin="".join(f"{n}\n" for n in [head_name, *wanted]),
    ).splitlines()
    head = found[0].split()[0] if found and found[0].endswith(" commit") else None
    present = [commit for commit, line in zip(wanted, found[1:]) if line == f"{commit} commit"]
    if not present:
        return {}
    lines = read_git(path, "show", "-s", "--format=%H %cI", *present).splitlines()
    dates = dict(line.split(" ", 1) for line in lines if line)
    if head is None:
        return {commit: PinFacts(dates[commit], None, None) for commit in present}
    # every commit of the branch and the pins that not all of them reach (those count for none), children first
    try:
        common = ["--not", read_git(path, "merge-base", "--octopus", head, *present)]
    except GitError:
        common = []  # no commit they all reach
    history = read_git(path, "rev-list", "--topo-order", "--parents", head, *present, *common).splitlines()
    reaching = _tips_reaching(history, [head, *present])
    facts = {}
    for bit, commit in enumerate(present, start=1):
        behind = sum(n for mask, n in reaching.items() if mask & 1 and not mask >> bit & 1)
        off_branch = sum(n for mask, n in reaching.items() if mask >> bit & 1 and not mask & 1)
        facts[commit] = PinFacts(dates[commit], behind, off_branch)
    return facts


def _tips_reaching(history: List[str], tips: Sequence[str]) -> Dict[int, int]:
    """
    :param history: ``rev-list --topo-order --parents`` lines of the tips: every commit before its parents
    :param tips: commits (bit i of a mask stands for tips[i])
    :return: which tips reach a commit (a mask) -> how many commits those tips reach, each of them only: a few
        masks, however long the history (the commits between two pins share one)
    """
    masks: Dict[str, int] = {}
    for bit, tip in enumerate(tips):
        masks[tip] = masks.get(tip, 0) | 1 << bit
    counts: Dict[int, int] = {}
    for line in history:
        commit, *parents = line.split()
        mask = masks.pop(commit, 0)
        counts[mask] = counts.get(mask, 0) + 1
        for parent in parents:
            masks[parent] = masks.get(parent, 0) | mask
    return counts
