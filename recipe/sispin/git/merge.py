"""git's side of the merge driver: its three-way line merge of one file (``git merge-file``), and installing the
driver in a repository."""

from __future__ import annotations

__all__ = ["LABELS", "merge_lines", "DRIVER", "DRIVER_COMMAND", "install_driver"]

import os
import tempfile
from pathlib import Path
from typing import List, Sequence, Tuple

from sispin.errors import GitError
from sispin.git.process import read_git, read_git_raw, write_git
from sispin.lock.files import write_atomically
from sispin.lock.loading import read_lockfile_text

#: how conflict markers name the three versions
LABELS = ("this branch", "common ancestor", "other branch")


def merge_lines(base: str, ours: str, theirs: str) -> Tuple[str, bool]:
    """
    :param base: the common ancestor's text
    :param ours: this branch's text
    :param theirs: the other branch's text
    :return: the merged text (with conflict markers where the branches conflict) and whether it has none
    :raises GitError: when git cannot be run
    """
    with tempfile.TemporaryDirectory(prefix="pin-merge-") as directory:
        names = []
        for label, text in zip(("ours", "base", "theirs"), (ours, base, theirs)):
            # bytes, not text mode: line endings are the user's
            Path(directory, label).write_bytes(text.encode("utf-8"))
            names.append(os.path.join(directory, label))
        labels = [option for label in LABELS for option in ("-L", label)]
        answer = read_git_raw(None, "merge-file", "-p", *labels, *names)
    # its exit code is the number of conflicts; negative or 127 and above is a failure
    if not 0 <= answer.code < 127:
        raise GitError(f"git merge-file failed: {answer.reason}")
    return answer.stdout.decode("utf-8"), answer.code == 0


#: the merge driver's name in git's configuration and .gitattributes
DRIVER = "pin"
#: what git runs to merge a file marked ``merge=pin`` (%P: the file's name in the repository, for messages)
DRIVER_COMMAND = "pin merge-driver %O %A %B %P"


def install_driver(root: Path, files: Sequence[Path]) -> Tuple[Path, List[str]]:
    """
    Make git merge the files with ``pin merge-driver``: the driver in the repository's configuration (each clone
    needs it once), and ``merge=pin`` for the files in the .gitattributes beside them (committed: every clone's git
    uses the driver once it is configured). Lines already there are left as they are.

    :param root: the setup directory, inside a git repository
    :param files: the files to mark (pin.toml, pin.snapshot.toml)
    :return: the .gitattributes file and the lines added to it
    :raises GitError: when the setup is in no git repository
    """
    try:
        read_git(root, "rev-parse", "--show-toplevel")
    except GitError:
        raise GitError(f"{root} is in no git repository: a merge driver is git's") from None
    write_git(root, "config", "--local", f"merge.{DRIVER}.name", "sispin: pin.toml and pin.snapshot.toml by value")
    write_git(root, "config", "--local", f"merge.{DRIVER}.driver", DRIVER_COMMAND)
    attributes = root / ".gitattributes"
    text = read_lockfile_text(attributes) if os.path.lexists(attributes) else ""
    present = {tuple(line.split()) for line in text.splitlines()}
    added = [f"/{file.name} merge={DRIVER}" for file in files if (f"/{file.name}", f"merge={DRIVER}") not in present]
    if added:
        newline = "\r\n" if "\r\n" in text else "\n"
        separator = "" if not text or text.endswith("\n") else newline
        # git's file, not sispin's: no lock file beside it (it would show up as untracked)
        write_atomically(attributes, text + separator + newline.join(added) + newline)
    return attributes, added
