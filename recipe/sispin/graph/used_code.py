"""
What of a pinned repository an experiment set uses, measured on a build of its graph: the changes an upgrade brings
that touch those files are the ones to read.

Three things count, each measured, none guessed from names:

- the files of the pinned checkout the manager read while the configs loaded (modules ``exp.imported()`` brought in,
  files opened): the build's input record (:mod:`sispin.graph.probe.inputs`), below the store's checkout of the pinned
  commit or a clone job's output in work/;
- the ``files_to_checkout`` of the set's clone jobs of the repository;
- where a job of the graph takes a clone of the repository as an input, the code it runs from there: the Python
  packages at the top of the checkout (the directories holding an ``__init__.py``; all of it when its top is a
  package itself, as returnn_common's is, or holds none).
"""

from __future__ import annotations

__all__ = ["UsedCode", "used_code"]

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Tuple

from sispin.clonejob import checkout_folder
from sispin.git.history import tracked_files
from sispin.git.store import Store
from sispin.graph.probe.schema import SetGraph
from sispin.lock.lockfile import Lockfile
from sispin.text import count


@dataclass(frozen=True)
class UsedCode:
    """
    :param read: files of the checkout the manager read
    :param listed: the clone jobs' ``files_to_checkout``
    :param packages: the packages jobs run from a clone of it (empty: no job takes one)
    """

    read: Tuple[str, ...]
    listed: Tuple[str, ...]
    packages: Tuple[str, ...]

    @property
    def paths(self) -> List[str]:
        """Everything used, as ``git log`` pathspecs relative to the repository's top ("." is all of it)."""
        return sorted({*self.read, *self.listed, *self.packages})

    @property
    def described(self) -> str:
        """What was measured, e.g. ``12 files the manager read; the package returnn: a job takes the checkout``."""
        parts = [f"{count(len(self.read), 'file')} the manager read"] if self.read else []
        parts += [f"{len(self.listed)} files_to_checkout"] if self.listed else []
        if self.packages == (".",):
            parts.append("all of it: a job takes the checkout")
        elif self.packages:
            which = "the package" if len(self.packages) == 1 else "the packages"
            parts.append(f"{which} {', '.join(self.packages)}: a job takes the checkout")
        return "; ".join(parts) or "nothing"


def used_code(
    lockfile: Lockfile, graph: SetGraph, ledger: Mapping[str, Any], store: Store, mirrors: Mapping[str, Path]
) -> Dict[str, UsedCode]:
    """
    :param lockfile: the lock the graph was built from
    :param graph: a build of the set's graph at its pins, that recorded what it read
    :param ledger: what that build read (its ``files``)
    :param store: the store whose checkouts ``exp.imported()`` used
    :param mirrors: the repositories to measure (pinned by the set), each with its mirror
    :return: per repository, what of it the set uses
    """
    spec = lockfile.get_set(graph.set_name)
    work = lockfile.root / "work"
    taken = {job for inputs in graph.inputs.values() for job in inputs}
    used = {}
    for repo, mirror in mirrors.items():
        pin, entry = spec.pins[repo], lockfile.get_repo(repo)
        clones = [clone for clone in graph.clones if graph.pinned.get(clone.job) == repo]
        roots = [store.checkout_path(entry.url, pin.commit, checkout_folder(entry.checkout))]
        roots += [work / clone.job / "output" / clone.checkout_folder_name for clone in clones]
        read = _below(ledger.get("files", {}), roots)
        listed = sorted({file for clone in clones for file in clone.files_to_checkout or ()})
        run = any(clone.job in taken for clone in clones)
        packages = _packages(mirror, pin.commit) if run else []
        used[repo] = UsedCode(tuple(read), tuple(listed), tuple(packages))
    return used


def _below(files: Mapping[str, Any], roots: List[Path]) -> List[str]:
    """
    The files below any of the roots, relative to it (symlinks resolved: the record holds real paths); not bytecode,
    which the record holds beside its source.
    """
    found = set()
    for root in roots:
        for place in {os.path.join(str(root), ""), os.path.join(os.path.realpath(root), "")}:
            found.update(path[len(place) :] for path in files if path.startswith(place) and not path.endswith(".pyc"))
    return sorted(found)


def _packages(mirror: Path, commit: str) -> List[str]:
    files = set(tracked_files(mirror, commit))
    if "__init__.py" in files:
        return ["."]
    tops = sorted({name.split("/", 1)[0] for name in files if "/" in name})
    return [top for top in tops if f"{top}/__init__.py" in files] or ["."]
