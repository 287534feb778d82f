"""
``pin import PATH ... [--set NAME] [--write] [--json]``: adopt hand-written CloneGitRepositoryJob pins.

Reads Python files statically (never runs them), reports every CloneGitRepositoryJob call with its arguments and
risks, groups the calls by repository, proposes ``[repos.*]`` and a set's pins, and with ``--write`` adds them to
pin.toml (existing content kept, conflicts reported and never overwritten). Each call that pins a full commit gets
its replacement, ``exp.repo(NAME)``; when the setup has Sisyphus, its job id is confirmed equal to the original's.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "import_pins", "Proposal", "propose"]

import argparse
import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tomlkit

from sispin.errors import LockfileError, SisyphusError, UsageError
from sispin.graph import run_probe
from sispin.lockfile import (
    LOCK_ENV,
    LOCKFILE_NAME,
    Lockfile,
    add_value,
    append_table,
    check_url,
    display_path,
    edit_lockfile,
    find_lockfile,
    is_full_sha,
    load_lockfile,
    valid_name,
)
from sispin.scan import PARAMETERS, CallSite, scan_paths

_DEFAULTS = dict(PARAMETERS)
#: arguments that become pin-table entries (the rest are the repository's url/checkout and the commit)
_PIN_KWARGS = ("branch", "clone_submodules", "files_to_checkout", "patches")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = subparsers.add_parser(
        "import",
        help="find hand-written CloneGitRepositoryJob pins and move them into pin.toml",
        description="Scan Python files (statically: nothing is executed) for CloneGitRepositoryJob calls, report "
        "each with its arguments and risks, and propose [repos.*] and the pins of set NAME. --write adds them to "
        "pin.toml without touching existing entries. Exit 1 when a call cannot be adopted without changing its "
        "job id, or a proposal conflicts with pin.toml.",
    )
    parser.add_argument("paths", metavar="PATH", nargs="+", type=Path, help="Python files or directories")
    parser.add_argument("--set", dest="set_name", metavar="NAME", help="the set that pins the found commits")
    parser.add_argument("--write", action="store_true", help="add the proposal to pin.toml (needs --set)")
    parser.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """:param args: parsed command line"""
    return import_pins(args.paths, set_name=args.set_name, write=args.write, as_json=args.json)


@dataclass
class Proposal:
    """
    What pin.toml would need so that every adoptable call becomes ``exp.repo(name)`` with the same job id.

    :param repos: repository name -> its table (url, and branch/checkout when found)
    :param pins: repository name -> the set's pin (a SHA, or a table with extra arguments)
    :param repo_of_site: index of a call site -> the repository it is adopted as
    :param problems: call sites that cannot be adopted, and conflicts with pin.toml, one line each
    """

    repos: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    pins: Dict[str, Any] = field(default_factory=dict)
    repo_of_site: Dict[int, str] = field(default_factory=dict)
    problems: List[str] = field(default_factory=list)


def _pin_of(site: CallSite) -> Any:
    """The pin a call site needs: its commit, plus arguments that differ from CloneGitRepositoryJob's defaults."""
    extra = {k: site.arguments[k] for k in _PIN_KWARGS if k in site.arguments and site.arguments[k] != _DEFAULTS[k]}
    return {"commit": site.commit, **extra} if extra else site.commit


def _checkout_of(site: CallSite) -> Optional[str]:
    folder = site.arguments.get("checkout_folder_name", _DEFAULTS["checkout_folder_name"])
    return None if folder == _DEFAULTS["checkout_folder_name"] else folder


def _name_for(url: str, taken: Sequence[str]) -> str:
    tail = url.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    base = re.sub(r"[^A-Za-z0-9_.-]+", "_", tail[:-4] if tail.endswith(".git") else tail).strip("_.-") or "repo"
    if not valid_name(base) or base == "configs":
        base = f"repo_{base}"
    name, number = base, 2
    while name in taken:
        name, number = f"{base}_{number}", number + 1
    return name


