"""
``pin import``: adopt hand-written CloneGitRepositoryJob pins.

Python files are read statically (never run): every CloneGitRepositoryJob call with its arguments and risks, the
calls grouped by repository into ``[repos.*]`` and a set's pins, and, when asked, those added to pin.toml (existing
content kept, conflicts reported and never overwritten). Each call that pins a full commit gets its replacement,
``exp.repo(NAME)``; when the setup has Sisyphus, its job id is confirmed equal to the original's. With configs, the
whole graph they build is adopted instead (:mod:`sispin.ops.import_setup`).
"""

from __future__ import annotations

__all__ = ["FoundCall", "ImportResult", "import_pins"]

import dataclasses
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tomlkit

from sispin.adopt.follow import scan_paths
from sispin.adopt.propose import Adoption, Proposal, Reason, add_to_document, adopt, status_of
from sispin.adopt.setup import SetupAdoption, adopt_setup, adopted_pins
from sispin.adopt.sites import CallSite
from sispin.clonejob import PIN_KWARGS
from sispin.errors import LockfileError, SisyphusError, UsageError
from sispin.graph.guard import Problem
from sispin.lock.editing import edit_lockfile
from sispin.lock.files import check_writable, snapshot_path, write_atomically
from sispin.lock.loading import LOCK_ENV, LOCKFILE_NAME, find_lockfile, load_lockfile
from sispin.lock.lockfile import Lockfile, valid_name
from sispin.lock.urls import redact_text
from sispin.ops.import_setup import call_notes, movable, moving_advice, setup_json, write_setup
from sispin.text import count, display_path, shown_key


@dataclass(frozen=True)
class FoundCall:
    """
    :param site: the call as the scan found it
    :param status: what adopting it means: ADOPT, NOTE or BLOCKED (:mod:`sispin.adopt.propose`)
    :param reasons: why it is blocked, or what adopting it implies
    :param entry: the ``[repos.*]`` entry its replacement names; None when it has none
    :param unbuilt: the setup's configs never build it (with configs only): it stays as written, not pinned
    :param job_ids: its job id as written and its replacement's, when Sisyphus computed them
    :param kept: pin.toml binds its overwrite, and replacing the call with ``exp.repo()`` would change its ids: it
        stays as written until the pin is upgraded
    """

    site: CallSite
    status: str
    reasons: List[Reason]
    entry: Optional[str]
    unbuilt: bool
    job_ids: Optional[Tuple[str, str]]
    kept: bool = False


@dataclass(frozen=True)
class ImportResult:
    """
    :param path: the pin.toml (written, or that would be made)
    :param set_name: the set that pins the found commits (``SET`` when none was named)
    :param set_exists: whether pin.toml has that set already (the proposal then adds to it)
    :param calls: every call found, in file order
    :param warnings: files that were skipped, and why
    :param proposal: what the scan proposes for pin.toml
    :param whole: the adoption of the whole graph the configs build; None without configs
    :param problems: why calls (with configs: the setup) cannot be adopted, one line each
    :param notes: what adopting implies, one line each
    :param write: whether the proposal was to be written
    :param written: what was written, for the user; None when nothing was
    :param unconfirmed: why the job ids could not be confirmed (nothing is adopted then); None when they were
    """

    path: Path
    set_name: str
    set_exists: bool
    calls: List[FoundCall]
    warnings: List[str]
    proposal: Proposal
    whole: Optional[SetupAdoption]
    problems: List[Problem]
    notes: List[str]
    write: bool
    written: Optional[str]
    unconfirmed: Optional[SisyphusError]

    @property
    def by_file(self) -> Dict[str, List[str]]:
        """File -> the entries its adopted calls use, in file order."""
        used: Dict[str, List[str]] = {}
        for call in self.calls:
            if call.entry is not None and call.entry not in used.setdefault(call.site.file, []):
                used[call.site.file].append(call.entry)
        return {file: entries for file, entries in used.items() if entries}

    def to_json(self) -> Dict[str, Any]:
        """:return: the report of ``--json``"""
        report = {
            "call_sites": [_call_json(call) for call in self.calls],
            "repos": self.proposal.repos,
            "pins": self.proposal.pins if self.whole is None else adopted_pins(self.whole),
            "by_file": self.by_file,
            "problems": [str(problem) for problem in self.problems],
            "notes": self.notes,
            "warnings": self.warnings,
        }
        if self.whole is not None:
            report["setup"] = setup_json(self.whole)
        report["written"] = self.written
        return report


