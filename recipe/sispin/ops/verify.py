"""
``pin verify``: are the checkouts on disk still exactly what pin.toml pins?

Every ``[setup.*]`` checkout, the store's checkouts of the sets' pins, and the finished clone jobs of the sets in
work/: HEAD must be the pinned commit and the tree clean (modified, deleted, added or untracked files are
tampering).
"""

from __future__ import annotations

__all__ = ["CheckedCheckout", "VerifyResult", "verify"]

import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from sispin.clonejob import checkout_folder
from sispin.errors import PinError, SisyphusError
from sispin.git.repo import is_checkout
from sispin.git.store import Store
from sispin.git.verify import verify_checkout
from sispin.graph.build import load_graph, run_probe
from sispin.lock.loading import load_lockfile
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path, shown_key


@dataclass(frozen=True)
class CheckedCheckout:
    """
    :param label: what pins it (``setup.i6_core``, ``sets.demo.returnn_common (store)``, a clone job's id)
    :param path: the checkout
    :param commit: the pinned commit
    :param problem: how it differs from the commit; None when it is exactly the commit
    """

    label: str
    path: Path
    commit: str
    problem: Optional[str]


@dataclass(frozen=True)
class VerifyResult:
    """
    :param checkouts: every checkout looked at, in order
    :param unverified: why the finished clone jobs in work/ could not be identified (no Sisyphus); None when they were
    """

    checkouts: List[CheckedCheckout]
    unverified: Optional[SisyphusError]

    @property
    def problems(self) -> List[CheckedCheckout]:
        """The checkouts that differ from their commits."""
        return [checkout for checkout in self.checkouts if checkout.problem is not None]


def verify(path: Path, set_names: Sequence[str], store: Store) -> VerifyResult:
    """
    :param path: the pin.toml
    :param set_names: sets whose checkouts to verify; empty for all
    :param store: the store whose checkouts to verify
    """
    lockfile = load_lockfile(path)
    names = [spec.name for spec in lockfile.select_sets(set_names)]
    targets: List[Tuple[str, Path, str, Mapping[str, Any]]] = [
        (f"setup.{e.name}", lockfile.root / e.path, e.commit, {}) for e in lockfile.setup.values()
    ]
    for name in names:
        for repo, pin in lockfile.get_set(name).pins.items():
            spec = lockfile.get_repo(repo)
            checkout = store.checkout_path(spec.url, pin.commit, checkout_folder(spec.checkout))
            if checkout.exists():
                targets.append((f"sets.{shown_key(name)}.{shown_key(repo)} (store)", checkout, pin.commit, {}))
    # the clone jobs in work/ need Sisyphus for their ids: when they cannot be found, nothing is claimed about them
    unverified = None
    try:
        targets += _finished_clone_jobs(lockfile, names)
    except SisyphusError as exc:
        unverified = SisyphusError(f"clone jobs in work/ not verified: {exc}")
    checked = []
    for label, checkout, commit, kwargs in targets:
        try:
            verify_checkout(
                checkout,
                commit,
                display_path(checkout),
                files=kwargs.get("files_to_checkout"),
                patches=kwargs.get("patches"),
            )
        except PinError as exc:
            checked.append(
                CheckedCheckout(label, checkout, commit, f"{exc}{_how_to_restore(checkout, commit, kwargs)}")
            )
        else:
            checked.append(CheckedCheckout(label, checkout, commit, None))
    return VerifyResult(checked, unverified)


def _finished_clone_jobs(lockfile: Lockfile, names: Sequence[str]) -> List[Tuple[str, Path, str, Mapping[str, Any]]]:
    """
    The outputs of the sets' clone jobs that Sisyphus finished in work/ (a cleaned-up job too), each with what the
    job made of its commit (a sparse checkout, patches): every clone of a pin the set's graph holds, however it was
    built (job ids by real Sisyphus), and ``exp.clone_job()``'s for the sets without configs.
    """
    pinning = [name for name in names if lockfile.get_set(name).pins]
    if not pinning or not (lockfile.root / "work").is_dir():
        return []  # no finished job can exist
    clones: Dict[str, Tuple[str, str, str, Mapping[str, Any]]] = {}
    by_set = run_probe(lockfile, ["set-clones", *pinning], "computing the sets' clone jobs")
    for name, jobs in by_set.items():
        for repo, job_id in jobs.items():
            pin = lockfile.get_set(name).pin(repo)
            folder = checkout_folder(lockfile.get_repo(repo).checkout)
            clones.setdefault(job_id, (f"sets.{shown_key(name)}.{shown_key(repo)}", folder, pin.commit, pin.job_kwargs))
    for name in pinning:
        if lockfile.get_set(name).configs:
            graph = load_graph(lockfile, name)
            for clone in graph.clones:
                if clone.job in graph.pinned:  # a hand-written clone of a pin too
                    kwargs = {"files_to_checkout": clone.files_to_checkout, "patches": clone.patches}
                    folder = clone.checkout_folder_name
                    clones.setdefault(clone.job, (f"sets.{shown_key(name)}", folder, clone.commit or "", kwargs))
    found = []
    for job_id, (label, folder, commit, kwargs) in sorted(clones.items()):
        job_dir = lockfile.root / "work" / job_id
        finished = any((job_dir / marker).exists() for marker in ("finished", "finished.tar.gz"))
        if finished and (job_dir / "output" / folder).is_dir():
            found.append((f"{label} ({job_id})", job_dir / "output" / folder, commit, kwargs))
    return found


def _how_to_restore(checkout: Path, commit: str, kwargs: Mapping[str, Any]) -> str:
    """
    :return: how to bring a checkout that differs back to its commit, the user's edits (ignored files too: they
        count as changes) kept in git's stash; ``""`` when there is no checkout (the problem says how to make one)
    """
    if not checkout.is_dir() or not is_checkout(checkout):
        return ""
    where = shlex.quote(display_path(checkout))
    if kwargs.get("patches") or kwargs.get("files_to_checkout") is not None:
        # its files are not its commit's: git's own state cannot tell an edit from what the clone job did
        return "; it was made with patches or files_to_checkout: move it away and make it again (its clone job)"
    return (
        f"; to restore it: git -C {where} stash --all (your changes stay in its stash), then "
        f"git -C {where} checkout {commit[:12]}"
    )
