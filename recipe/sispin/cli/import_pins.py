"""
``pin import PATH ... [--set NAME] [--write] [--json]``: adopt hand-written CloneGitRepositoryJob pins.

Reads Python files statically (never runs them), reports every CloneGitRepositoryJob call with its arguments and
risks, groups the calls by repository, proposes ``[repos.*]`` and a set's pins, and with ``--write`` adds them to
pin.toml (existing content kept, conflicts reported and never overwritten). Each call that pins a full commit gets
its replacement, ``exp.repo(NAME)``; when the setup has Sisyphus, its job id is confirmed equal to the original's.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "import_pins"]

import argparse
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import tomlkit

from sispin.adopt.follow import scan_paths
from sispin.adopt.propose import Adoption, Proposal, add_to_document, adopt, status_of
from sispin.adopt.scan import CallSite
from sispin.adopt.setup import SetupAdoption, adopt_setup, adopted_pins
from sispin.cli.import_setup import (
    call_notes,
    moving_advice,
    proposed_document,
    setup_json,
    setup_lines,
    write_setup,
)
from sispin.cli.options import add_command, json_output
from sispin.cli.output import Output
from sispin.clonejob import PARAMETERS, PIN_KWARGS
from sispin.errors import LockfileError, SisyphusError, UsageError
from sispin.lock.editing import edit_lockfile
from sispin.lock.files import check_writable, snapshot_path, write_atomically
from sispin.lock.lockfile import LOCK_ENV, LOCKFILE_NAME, Lockfile, find_lockfile, load_lockfile, valid_name
from sispin.lock.urls import redact_text, same_repository
from sispin.text import count, display_path, shown_key

#: the arguments a report shows beside url and commit, in the job's parameter order
_SHOWN_ARGUMENTS = tuple(name for name, _ in PARAMETERS if name not in ("url", "commit"))


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "import",
        run,
        description="Scan Python files (statically: nothing is executed) for CloneGitRepositoryJob calls, report "
        "each with its arguments and risks, and propose [repos.*] and the pins of set NAME. --write adds them to "
        "pin.toml without touching existing entries. Exit 1 when a call is blocked (it cannot be adopted with "
        "the same job id); notes alone (what adopting implies) exit 0. With --config, the configs are loaded by "
        "real Sisyphus (no job runs) and the whole graph they build is adopted: exit 1 when that would change an "
        "id or hide a commit (nothing is written then).",
    )
    parser.add_argument("paths", metavar="PATH", nargs="+", type=Path, help="Python files or directories")
    parser.add_argument("--set", dest="set_name", metavar="NAME", help="the set that pins the found commits")
    parser.add_argument("--write", action="store_true", help="add the proposal to pin.toml (needs --set)")
    parser.add_argument(
        "--config",
        dest="configs",
        metavar="CONFIG",
        action="append",
        default=[],
        help="adopt the whole setup these configs build (repeatable; relative to the setup root, where pin.toml is "
        "or will be; PATH is still scanned, for the calls' replacements): every clone in the graph becomes a pin of "
        "the set, its hash_overwrite an alias bound to its commit; confirmed by building the graph again (every "
        "output keeps its job id); --write then records the snapshot too. Needs --set",
    )
    parser.add_argument(
        "--accept-unpinned",
        action="store_true",
        help="with --config: accept the clones that pin no full commit by their URL (allow_unpinned)",
    )
    json_output(parser)


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    return import_pins(
        args.paths,
        out,
        set_name=args.set_name,
        write=args.write,
        as_json=args.json,
        configs=args.configs,
        accept_unpinned=args.accept_unpinned,
    )


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
            raise UsageError(f"--config {config}: give it relative to the setup root {display_path(root)}")
        if not os.path.lexists(root / normal):
            raise UsageError(f"--config {config}: no such file (paths are relative to {display_path(root)})")
        if normal not in found:
            found.append(normal)
    return found


def import_pins(
    paths: Sequence[Path],
    out: Output,
    *,
    set_name: Optional[str],
    write: bool,
    as_json: bool,
    configs: Sequence[str] = (),
    accept_unpinned: bool = False,
) -> int:
    """
    :param paths: files and directories to scan
    :param out: the report (or JSON)
    :param set_name: the set to propose (and write) pins for
    :param write: add the proposal to pin.toml
    :param as_json: print JSON instead of text
    :param configs: adopt the whole graph these configs build (relative to the setup root)
    :param accept_unpinned: with configs: accept clones that pin no full commit by URL
    :return: exit code: 0 (also with notes), or 1 when some call (with configs: the setup) cannot be adopted
    :raises SisyphusError: when job ids could not be computed (after the report; nothing is written)
    """
    _check_arguments(paths, set_name, write, configs)
    if accept_unpinned and not configs:
        raise UsageError("--accept-unpinned needs --config: it accepts the clones a setup's graph has")
    try:
        lock_path: Optional[Path] = find_lockfile()
    except LockfileError:
        lock_path = None  # no pin.toml yet: --write makes one
    lockfile = load_lockfile(lock_path) if lock_path else None
    path = lockfile.path if lockfile else Path(os.environ.get(LOCK_ENV) or LOCKFILE_NAME).absolute()
    configs = _config_paths(configs, path.parent)
    if write and lockfile and set_name in lockfile.sets:
        lockfile.sets[set_name].check_not_frozen("pin import --write")
    if write:  # say it before the costly part, not after
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
    problems = whole.problems if whole is not None else adoption.problems
    written = None
    if write and whole is not None and not whole.problems:
        written = write_setup(path, whole, str(set_name))
    elif write and whole is None and not adoption.ids_note:
        written = _write(path, adoption.proposal, str(set_name))
    _report(out, sites, warnings, adoption, whole, set_name or "SET", as_json, written)
    if adoption.ids_note:
        # the promise is the same job id for every replacement: unconfirmed, nothing is adopted
        raise SisyphusError(redact_text(f"{adoption.ids_note}{' (nothing written)' if write else ''}"))
    if write and written is None and not as_json:
        out.info(f"{display_path(path)}: nothing written ({count(len(problems), 'problem')} above)")
    return 1 if problems else 0


def _report(
    out: Output,
    sites: List[CallSite],
    warnings: List[str],
    adoption: Adoption,
    whole: Optional[SetupAdoption],
    set_name: str,
    as_json: bool,
    written: Optional[str],
) -> None:
    """Say what the scan found and proposes, what the setup's adoption keeps, and what was written."""
    # what is shown never repeats a secret-looking string found in the code; what is written is checked by pin.toml's
    # rules, which refuse a URL with credentials
    if as_json:
        report = _json_report(sites, warnings, adoption, whole, set_name)
        report["written"] = written
        out.json(_masked(report))
        return
    for line in _report_lines(sites, warnings, adoption, set_name, whole):
        out.result(redact_text(line))
    if whole is not None:
        for line in setup_lines(whole, set_name):
            out.result(redact_text(line))
        for problem in whole.problems:
            out.result(redact_text(f"problem: {problem}"))
            for detail in getattr(problem, "details", ()):
                out.detail(redact_text(f"    {detail}"))
    if written:
        out.info(written)


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