def propose(sites: List[CallSite], lockfile: Optional[Lockfile], set_name: Optional[str]) -> Proposal:
    """
    :param sites: the call sites found
    :param lockfile: the existing pin.toml, if any (its repository names are reused, its pins respected)
    :param set_name: the set to pin in
    """
    proposal = Proposal()
    existing_repos = dict(lockfile.repos) if lockfile else {}
    existing_pins = lockfile.sets[set_name].pins if lockfile and set_name in lockfile.sets else {}
    names_by_url = {spec.url: name for name, spec in existing_repos.items()}
    for index, site in enumerate(sites):
        if not site.literal or site.url is None:
            proposal.problems.append(f"{site.where}: not adopted: its arguments are not all literals")
            continue
        if check_url(site.url):
            proposal.problems.append(f"{site.where}: not adopted: {check_url(site.url)}")
            continue
        if not is_full_sha(site.commit):
            proposal.problems.append(f"{site.where}: not adopted: it pins no full commit ({site.risks[-1]})")
            continue
        name = names_by_url.get(site.url)
        if name is None:
            name = _name_for(site.url, [*existing_repos, *proposal.repos])
            names_by_url[site.url] = name
        spec = existing_repos.get(name)
        if spec is not None:
            checkout = spec.checkout
        elif name in proposal.repos:
            checkout = proposal.repos[name].get("checkout")
        else:
            checkout = _checkout_of(site)
        if name not in existing_repos and name not in proposal.repos:
            table: Dict[str, Any] = {"url": site.url}
            if site.arguments.get("branch"):
                table["branch"] = site.arguments["branch"]
            if checkout is not None:
                table["checkout"] = checkout
            proposal.repos[name] = table
        if _checkout_of(site) != checkout:
            proposal.problems.append(
                f"{site.where}: not adopted: checkout folder {site.arguments.get('checkout_folder_name')!r} differs "
                f"from repository {name}'s {checkout or _DEFAULTS['checkout_folder_name']!r}"
            )
            continue
        pin = _pin_of(site)
        current = _as_toml(existing_pins[name]) if name in existing_pins else proposal.pins.get(name)
        if current is not None and current != pin:
            source = f"pin.toml sets.{set_name}" if name in existing_pins else "another call site"
            proposal.problems.append(
                f"{site.where}: not adopted: {name} is pinned as {_describe(current)} by {source}, this call uses "
                f"{_describe(pin)} (one set pins one commit per repository: put it in another set)"
            )
            continue
        if name not in existing_pins:
            proposal.pins[name] = pin
        proposal.repo_of_site[index] = name
        for risk in site.risks:
            if risk.startswith("hash_overwrite"):
                proposal.problems.append(
                    f"{site.where}: {risk}: jobs using that output hash the overwrite, not the commit; exp.repo() "
                    f"refuses it, so adopting this call renews those jobs (remove the hash_overwrite deliberately)"
                )
    return proposal


def _as_toml(pin: Any) -> Any:
    return {"commit": pin.commit, **pin.job_kwargs} if pin.job_kwargs else pin.commit


def _describe(pin: Any) -> str:
    if isinstance(pin, str):
        return pin[:7]
    extra = ", ".join(f"{k}={v!r}" for k, v in pin.items() if k != "commit")
    return f"{pin['commit'][:7]} ({extra})"


def _add_to(document: tomlkit.TOMLDocument, proposal: Proposal, set_name: str) -> None:
    """Add the proposal's repositories and pins that pin.toml does not have yet; never change existing ones."""
    for name, values in proposal.repos.items():
        if name not in document.get("repos", {}):
            table = tomlkit.table()
            table.update(values)
            append_table(document, "repos", name, table)
    if set_name in document.get("sets", {}):
        pins = document["sets"][set_name]
        for name, pin in proposal.pins.items():
            if name not in pins:
                add_value(pins, name, _toml_pin(pin))
    else:
        table = tomlkit.table()
        table["configs"] = []
        for name, pin in proposal.pins.items():
            table[name] = _toml_pin(pin)
        append_table(document, "sets", set_name, table)


def _toml_pin(pin: Any) -> Any:
    if not isinstance(pin, dict):
        return pin
    inline = tomlkit.inline_table()
    inline.update(pin)
    return inline


def import_pins(paths: Sequence[Path], *, set_name: Optional[str], write: bool, as_json: bool) -> int:
    """
    :param paths: files and directories to scan
    :param set_name: the set to propose (and write) pins for
    :param write: add the proposal to pin.toml
    :param as_json: print JSON instead of text
    :return: exit code: 0, or 1 when some call cannot be adopted or conflicts
    """
    if write and not set_name:
        raise UsageError("--write needs --set NAME: the set that pins the found commits")
    if set_name is not None and not valid_name(set_name):
        raise UsageError(f"--set {set_name!r}: names may use only letters, digits, '_', '.', '-'")
    for path in paths:
        if not path.exists():
            raise UsageError(f"{path}: no such file or directory")
    sites, warnings = scan_paths(paths)
    try:
        lock_path: Optional[Path] = find_lockfile()
    except LockfileError:
        lock_path = None  # no pin.toml yet: --write makes one
    lockfile = load_lockfile(lock_path) if lock_path else None
    shown_set = set_name or "SET"
    proposal = propose(sites, lockfile, shown_set)
    ids, ids_note = _check_ids(sites, proposal, lockfile, shown_set)
    problems = proposal.problems + [
        f"{sites[i].where}: the replacement's job id {new} differs from the original's {old}"
        for i, (old, new) in ids.items()
        if old != new
    ]

    if as_json:
        print(json.dumps(_json_report(sites, warnings, proposal, ids, problems), indent=2))
    else:
        _print_report(sites, warnings, proposal, ids, ids_note, problems, shown_set)
    if write:
        path = lockfile.path if lockfile else Path(os.environ.get(LOCK_ENV) or LOCKFILE_NAME).absolute()
        if lockfile is None:
            path.write_text("version = 1\n", encoding="utf-8")
        edit_lockfile(path, lambda current, document: _add_to(document, proposal, set_name))
        added = f"{len(proposal.repos)} repositories and {len(proposal.pins)} pins of set {set_name!r}"
        print(f"{display_path(path)}: added {added}")
    return 1 if problems else 0


