"""
What moving a pin from one commit to another means: forward, a downgrade, or a jump to unrelated history, with
the commits in between. Shared by the commands that move pins.
"""

from __future__ import annotations

__all__ = ["LOG_LIMIT", "Move", "plan_move", "format_move"]

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional

from sispin.git.history import count_commits, log_oneline
from sispin.git.repo import has_commit

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
    """

    repo: str
    old: str
    new: str
    kind: str
    added: Optional[int] = None
    dropped: Optional[int] = None
    log: tuple = ()

    @property
    def summary(self) -> str:
        """The parenthesised description of the move, e.g. ``+12 commits``."""
        if self.kind == "forward":
            return f"+{self.added} commit{'s' if self.added != 1 else ''}"
        if self.kind == "downgrade":
            return f"downgrade: {self.dropped} commit{'s' if self.dropped != 1 else ''} back"
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
    return Move(repo, old, new, "unrelated", added, dropped, tuple(log_oneline(mirror, old, new, LOG_LIMIT)))


def format_move(move: Move, width: int) -> List[str]:
    """
    :param move: a planned move
    :param width: column width of repository names
    :return: the lines that show it: a headline, then the log, capped, with a count of the rest
    """
    if move.kind == "none":
        return [f"{move.repo:<{width}}  {move.old[:7]}  already up to date"]
    lines = [f"{move.repo:<{width}}  {move.old[:7]} -> {move.new[:7]}  ({move.summary})"]
    sign = "-" if move.kind == "downgrade" else "+"
    lines += [f"    {sign} {line}" for line in move.log]
    listed_of = move.dropped if move.kind == "downgrade" else move.added
    if listed_of is not None and listed_of > len(move.log):
        lines.append(f"    ... and {listed_of - len(move.log)} more")
    return lines