def _site_record(site: CallSite, proposal: Proposal, index: int, whole: Optional[SetupAdoption]) -> Dict[str, Any]:
    aliased = whole is not None and proposal.repo_of_site.get(index) in whole.aliases
    return {
        "status": status_of(proposal, index),
        "reasons": [
            {
                "kind": r.kind,
                "message": (
                    moving_advice(site, whole) if aliased and whole and r.kind == "hash_overwrite" else r.message
                ),
                "blocks": r.blocks,
            }
            for r in proposal.reasons.get(index, [])
        ],
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
    }


def _json_report(
    sites: List[CallSite], warnings: List[str], adoption: Adoption, whole: Optional[SetupAdoption], set_name: str
) -> Dict[str, Any]:
    proposal, ids = adoption.proposal, adoption.ids
    records = []
    for index, site in enumerate(sites):
        record = _site_record(site, proposal, index, whole)
        repo = proposal.repo_of_site.get(index)
        record["replacement"] = (f'exp.commit("{repo}")' if site.helper else f'exp.repo("{repo}")') if repo else None
        record["job_id"] = ids[index][0] if index in ids else None
        record["replacement_job_id"] = ids[index][1] if index in ids else None
        records.append(record)
    report = {
        "call_sites": records,
        "repos": proposal.repos,
        "pins": proposal.pins,
        "by_file": _by_file(sites, proposal),
        "problems": adoption.problems,
        "notes": adoption.notes,
        "warnings": warnings,
    }
    if whole is not None:  # what the adoption of the setup writes, and says, instead
        notes = [line[len("note: ") :] for line in call_notes(sites, adoption, whole)]
        report.update(pins=adopted_pins(whole), problems=[str(p) for p in whole.problems], notes=notes)
        report["setup"] = setup_json(whole)
    return report


