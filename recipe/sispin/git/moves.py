"""
What moving a pin from one commit to another means: forward, a downgrade, or a jump to unrelated history, with
the commits in between. Shared by the commands that move pins.
"""

from __future__ import annotations

__all__ = [
    "LOG_LIMIT",
    "Move",
    "plan_move",
    "format_move",
    "format_log",
    "Allowed",
    "Target",
    "PlannedMove",
    "plan_repo_move",
    "refusal",
]

import dataclasses
import datetime
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from sispin.git.history import (
    branch_commit,
    commit_as_of,
    count_commits,
    log_oneline,
    newest_release,
    on_a_ref,
    resolve_revision,
    tag_commit,
)
from sispin.git.repo import has_commit
from sispin.lock.lockfile import RepoSpec
from sispin.text import count

#: commits listed per moved repository before the rest are only counted
LOG_LIMIT = 10


@dataclass(frozen=True)
class Move:
    """
    :param repo: repository name
    :param old: the pinned commit
    :param new: the commit it would move to
    :param kind: "none", "forward", "downgrade" or "unrelated" (neither commit is an ancestor of the other)
    :param added: commits reachable from new but not from old (None when old is not in the mirror)
    :param dropped: commits reachable from old but not from new (None when old is not in the mirror)
    :param log: one-line log of the added commits (of the dropped ones for a downgrade), at most LOG_LIMIT
    :param tag: the tag the move was asked to go to (``--to TAG``, ``--release``), kept beside the pin
    :param dropped_log: of a move to unrelated history, the one-line log of the dropped commits, at most LOG_LIMIT
    """

    repo: str
    old: str
    new: str
    kind: str
    added: Optional[int] = None
    dropped: Optional[int] = None
    log: tuple = ()
    tag: Optional[str] = None
    dropped_log: tuple = ()

    @property
    def summary(self) -> str:
        """The parenthesised description of the move, e.g. ``+12 commits`` or ``+3 commits, tag v1.2``."""
        return self._distance + (f", tag {self.tag}" if self.tag else "")

    @property
    def _distance(self) -> str:
        if self.kind == "forward":
            return f"+{count(self.added, 'commit')}"
        if self.kind == "downgrade":
            return f"downgrade: {count(self.dropped, 'commit')} back"
        if self.added is None:
            return "unrelated history: the pinned commit is no longer in the remote"
        return f"unrelated history: +{self.added}, -{self.dropped} commits"


def plan_move(mirror: Path, repo: str, old: str, new: str) -> Move:
    """
    :param mirror: the repository's store mirror (must hold new)
    :param repo: repository name
    :param old: the pinned commit
    :param new: the target commit
    """
    if old == new:
        return Move(repo, old, new, "none", 0, 0)
    if not has_commit(mirror, old):
        return Move(repo, old, new, "unrelated")
    added = count_commits(mirror, old, new)
    dropped = count_commits(mirror, new, old)
    if dropped == 0:
        return Move(repo, old, new, "forward", added, 0, tuple(log_oneline(mirror, old, new, LOG_LIMIT)))
    if added == 0:
        return Move(repo, old, new, "downgrade", 0, dropped, tuple(log_oneline(mirror, new, old, LOG_LIMIT)))
    return Move(
        repo,
        old,
        new,
        "unrelated",
        added,
        dropped,
        tuple(log_oneline(mirror, old, new, LOG_LIMIT)),
        dropped_log=tuple(log_oneline(mirror, new, old, LOG_LIMIT)),
    )


def format_move(move: Move, width: int) -> str:
    """
    :param move: a planned move
    :param width: column width of repository names
    :return: its headline: ``rc  1234567 -> 89abcde  (+4 commits)``
    """
    if move.kind == "none":
        return f"{move.repo:<{width}}  {move.old[:7]}  already up to date"
    return f"{move.repo:<{width}}  {move.old[:7]} -> {move.new[:7]}  ({move.summary})"


