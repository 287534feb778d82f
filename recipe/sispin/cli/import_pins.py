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
from sispin.adopt.setup import SetupAdoption, add_adoption, adopt_setup
from sispin.cli.options import add_command, json_output
from sispin.cli.output import Output
from sispin.clonejob import PARAMETERS, PIN_KWARGS
from sispin.errors import ConcurrentChangeError, LockfileError, SisyphusError, UsageError
from sispin.graph.snapshot import edit_lock_and_snapshot, set_inputs, snapshot_path
from sispin.lock.editing import edit_lockfile
from sispin.lock.files import check_writable, write_atomically
from sispin.lock.lockfile import (
    LOCK_ENV,
    LOCKFILE_NAME,
    Lockfile,
    display_path,
    find_lockfile,
    load_lockfile,
    parse_lockfile,
    valid_name,
)
from sispin.lock.urls import redact_text, same_repository

#: the arguments a report shows beside url and commit, in the job's parameter order
_SHOWN_ARGUMENTS = tuple(name for name, _ in PARAMETERS if name not in ("url", "commit"))


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "import",
        run,
        help="find hand-written CloneGitRepositoryJob pins and move them into pin.toml",
        description="Scan Python files (statically: nothing is executed) for CloneGitRepositoryJob calls, report "
        "each with its arguments and risks, and propose [repos.*] and the pins of set NAME. --write adds them to "
        "pin.toml without touching existing entries. Exit 1 when a call is blocked (it cannot be adopted with "
        "the same job id); notes alone (what adopting implies) exit 0.",
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
        "or will be): every clone in the graph becomes a pin of the set, its hash_overwrite an alias bound to its "
        "commit; confirmed by building the graph again (every output keeps its job id); --write then records the "
        "snapshot too. Needs --set",
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
    sites, warnings = scan_paths(paths)
    try:
        lock_path: Optional[Path] = find_lockfile()
    except LockfileError:
        lock_path = None  # no pin.toml yet: --write makes one
    lockfile = load_lockfile(lock_path) if lock_path else None
    path = lockfile.path if lockfile else Path(os.environ.get(LOCK_ENV) or LOCKFILE_NAME).absolute()
    if write and lockfile is not None:
        check_writable(lockfile.path)  # say it before the costly part, not after
    for config in configs:
        if not os.path.lexists(path.parent / config):
            raise UsageError(f"--config {config}: no such file (paths are relative to {display_path(path.parent)})")
    adoption = adopt(sites, lockfile, set_name or "SET")
    whole = (
        adopt_setup(lockfile, path, str(set_name), configs, accept_unpinned=accept_unpinned, proposal=adoption.proposal)
        if configs and not adoption.ids_note
        else None
    )
    _report(out, sites, warnings, adoption, whole, set_name or "SET", as_json)
    if adoption.ids_note:
        # the promise is the same job id for every replacement: unconfirmed, nothing is adopted
        raise SisyphusError(redact_text(f"{adoption.ids_note}{' (nothing written)' if write else ''}"))
    if whole is not None:
        return _finish_setup(out, path, whole, str(set_name), write)
    if write:
        _write(path, adoption.proposal, str(set_name))
        added = (
            f"{len(adoption.proposal.repos)} repositories and {len(adoption.proposal.pins)} pins of set {set_name!r}"
        )
        out.info(f"{display_path(path)}: added {added}")
    return 1 if adoption.problems else 0


def _report(
    out: Output,
    sites: List[CallSite],
    warnings: List[str],
    adoption: Adoption,
    whole: Optional[SetupAdoption],
    set_name: str,
    as_json: bool,
) -> None:
    """Say what the scan found and proposes, and what the setup's adoption keeps."""
    # what is shown never repeats a secret-looking string found in the code; what is written is checked by pin.toml's
    # rules, which refuse a URL with credentials
    if as_json:
        report = _json_report(sites, warnings, adoption)
        if whole is not None:
            report["setup"] = _json_setup(whole)
        out.json(_masked(report))
        return
    for line in _report_lines(sites, warnings, adoption, set_name, whole):
        out.result(redact_text(line))
    if whole is not None:
        for line in _setup_lines(whole, set_name):
            out.result(redact_text(line))
        for problem in whole.problems:
            out.result(redact_text(f"problem: {problem}"))
            for detail in getattr(problem, "details", ()):
                out.detail(redact_text(f"    {detail}"))


