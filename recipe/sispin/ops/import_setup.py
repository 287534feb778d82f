"""
``pin import --config``'s part of the use case: what the calls found mean once the whole setup is adopted, the
adoption for ``--json``, and the write of pin.toml with its snapshot (:mod:`sispin.adopt.setup` does the adoption).
"""

from __future__ import annotations

__all__ = ["setup_json", "write_setup", "call_notes", "moving_advice", "movable"]

import os
from pathlib import Path
from typing import Any, Dict, List

from sispin.adopt.propose import Adoption
from sispin.adopt.setup import SetupAdoption, add_adoption
from sispin.adopt.sites import CallSite
from sispin.errors import ConcurrentChangeError
from sispin.graph.snapshot import edit_lock_and_snapshot, read_snapshot, record_graphs, set_inputs
from sispin.lock.files import snapshot_path
from sispin.lock.loading import parse_lockfile, read_lockfile_text
from sispin.lock.lockfile import Lockfile
from sispin.text import count, display_path, shown_key


def setup_json(whole: SetupAdoption) -> Dict[str, Any]:
    """:return: the adoption for ``--json``"""
    return {
        "configs": whole.configs,
        "jobs": whole.jobs,
        "outputs": whole.outputs,
        "kept": whole.kept,
        "clones": whole.clones,
        "pinned": whole.pinned,
        "aliases": whole.aliases,
        "unpinned": whole.unpinned,
        "accepted": whole.accepted,
        "waiting": whole.waiting,
        "problems": [{"problem": str(problem), "details": list(problem.details)} for problem in whole.problems],
    }


def write_setup(path: Path, whole: SetupAdoption, set_name: str) -> str:
    """
    Write the adopted set into pin.toml and its graph into the snapshot, as one change.

    :param path: the pin.toml (made when there is none)
    :param whole: the adoption, without problems
    :param set_name: the adopting set
    :return: what was written, for the user
    :raises ConcurrentChangeError: when another process changed what the set is built from meanwhile
    """
    assert whole.graph is not None  # built whenever there is no problem
    current = read_lockfile_text(path) if os.path.lexists(path) else None
    built_from = set_inputs(parse_lockfile(whole.text, path), set_name)
    recorded = read_snapshot(snapshot_path(path)).get(set_name)
    if current == whole.text:
        # nothing to add to the lock: the set may still lack its snapshot
        if recorded == whole.graph.outputs:
            return (
                f"{display_path(path)}: sets.{shown_key(set_name)} pins what its configs build already; nothing to add"
            )
        record_graphs(path, [whole.graph], parse_lockfile(whole.text, path))
        recorded_now = count(whole.outputs, "output")
        return f"{display_path(snapshot_path(path))}: sets.{shown_key(set_name)} recorded ({recorded_now})"

    def check(updated: Lockfile) -> None:
        if set_inputs(updated, set_name) != built_from:
            raise ConcurrentChangeError(
                f"{display_path(path)}: another process changed what sets.{shown_key(set_name)} is built from while "
                "this command ran; nothing written"
            )

    edit_lock_and_snapshot(
        path, lambda _, document: add_adoption(document, whole, set_name), [whole.graph], create=True, check=check
    )
    return (
        f"{display_path(path)}: sets.{shown_key(set_name)} adopted ({count(len(whole.proposal.pins), 'new pin')}, "
        f"{count(len(whole.aliases), 'hash_overwrite alias')}); {display_path(snapshot_path(path))}: "
        f"{count(whole.outputs, 'output')} recorded"
    )


def call_notes(sites: List[CallSite], adoption: Adoption, whole: SetupAdoption) -> List[str]:
    """
    :param sites: the calls a scan found
    :param adoption: what adopting the calls alone means
    :param whole: the adoption of the whole setup
    :return: what each call found means once the whole setup is adopted, one note each: a call that cannot be
        replaced yet stays as written (what it clones in the graph is adopted from there); an overwrite the adoption
        binds is one ``exp.repo()`` applies only where the call set it as ``exp.repo()`` does (on the clone's own
        output, before any job used it)
    """
    notes = []
    for index, site in enumerate(sites):
        repo = adoption.proposal.repo_of_site.get(index)
        if repo is not None and repo not in whole.pinned:
            continue  # said at the call: no config builds it
        for reason in adoption.proposal.reasons.get(index, []):
            if reason.kind == "hash_overwrite" and repo in whole.aliases:
                notes.append(f"{site.where}: {moving_advice(site, whole)}")
            elif reason.blocks:
                notes.append(f"{site.where}: stays as written ({reason.message})")
                break
            else:
                notes.append(f"{site.where}: {reason.message}")
    return notes


def moving_advice(site: CallSite, whole: SetupAdoption) -> str:
    """
    :param site: a call whose overwrite pin.toml binds
    :param whole: the adoption of the whole setup
    :return: whether moving the call to ``exp.repo()`` keeps its ids, and what to do with it: the one advice the
        import gives for the call (``pin upgrade`` later asks for the assignment to go, as the ids move then anyway)
    """
    if movable(site, whole):
        return "pin.toml binds its hash_overwrite: exp.repo() applies the same (same ids; drop the assignment then)"
    return (
        "pin.toml binds its hash_overwrite; keep this call as written until the pin is upgraded: the value is set on "
        "a copy of the output or after a job used it, and exp.repo() would set it on the output itself from the start "
        "(other ids); `pin upgrade` asks for the assignment to go, as the ids move then anyway"
    )


def movable(site: CallSite, whole: SetupAdoption) -> bool:
    """:return: whether a call whose overwrite pin.toml binds may move to ``exp.repo()`` keeping its ids"""
    places = {f"{os.path.normpath(o.file)}:{o.line}" for o in site.overwrites}
    return bool(places) and places <= {os.path.normpath(where) for where in whole.movable}