def format_log(move: Move) -> List[str]:
    """
    :return: the lines of the move's commits, capped, with a count of the rest: the dropped ones of a downgrade; of a
        move to unrelated history the dropped ones (what the set loses), then the added ones
    """
    if move.kind == "downgrade":
        return _listed("-", move.log, move.dropped, "")
    if move.kind == "unrelated":
        return _listed("-", move.dropped_log, move.dropped, " dropped") + _listed("+", move.log, move.added, " new")
    return _listed("+", move.log, move.added, "")


def _listed(sign: str, log: Sequence[str], total: Optional[int], which: str) -> List[str]:
    lines = [f"    {sign} {line}" for line in log]
    if total is not None and total > len(log):
        lines.append(f"    ... and {total - len(log)} more{which}")
    return lines


@dataclass(frozen=True)
class Allowed:
    """The flags that let a move through that is refused otherwise (each refusal names its flag)."""

    #: ``--allow-downgrade``: to an ancestor of the pinned commit
    downgrade: bool = False
    #: ``--allow-unrelated``: to a commit neither ancestor nor descendant of the pinned one
    unrelated: bool = False
    #: ``--allow-unreachable``: to a commit on no branch or tag of the remote
    unreachable: bool = False
    #: ``--accept-drift``: of a set whose graph differs from its snapshot already
    drift: bool = False


@dataclass(frozen=True)
class Target:
    """
    Where a repository moves: the head of its branch (none given), a revision (``--to``), its branch as it was at a
    moment (``--as-of``), or the newest release tag on its branch (``--release``).
    """

    revision: Optional[str] = None
    as_of: Optional[datetime.datetime] = None
    release: bool = False


@dataclass(frozen=True)
class PlannedMove:
    """A move, and whether its target is on a branch or tag of the remote (as just fetched)."""

    move: Move
    on_remote: bool


def plan_repo_move(mirror: Path, repo: RepoSpec, old: str, target: Target) -> PlannedMove:
    """
    :param mirror: the repository's store mirror, just fetched
    :param repo: the repository (its branch, its release tags)
    :param old: the pinned commit
    :param target: where it moves
    :raises RevisionError: when the target does not resolve
    """
    tag = None
    if target.revision is not None:
        new = resolve_revision(mirror, target.revision)
        # a tag named: kept beside the pin (a branch or SHA named says nothing the SHA does not)
        tag = target.revision if tag_commit(mirror, target.revision) == new else None
    elif target.as_of is not None:
        new = commit_as_of(mirror, repo.branch, target.as_of)
    elif target.release:
        tag, new = newest_release(mirror, repo.branch, repo.releases)
    else:
        new = branch_commit(mirror, repo.branch)
    # the mirror keeps objects the remote dropped (force-pushes): a SHA can resolve there and be gone from the remote
    on_remote = target.revision is None or on_a_ref(mirror, new)
    return PlannedMove(dataclasses.replace(plan_move(mirror, repo.name, old, new), tag=tag), on_remote)


def refusal(planned: Sequence[PlannedMove], allowed: Allowed) -> Tuple[Optional[str], List[str]]:
    """:return: why the moves are refused (None: they are not), and the flags that would let them through"""
    refused = [p.move for p in planned if p.move.kind == "downgrade" and not allowed.downgrade]
    refused += [p.move for p in planned if p.move.kind == "unrelated" and not allowed.unrelated]
    unreachable = [p.move for p in planned if not p.on_remote and not allowed.unreachable]
    if not refused and not unreachable:
        return None, []
    flags = sorted({"--allow-downgrade" if m.kind == "downgrade" else "--allow-unrelated" for m in refused})
    flags += ["--allow-unreachable"] if unreachable else []
    kinds = {"downgrade": "downgrade", "unrelated": "move to unrelated history"}
    what = [f"{m.repo} {m.old[:7]} -> {m.new[:7]} is a {kinds[m.kind]}" for m in refused]
    what += [
        f"{m.repo} {m.new[:7]} is on no branch or tag of the remote (only the store still has it): a clone job "
        "could not check it out"
        for m in unreachable
    ]
    return f"{'; '.join(what)}: pass {' '.join(flags)} to move anyway (nothing written)", flags