def _finish_setup(out: Output, path: Path, whole: SetupAdoption, set_name: str, write: bool) -> int:
    """Write the adopted setup (pin.toml and its snapshot, as one change) when it keeps every id; say what was done."""
    if whole.problems:
        out.info(f"{display_path(path)}: nothing written (the adoption would not keep every job id)")
        return 1
    if not write:
        return 0
    built_from = set_inputs(parse_lockfile(whole.text, path), set_name)

    def check(updated: Lockfile) -> None:
        if set_inputs(updated, set_name) != built_from:
            raise ConcurrentChangeError(
                f"{display_path(path)}: another process changed what sets.{set_name} is built from while this command "
                "ran; nothing written"
            )

    assert whole.graph is not None  # built whenever there is no problem
    edit_lock_and_snapshot(
        path, lambda _, document: add_adoption(document, whole, set_name), [whole.graph], create=True, check=check
    )
    out.info(
        f"{display_path(path)}: added sets.{set_name} ({len(whole.proposal.pins)} pins, {len(whole.aliases)} "
        f"hash_overwrite aliases); {display_path(snapshot_path(path))}: {whole.outputs} outputs recorded"
    )
    return 0


def _write(path: Path, proposal: Proposal, set_name: str) -> None:
    """Add the proposal to pin.toml (made when there is none), checked to read back as proposed before it is written."""
    before: List[Lockfile] = []

    def add(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        before.append(current)
        add_to_document(document, proposal, set_name)

    def write_checked(target: Path, text: str, updated: Lockfile) -> None:
        _check_read_back(target, before[-1], updated, proposal, set_name)
        write_atomically(target, text)

    edit_lockfile(path, add, create=True, write=write_checked)


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
                f"{where}: sets.{set_name}.{name} would read back as another value than the call's (its job id "
                "would differ); nothing written"
            )
    for name, table in proposal.repos.items():
        if name not in before.repos and after.repos[name].url != table["url"]:
            raise LockfileError(f"{where}: repos.{name}.url would read back as another URL; nothing written")


def _site_record(site: CallSite, proposal: Proposal, index: int) -> Dict[str, Any]:
    return {
        "status": status_of(proposal, index),
        "reasons": [
            {"kind": r.kind, "message": r.message, "blocks": r.blocks} for r in proposal.reasons.get(index, [])
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


def _json_report(sites: List[CallSite], warnings: List[str], adoption: Adoption) -> Dict[str, Any]:
    proposal, ids = adoption.proposal, adoption.ids
    records = []
    for index, site in enumerate(sites):
        record = _site_record(site, proposal, index)
        repo = proposal.repo_of_site.get(index)
        record["replacement"] = (f'exp.commit("{repo}")' if site.helper else f'exp.repo("{repo}")') if repo else None
        record["job_id"] = ids[index][0] if index in ids else None
        record["replacement_job_id"] = ids[index][1] if index in ids else None
        records.append(record)
    return {
        "call_sites": records,
        "repos": proposal.repos,
        "pins": proposal.pins,
        "by_file": _by_file(sites, proposal),
        "problems": adoption.problems,
        "notes": adoption.notes,
        "warnings": warnings,
    }


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


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}"


def _masked(value: Any) -> Any:
    """A JSON-able value with every string (keys too) passed through :func:`redact_text`."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {_masked(key): _masked(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_masked(item) for item in value]
    return value


def _setup_lines(whole: SetupAdoption, set_name: str) -> List[str]:
    """:return: what adopting the setup's graph pins, accepts and keeps"""
    lines = [
        f"\nthe setup as sets.{set_name} ({', '.join(whole.configs)}): {_count(whole.jobs, 'job')}, "
        f"{_count(whole.outputs, 'output')}, {_count(whole.clones, 'clone')}"
    ]
    for repo, commit in sorted(whole.pinned.items()):
        alias = f"  hash_overwrite {whole.aliases[repo]!r} bound to it" if repo in whole.aliases else ""
        lines.append(f"    {repo} {commit[:7]}{alias}")
    for url in whole.unpinned:
        accepted = "accepted by URL (allow_unpinned)" if whole.accepted else "not accepted (--accept-unpinned)"
        lines.append(f"    {url}  no full commit: {accepted}")
    if whole.graph is not None:
        lines.append(f"{whole.kept} of {_count(whole.outputs, 'output')} keep their job id")
    return lines


def _json_setup(whole: SetupAdoption) -> Dict[str, Any]:
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
        "problems": [
            {"problem": str(problem), "details": list(getattr(problem, "details", ()))} for problem in whole.problems
        ],
    }