def _check_ids(
    sites: List[CallSite], proposal: Proposal, lockfile: Optional[Lockfile], set_name: str
) -> Tuple[Dict[int, Tuple[str, str]], Optional[str]]:
    """Job ids of each adoptable call as written and of its replacement, by real Sisyphus when the setup has it."""
    if not proposal.repo_of_site:
        return {}, None
    if lockfile is None:
        return {}, "job ids not checked: no pin.toml with a Sisyphus checkout ([setup.*]; run `pin sync`)"
    document = tomlkit.parse(lockfile.path.read_text(encoding="utf-8"))
    _add_to(document, proposal, set_name)
    calls = [
        {"repo": repo, "positional": sites[i].positional, "arguments": sites[i].arguments}
        for i, repo in proposal.repo_of_site.items()
    ]
    with tempfile.TemporaryDirectory(prefix="sispin-import-") as scratch:
        request = Path(scratch) / "request.json"
        request.write_text(json.dumps({"set": set_name, "calls": calls}), encoding="utf-8")
        try:
            results = run_probe(lockfile, ["clone-ids", str(request)], "computing job ids", tomlkit.dumps(document))
        except SisyphusError as exc:
            return {}, f"job ids not checked: {exc}"
    return {i: (r["original"], r["replacement"]) for i, r in zip(proposal.repo_of_site, results)}, None


def _site_record(site: CallSite) -> Dict[str, Any]:
    return {
        "file": site.file,
        "line": site.line,
        "url": site.url,
        "commit": site.commit,
        "branch": site.arguments.get("branch"),
        "checkout_folder_name": site.arguments.get("checkout_folder_name"),
        "other_kwargs": {
            k: v for k, v in site.arguments.items() if k in ("clone_submodules", "files_to_checkout", "patches")
        },
        "not_literal": site.expressions,
        "risks": site.risks,
    }


def _json_report(
    sites: List[CallSite],
    warnings: List[str],
    proposal: Proposal,
    ids: Dict[int, Tuple[str, str]],
    problems: List[str],
) -> Dict[str, Any]:
    records = []
    for index, site in enumerate(sites):
        record = _site_record(site)
        repo = proposal.repo_of_site.get(index)
        record["replacement"] = f'exp.repo("{repo}")' if repo else None
        record["job_id"] = ids[index][0] if index in ids else None
        record["replacement_job_id"] = ids[index][1] if index in ids else None
        records.append(record)
    return {
        "call_sites": records,
        "repos": proposal.repos,
        "pins": proposal.pins,
        "problems": problems,
        "warnings": warnings,
    }


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'s' if number != 1 else ''}"


def _print_report(
    sites: List[CallSite],
    warnings: List[str],
    proposal: Proposal,
    ids: Dict[int, Tuple[str, str]],
    ids_note: Optional[str],
    problems: List[str],
    set_name: str,
) -> None:
    files = len({site.file for site in sites})
    print(f"found {_count(len(sites), 'CloneGitRepositoryJob call')} in {_count(files, 'file')}")
    for index, site in enumerate(sites):
        described = [site.url or f"url={site.expressions.get('url')}"]
        described.append(f"commit {site.commit}" if site.commit else "no commit")
        for key in ("branch", "checkout_folder_name", "clone_submodules", "files_to_checkout", "patches"):
            if site.arguments.get(key) is not None:
                described.append(f"{key}={site.arguments[key]!r}")
        print(f"\n{site.where}  {'  '.join(described)}")
        for risk in site.risks:
            print(f"    risk: {risk}")
        repo = proposal.repo_of_site.get(index)
        if repo:
            verdict = ""
            if index in ids:
                old, new = ids[index]
                verdict = f"  (same job id {old})" if old == new else f"  (JOB ID DIFFERS: {old} -> {new})"
            print(f'    replace with: experiment_set("{set_name}").repo("{repo}"){verdict}')
    if ids_note:
        print(f"\n{ids_note}")
    if proposal.repos or proposal.pins:
        document = tomlkit.document()
        _add_to(document, proposal, set_name)
        print("\nproposed for pin.toml:\n")
        print(tomlkit.dumps(document).strip())
    for warning in warnings:
        print(f"warning: {warning}")
    for problem in problems:
        print(f"problem: {problem}")