def _by_file(sites: List[CallSite], proposal: Proposal) -> Dict[str, List[str]]:
    """:return: file -> the entries its adopted calls use, in file order"""
    used: Dict[str, List[str]] = {}
    for index, site in enumerate(sites):
        repo = proposal.repo_of_site.get(index)
        if repo is not None and repo not in used.setdefault(site.file, []):
            used[site.file].append(repo)
    return {file: repos for file, repos in used.items() if repos}


def _several_entries(proposal: Proposal) -> bool:
    """Whether the proposal has more than one entry of a repository (its URL up to spelling)."""
    urls = [table["url"] for table in proposal.repos.values()]
    return any(same_repository(a, b) for i, a in enumerate(urls) for b in urls[i + 1 :])


def _masked(value: Any) -> Any:
    """A JSON-able value with every string (keys too) passed through :func:`redact_text`."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {_masked(key): _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value


def _report_lines(
    sites: List[CallSite], warnings: List[str], adoption: Adoption, set_name: str, whole: Optional[SetupAdoption]
) -> List[str]:
    proposal, ids = adoption.proposal, adoption.ids
    files = len({site.file for site in sites})
    lines = [f"found {count(len(sites), 'CloneGitRepositoryJob call')} in {count(files, 'file')}"]
    for index, site in enumerate(sites):
        described = [site.url or f"url={site.expressions.get('url')}"]
        described.append(f"commit {site.commit}" if site.commit else "no commit")
        for key in _SHOWN_ARGUMENTS:
            if site.arguments.get(key) is not None:
                described.append(f"{key}={site.arguments[key]!r}")
        lines.append(f"\n{site.where}  {'  '.join(described)}")
        if site.helper:
            lines.append(f"    through helper {site.helper}")
        for risk in site.risks:
            lines.append(f"    risk: {risk}")
        repo = proposal.repo_of_site.get(index)
        if repo and whole is not None and repo not in whole.pinned:
            lines.append(f"    not built by the configs of sets.{shown_key(set_name)}: stays as written, not pinned")
        elif repo:
            verdict = ""
            if index in ids:
                old, new = ids[index]
                verdict = f"  (same job id {old})" if old == new else f"  (JOB ID DIFFERS: {old} -> {new})"
            if site.helper:
                replacement = f'pass experiment_set("{set_name}").commit("{repo}") as the commit'
            else:
                replacement = f'replace with: experiment_set("{set_name}").repo("{repo}")'
            lines.append(f"    {replacement}{verdict}")
    document = proposed_document(proposal, set_name, whole)
    lines += ["\nproposed for pin.toml:\n", document] if document else []
    for warning in warnings:
        lines.append(f"warning: {warning}")
    by_file = _by_file(sites, proposal)
    if _several_entries(proposal) and len(by_file) > 1 and whole is None:
        # one set may pin several commits of a repository; splitting by file is the other way, and often clearer
        lines.append("\nentries each file uses (to make one set per file instead: pin import FILE --set NAME):")
        lines += [f"    {file}: {', '.join(repos)}" for file, repos in by_file.items()]
    if whole is not None:
        return lines + call_notes(sites, adoption, whole)
    return (
        lines + [f"note: {note}" for note in adoption.notes] + [f"problem: {problem}" for problem in adoption.problems]
    )