def _report_lines(
    sites: List[CallSite], warnings: List[str], adoption: Adoption, set_name: str, whole: Optional[SetupAdoption]
) -> List[str]:
    proposal, ids = adoption.proposal, adoption.ids
    files = len({site.file for site in sites})
    lines = [f"found {_count(len(sites), 'CloneGitRepositoryJob call')} in {_count(files, 'file')}"]
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
            lines.append(f"    not built by the configs of sets.{set_name}: stays as written, not pinned")
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
    lines += _proposed_lines(proposal, set_name, whole)
    for warning in warnings:
        lines.append(f"warning: {warning}")
    by_file = _by_file(sites, proposal)
    if _several_entries(proposal) and len(by_file) > 1 and whole is None:
        # one set may pin several commits of a repository; splitting by file is the other way, and often clearer
        lines.append("\nentries each file uses (to make one set per file instead: pin import FILE --set NAME):")
        lines += [f"    {file}: {', '.join(repos)}" for file, repos in by_file.items()]
    return lines + _verdict_lines(sites, adoption, whole)


def _proposed_lines(proposal: Proposal, set_name: str, whole: Optional[SetupAdoption]) -> List[str]:
    """:return: what pin.toml would get: the scan's proposal, or the whole setup's adoption"""
    if not (proposal.repos or proposal.pins or whole):
        return []
    document = tomlkit.document()
    if whole is not None:
        add_adoption(document, whole, set_name)
    else:
        add_to_document(document, proposal, set_name)
    return ["\nproposed for pin.toml:\n", tomlkit.dumps(document).strip()]


def _verdict_lines(sites: List[CallSite], adoption: Adoption, whole: Optional[SetupAdoption]) -> List[str]:
    """
    :return: the notes and problems of the calls found; when the whole setup is adopted, a call that cannot be
        replaced yet is a note (it stays as written; what it clones in the graph is adopted from there), and an
        overwrite the adoption binds is one ``exp.repo()`` applies
    """
    if whole is None:
        return [f"note: {note}" for note in adoption.notes] + [f"problem: {problem}" for problem in adoption.problems]
    lines = []
    for index, site in enumerate(sites):
        repo = adoption.proposal.repo_of_site.get(index)
        if repo is not None and repo not in whole.pinned:
            continue  # said at the call: no config builds it
        for reason in adoption.proposal.reasons.get(index, []):
            if reason.kind == "hash_overwrite" and repo in whole.aliases:
                lines.append(f"note: {site.where}: pin.toml binds its hash_overwrite: exp.repo() applies it (same ids)")
            elif reason.blocks:
                lines.append(f"note: {site.where}: stays as written ({reason.message})")
                break
            else:
                lines.append(f"note: {site.where}: {reason.message}")
    return lines
