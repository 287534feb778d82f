"""
``pin import --config``'s part of the command: what adopting the whole setup pins, accepts and keeps, as text and as
JSON, and the write of pin.toml with its snapshot (:mod:`sispin.adopt.setup` does the adoption).
"""

from __future__ import annotations

__all__ = ["setup_lines", "setup_json", "write_setup", "call_notes", "moving_advice", "proposed_document"]

import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import tomlkit

from sispin.adopt.propose import Adoption, Proposal, add_to_document
from sispin.adopt.setup import SetupAdoption, add_adoption
from sispin.adopt.sites import CallSite
from sispin.errors import ConcurrentChangeError
from sispin.graph.snapshot import edit_lock_and_snapshot, read_snapshot, record_graphs, set_inputs
from sispin.lock.files import snapshot_path
from sispin.lock.lockfile import Lockfile, parse_lockfile, read_lockfile_text
from sispin.text import count, display_path, shown_key


def setup_lines(whole: SetupAdoption, set_name: str) -> List[str]:
    """:return: what adopting the setup's graph pins, accepts and keeps"""
    lines = [
        f"\nthe setup as sets.{shown_key(set_name)} ({', '.join(whole.configs)}): {count(whole.jobs, 'job')}, "
        f"{count(whole.outputs, 'output')}, {count(whole.clones, 'clone')}"
    ]
    for repo, commit in sorted(whole.pinned.items()):
        alias = f"  hash_overwrite {whole.aliases[repo]!r} bound to it" if repo in whole.aliases else ""
        lines.append(f"    {repo} {commit[:7]}{alias}")
    for url in whole.unpinned:
        accepted = "accepted by URL (allow_unpinned)" if whole.accepted else "not accepted (--accept-unpinned)"
        lines.append(f"    {url}  no full commit: {accepted}")
    for config in whole.waiting:
        lines.append(
            f"note: {config} waits for unfinished jobs: what it builds after that is not adopted yet (run the import "
            "again once they finished)"
        )
    if whole.graph is not None:
        kept = "keeps its job id" if whole.kept == 1 else "keep their job id"
        lines.append(f"{whole.kept} of {count(whole.outputs, 'output')} {kept}")
    return lines


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
        "problems": [
            {"problem": str(problem), "details": list(getattr(problem, "details", ()))} for problem in whole.problems
        ],
    }


def write_setup(path: Path, whole: SetupAdoption, set_name: str) -> str:
    """
    Write the adopted set into pin.toml and its graph into the snapshot, as one change.

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
        recorded = count(whole.outputs, "output")
        return f"{display_path(snapshot_path(path))}: sets.{shown_key(set_name)} recorded ({recorded})"

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
    :return: what each call found means once the whole setup is adopted: a call that cannot be replaced yet stays
        as written (what it clones in the graph is adopted from there); an overwrite the adoption binds is one
        ``exp.repo()`` applies only where the call set it as ``exp.repo()`` does (on the clone's own output, before
        any job used it)
    """
    lines = []
    for index, site in enumerate(sites):
        repo = adoption.proposal.repo_of_site.get(index)
        if repo is not None and repo not in whole.pinned:
            continue  # said at the call: no config builds it
        for reason in adoption.proposal.reasons.get(index, []):
            if reason.kind == "hash_overwrite" and repo in whole.aliases:
                lines.append(f"note: {site.where}: {moving_advice(site, whole)}")
            elif reason.blocks:
                lines.append(f"note: {site.where}: stays as written ({reason.message})")
                break
            else:
                lines.append(f"note: {site.where}: {reason.message}")
    return lines


def moving_advice(site: CallSite, whole: SetupAdoption) -> str:
    """:return: whether moving a call whose overwrite pin.toml binds to ``exp.repo()`` keeps its ids"""
    places = {f"{os.path.normpath(o.file)}:{o.line}" for o in site.overwrites}
    if places and places <= {os.path.normpath(where) for where in whole.movable}:
        return "pin.toml binds its hash_overwrite: exp.repo() applies the same (same ids; drop the assignment then)"
    return (
        "pin.toml binds its hash_overwrite; keep this call as written: the value is set on a copy of the output or "
        "after a job used it, and exp.repo() would set it on the output itself from the start (other ids)"
    )


def proposed_document(proposal: Proposal, set_name: str, whole: Optional[SetupAdoption]) -> Optional[str]:
    """:return: what pin.toml would get (the scan's proposal, or the whole setup's adoption); None for nothing"""
    if not (proposal.repos or proposal.pins or whole):
        return None
    document = tomlkit.document()
    if whole is not None:
        add_adoption(document, whole, set_name)
    else:
        add_to_document(document, proposal, set_name)
    return tomlkit.dumps(document).strip()
