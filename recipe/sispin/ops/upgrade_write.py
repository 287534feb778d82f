"""
``pin upgrade``'s rewrite: the planned moves written into pin.toml (and the moved sets' graphs into the snapshot) once
for all sets, atomically, keeping its comments and formatting, and never over another process's decision.
"""

from __future__ import annotations

__all__ = ["Written", "apply_moves", "moved_text", "write_moves"]

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import tomlkit

from sispin.errors import ConcurrentChangeError
from sispin.git.moves import Move
from sispin.graph.probe.schema import SetGraph
from sispin.graph.snapshot import edit_lock_and_snapshot
from sispin.lock.editing import drop_pin_alias, edit_lockfile, set_pin_commit
from sispin.lock.files import snapshot_path
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path, shown_key


@dataclass(frozen=True)
class Written:
    """
    :param lock: the pin.toml written
    :param sets: the sets whose pins moved
    :param already: the moves another process made meanwhile (each with its set), left as they were
    :param snapshot: the pin.snapshot.toml the moved sets' graphs went into; None when no graph was built
    :param snapshot_sets: the sets whose graphs went into it
    :param moves: how many moves were planned
    """

    lock: Path
    sets: Tuple[str, ...]
    already: Tuple[Tuple[str, Move], ...]
    snapshot: Optional[Path]
    snapshot_sets: Tuple[str, ...]
    moves: int

    @property
    def changed(self) -> bool:
        """Whether pin.toml changed: not every move was made already."""
        return len(self.already) < self.moves


def moved_text(lockfile: Lockfile, text: str, moving: Dict[str, List[Move]]) -> str:
    """
    :param lockfile: the lockfile the moves were planned on
    :param text: its text
    :param moving: each set's moves
    :return: the text with every set's moves made
    """
    document = tomlkit.parse(text)
    for set_name, moves in moving.items():
        apply_moves(lockfile, document, set_name, moves)
    return tomlkit.dumps(document)


def write_moves(path: Path, moving: Dict[str, List[Move]], moved_graphs: Sequence[SetGraph]) -> Written:
    """
    Write the moves into pin.toml, and the sets' graphs after them into the snapshot where there are some.

    :param path: the pin.toml
    :param moving: each set's moves
    :param moved_graphs: the graphs of the sets after their moves (those that could be built)
    :raises ConcurrentChangeError: when another process moved or removed one of the pins meanwhile
    """
    already: List[Tuple[str, Move]] = []

    def apply(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        for set_name, moves in moving.items():
            already.extend((set_name, move) for move in apply_moves(current, document, set_name, moves))

    if not moved_graphs:
        edit_lockfile(path, apply)
    else:
        # the snapshot moves with the lock, so that `pin check` keeps comparing against the state in force
        edit_lock_and_snapshot(path, apply, moved_graphs)
    return Written(
        path,
        tuple(moving),
        tuple(already),
        snapshot_path(path) if moved_graphs else None,
        tuple(graph.set_name for graph in moved_graphs),
        sum(len(moves) for moves in moving.values()),
    )


def apply_moves(current: Lockfile, document: tomlkit.TOMLDocument, set_name: str, moves: List[Move]) -> List[Move]:
    """
    Write the moves into the document.

    :param current: the lockfile as it is now (another process may have changed it since the moves were planned)
    :param document: its text, parsed
    :param set_name: the set whose pins move
    :param moves: its moves
    :return: the moves another process already made (left as they are)
    :raises ConcurrentChangeError: when another process removed the set or a pin, or moved a pin elsewhere
    """
    where = display_path(current.path)
    if set_name not in current.sets:
        raise ConcurrentChangeError(
            f"{where}: sets.{shown_key(set_name)} was removed by another process while this upgrade ran; "
            "nothing written"
        )
    current.sets[set_name].check_not_frozen("pin upgrade")  # frozen by another process meanwhile
    already = []
    for move in moves:
        pins = current.sets[set_name].pins
        now = pins[move.repo].commit if move.repo in pins else None
        if now == move.new:
            already.append(move)
            continue
        if now != move.old:
            # never overwrite another process's decision silently
            became = f"changed to {now[:7]}" if now else "was removed"
            raise ConcurrentChangeError(
                f"{where}: sets.{shown_key(set_name)}.{shown_key(move.repo)} {became} by another process while this "
                "upgrade ran (it "
                f"planned {move.old[:7]} -> {move.new[:7]}); nothing written: rerun to see the move from there"
            )
        set_pin_commit(document, set_name, move.repo, move.new, move.tag)
        drop_pin_alias(document, set_name, move.repo)  # an alias stands for the old commit only
    return already
