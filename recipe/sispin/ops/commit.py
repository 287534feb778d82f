"""
``--commit`` of the commands that write pin.toml and pin.snapshot.toml: exactly those files (and what else the
command wrote) committed in the setup's repository, whatever else is staged staying staged.
"""

from __future__ import annotations

__all__ = ["check_committable_lock", "commit_lock"]

from pathlib import Path
from typing import List, Optional, Sequence

from sispin.git.setup_history import check_committable, commit_files
from sispin.lock.files import snapshot_path


def _lock_files(lock: Path) -> List[Path]:
    """:return: the files ``--commit`` commits: pin.toml and pin.snapshot.toml"""
    return [lock, snapshot_path(lock)]


def check_committable_lock(lock: Path) -> None:
    """
    :param lock: the pin.toml a command is about to write
    :raises GitError: when there is no repository, or pin.toml or the snapshot hold changes not committed
    """
    check_committable(lock.parent, _lock_files(lock))


def commit_lock(lock: Path, summary: str, body: Sequence[str], also: Sequence[Path] = ()) -> Optional[str]:
    """
    Commit the setup's pin.toml and pin.snapshot.toml (those that exist).

    :param lock: the pin.toml
    :param summary: the message's first line
    :param body: the lines after it
    :param also: other files the command wrote (a starter config), committed with them
    :return: the new commit's SHA; None when there was nothing to commit
    :raises GitError: when there is no repository, or git refuses
    """
    files = [path for path in (*_lock_files(lock), *also) if path.exists()]
    return commit_files(lock.parent, files, summary, body)