def _call_json(call: FoundCall) -> Dict[str, Any]:
    site, entry = call.site, call.entry
    return {
        "status": call.status,
        "reasons": [{"kind": r.kind, "message": r.message, "blocks": r.blocks} for r in call.reasons],
        "file": site.file,
        "line": site.line,
        "url": site.url,
        "commit": site.commit,
        "branch": site.arguments.get("branch"),
        "checkout_folder_name": site.arguments.get("checkout_folder_name"),
        "other_kwargs": {k: v for k, v in site.arguments.items() if k in PIN_KWARGS and k != "branch"},
        "not_literal": site.expressions,
        "helper": site.helper,
        "risks": site.risks,
        "overwrites": [{"file": o.file, "line": o.line, "value": o.value} for o in site.overwrites],
        # a call kept as written has none: replacing it would change its ids (its reasons say why)
        "replacement": (
            None if call.kept or not entry else f'exp.commit("{entry}")' if site.helper else f'exp.repo("{entry}")'
        ),
        "kept_as_written": call.kept,
        "job_id": call.job_ids[0] if call.job_ids else None,
        "replacement_job_id": call.job_ids[1] if call.job_ids else None,
    }


def _check_arguments(paths: Sequence[Path], set_name: Optional[str], write: bool, configs: Sequence[str]) -> None:
    """:raises UsageError: naming the first argument that does not fit"""
    if write and not set_name:
        raise UsageError("--write needs --set NAME: the set that pins the found commits")
    if configs and not set_name:
        raise UsageError("--config needs --set NAME: the set the configs become")
    if set_name is not None and not valid_name(set_name):
        raise UsageError(f"--set {set_name!r}: names may use only letters, digits, '_', '.', '-'")
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")


def _config_paths(configs: Sequence[str], root: Path) -> List[str]:
    """
    :return: the configs as pin.toml lists them: relative to the setup root, normalized, each once
    :raises UsageError: for a config that is absolute, leaves the root or does not exist
    """
    found: List[str] = []
    for config in configs:
        normal = os.path.normpath(config)
        if os.path.isabs(config) or normal == ".." or normal.startswith(f"..{os.sep}"):
            raise UsageError(f"--config {config}: give it relative to the setup root, {root.absolute()}")
        if not os.path.lexists(root / normal):
            taken = f"paths are relative to the setup root, {root.absolute()}"
            raise UsageError(f"--config {config}: no such file ({taken})")
        if normal not in found:
            found.append(normal)
    return found


def import_pins(
    paths: Sequence[Path],
    *,
    set_name: Optional[str],
    write: bool,
    configs: Sequence[str] = (),
    accept_unpinned: bool = False,
) -> ImportResult:
    """
    :param paths: files and directories to scan
    :param set_name: the set to propose (and write) pins for
    :param write: add the proposal to pin.toml (made when there is none)
    :param configs: adopt the whole graph these configs build (relative to the setup root)
    :param accept_unpinned: with configs: accept clones that pin no full commit by URL
    :raises UsageError: for arguments that do not fit
    :raises SisyphusError: with configs, when job ids cannot be computed (nothing adopted)
    """
    _check_arguments(paths, set_name, write, configs)
    if accept_unpinned and not configs:
        raise UsageError("--accept-unpinned needs --config: it accepts the clones a setup's graph has")
    lockfile, path = _setup_lock()
    configs = _config_paths(configs, path.parent)
    if write and lockfile and set_name in lockfile.sets:
        lockfile.sets[set_name].check_not_frozen("pin import --write")
    if write:  # said before the costly part, not after
        for target in ([path] if lockfile else []) + ([snapshot_path(path)] if configs else []):
            check_writable(target)
    sites, warnings = scan_paths(paths)
    adoption = adopt(sites, lockfile, set_name or "SET")
    if configs and adoption.ids_note:
        raise SisyphusError(redact_text(f"{adoption.ids_note}: --config builds the configs with it (nothing adopted)"))
    whole = None
    if configs:
        whole = adopt_setup(
            lockfile, path, str(set_name), configs, accept_unpinned=accept_unpinned, proposal=adoption.proposal
        )
    written = None
    if write and whole is not None and not whole.problems:
        written = write_setup(path, whole, str(set_name))
    elif write and whole is None and not adoption.ids_note:
        written = _write(path, adoption.proposal, str(set_name))
    # the promise is the same job id for every replacement: unconfirmed, nothing is adopted
    unconfirmed = None
    if adoption.ids_note:
        unconfirmed = SisyphusError(redact_text(f"{adoption.ids_note}{' (nothing written)' if write else ''}"))
    return ImportResult(
        path=path,
        set_name=set_name or "SET",
        set_exists=lockfile is not None and set_name in lockfile.sets,
        calls=_found_calls(sites, adoption, whole),
        warnings=warnings,
        proposal=adoption.proposal,
        whole=whole,
        problems=whole.problems if whole is not None else adoption.problems,
        notes=call_notes(sites, adoption, whole) if whole is not None else adoption.notes,
        write=write,
        written=written,
        unconfirmed=unconfirmed,
    )


