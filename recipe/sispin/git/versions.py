"""
The Sisyphus and i6_core versions sispin supports, told from a checkout's history: a commit is supported when the
oldest supported commit is one of its ancestors (a fork's commits count as the commit they branched from).

The oldest ones are the oldest the version matrix tests (``tests/e2e/test_versions.py``; ``make test-matrix`` runs
every sampled commit). Within the range sispin adapts to each version by what it finds (see
:mod:`sispin.graph.probe.adapter`), not by this list.
"""

from __future__ import annotations

__all__ = ["OLDEST", "PYTHON_311_SINCE", "SUPPORTED_RANGE", "unsupported", "unsupported_setup"]

import sys
from pathlib import Path
from typing import Dict, NamedTuple, Optional

from sispin.git.process import read_git_raw
from sispin.lock.lockfile import Lockfile
from sispin.lock.urls import name_from_url


class Version(NamedTuple):
    """:param commit: a commit of the project's master branch; :param date: its date"""

    commit: str
    date: str


#: project -> its oldest commit sispin supports, the oldest the matrix tests (Sisyphus before 21cdc40, 2021-05-31, does
#: not put recipe/ on sys.path by itself)
OLDEST: Dict[str, Version] = {
    "sisyphus": Version("d68b7ce1301a3136027b7bea81ebbf7274b128e4", "2021-07-05"),
    "i6_core": Version("358b489b6498a41479cf064078e5a1d4a9a0fe84", "2021-07-01"),
}
#: Sisyphus from this commit on loads configs on Python 3.11 and newer; older Sisyphus only up to 3.10 (on 3.11 its
#: config load recurses without end)
PYTHON_311_SINCE = Version("962043308aed862464be044213745a73367ee8d7", "2022-06-20")
_NAMES = {"sisyphus": "Sisyphus", "i6_core": "i6_core"}
#: what ``pin --help`` and docs/setup.md say
SUPPORTED_RANGE = (
    f"Sisyphus from {OLDEST['sisyphus'].commit[:7]} ({OLDEST['sisyphus'].date}; on Python 3.11 and newer from "
    f"{PYTHON_311_SINCE.commit[:7]}, {PYTHON_311_SINCE.date}), i6_core from {OLDEST['i6_core'].commit[:7]} "
    f"({OLDEST['i6_core'].date})"
)


def unsupported_setup(lockfile: Lockfile) -> Optional[str]:
    """:return: why sispin does not support a Sisyphus or i6_core the lockfile's ``[setup.*]`` checks out, if so"""
    for entry in lockfile.setup.values():
        project = name_from_url(entry.url).lower()
        if project in OLDEST and (lockfile.root / entry.path / ".git").exists():
            reason = unsupported(project, lockfile.root / entry.path, entry.path)
            if reason:
                return f"setup.{entry.name}: {reason}"
    return None


def unsupported(project: str, checkout: Path, where: str) -> Optional[str]:
    """
    :param project: ``sisyphus`` or ``i6_core``
    :param checkout: a git checkout of it
    :param where: the checkout as the user names it
    :return: why sispin does not support the checked-out commit (with what to do), or None when it does or when its
        history cannot tell (a checkout without the oldest supported commit's history, a shallow clone)
    """
    oldest = OLDEST[project]
    if not _descends_from(checkout, oldest.commit):
        if not _known(checkout, oldest.commit):
            return None
        return (
            f"{_NAMES[project]} at {where} is older than sispin supports ({SUPPORTED_RANGE}): pin a newer commit in "
            "pin.toml's [setup.*] and run `pin sync`"
        )
    if project == "sisyphus" and sys.version_info >= (3, 11) and _known(checkout, PYTHON_311_SINCE.commit):
        if not _descends_from(checkout, PYTHON_311_SINCE.commit):
            version = ".".join(map(str, sys.version_info[:2]))
            return (
                f"Sisyphus at {where} loads configs on Python 3.9 and 3.10 only, not on this Python {version} "
                f"(from {PYTHON_311_SINCE.commit[:7]}, {PYTHON_311_SINCE.date}, it does): run pin with Python 3.9 or "
                "3.10, or pin a newer Sisyphus"
            )
    return None


def _descends_from(checkout: Path, commit: str) -> bool:
    return read_git_raw(checkout, "merge-base", "--is-ancestor", commit, "HEAD").code == 0


def _known(checkout: Path, commit: str) -> bool:
    return read_git_raw(checkout, "cat-file", "-e", f"{commit}^{{commit}}").code == 0