def _setup_lock() -> Tuple[Optional[Lockfile], Path]:
    """:return: the setup's pin.toml (None when there is none yet: --write makes one), and where it is or will be"""
    try:
        found = find_lockfile()
    except LockfileError:
        return None, Path(os.environ.get(LOCK_ENV) or LOCKFILE_NAME).absolute()
    lockfile = load_lockfile(found)  # one that is there must be valid
    return lockfile, lockfile.path


def _found_calls(sites: List[CallSite], adoption: Adoption, whole: Optional[SetupAdoption]) -> List[FoundCall]:
    proposal, found = adoption.proposal, []
    for index, site in enumerate(sites):
        entry = proposal.repo_of_site.get(index)
        reasons = proposal.reasons.get(index, [])
        kept = False
        if whole is not None and entry in whole.aliases:
            # the overwrite is one pin.toml binds: whether the call may move to exp.repo() is what matters now
            advice, kept = moving_advice(site, whole), not movable(site, whole)
            reasons = [dataclasses.replace(r, message=advice) if r.kind == "hash_overwrite" else r for r in reasons]
        unbuilt = entry is not None and whole is not None and entry not in whole.pinned
        status = status_of(proposal, index)
        found.append(FoundCall(site, status, reasons, entry, unbuilt, adoption.ids.get(index), kept))
    return found


def _write(path: Path, proposal: Proposal, set_name: str) -> str:
    """Add the proposal to pin.toml (made when there is none), checked to read back as proposed before it is written."""
    before: List[Lockfile] = []

    def add(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        before.append(current)
        add_to_document(document, proposal, set_name)

    def write_checked(target: Path, text: str, updated: Lockfile) -> None:
        _check_read_back(target, before[-1], updated, proposal, set_name)
        write_atomically(target, text)

    edit_lockfile(path, add, create=True, write=write_checked)
    return (
        f"{display_path(path)}: added {count(len(proposal.repos), 'repository')} and "
        f"{count(len(proposal.pins), 'pin')} of set {set_name!r}"
    )


def _check_read_back(target: Path, before: Lockfile, after: Lockfile, proposal: Proposal, set_name: str) -> None:
    """
    Write pin.toml only when what it says is what the calls say: every pin and URL the import adds reads back as
    the value whose job id was confirmed (a patch's line breaks, tabs and quotes through TOML's escapes and the
    file's line endings). Entries that were there before are never changed, and not checked.

    :raises LockfileError: naming the entry that would read back otherwise (nothing written)
    """
    where = display_path(target)
    pinned = before.sets[set_name].pins if set_name in before.sets else {}
    for name, value in proposal.pins.items():
        if name not in pinned and after.sets[set_name].pins[name].value != value:
            raise LockfileError(
                f"{where}: sets.{shown_key(set_name)}.{shown_key(name)} would read back as another value than the "
                "call's (its job id would differ); nothing written"
            )
    for name, table in proposal.repos.items():
        if name not in before.repos and after.repos[name].url != table["url"]:
            raise LockfileError(f"{where}: repos.{name}.url would read back as another URL; nothing written")
