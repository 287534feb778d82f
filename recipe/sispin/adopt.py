"""
Adopting hand-written CloneGitRepositoryJob pins (``pin import``): which found calls can become ``exp.repo(NAME)``
with the same job id, which risks block that, and the pin.toml entries the adoption implies.

Calls are grouped by URL into ``[repos.*]`` (a repository pin.toml already has keeps its name) and one set's pins;
arguments a pin must carry go into a pin table. When the setup has Sisyphus, each replacement's job id is computed
next to the original's by the real classes (in the probe's subprocess).
"""

from __future__ import annotations

__all__ = ["Proposal", "Adoption", "propose", "adopt", "add_to_document"]

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import tomlkit

from sispin.clonejob import checkout_folder, checkout_of, pin_kwargs_of
from sispin.editing import add_value, append_table, toml_pin
from sispin.errors import SisyphusError
from sispin.graph import run_probe
from sispin.lockfile import LOCKFILE_NAME, SUPPORTED_VERSION, Lockfile, Pin, is_full_sha, parse_lockfile, valid_name
from sispin.scan import CallSite
from sispin.urls import check_url, name_from_url


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
    """The pin a call site needs, as pin.toml writes it: its commit, plus the arguments a pin table must carry."""
    return Pin(repo="", commit=site.commit, job_kwargs=pin_kwargs_of(site.arguments)).value


def _name_for(url: str, taken: Sequence[str]) -> str:
    base = name_from_url(url)
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
            checkout = checkout_of(site.arguments)
        if name not in existing_repos and name not in proposal.repos:
            table: Dict[str, Any] = {"url": site.url}
            if site.arguments.get("branch"):
                table["branch"] = site.arguments["branch"]
            if checkout is not None:
                table["checkout"] = checkout
            proposal.repos[name] = table
        if checkout_of(site.arguments) != checkout:
            proposal.problems.append(
                f"{site.where}: not adopted: checkout folder {site.arguments.get('checkout_folder_name')!r} differs "
                f"from repository {name}'s {checkout_folder(checkout)!r}"
            )
            continue
        pin = _pin_of(site)
        current = existing_pins[name].value if name in existing_pins else proposal.pins.get(name)
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


def _describe(pin: Any) -> str:
    if isinstance(pin, str):
        return pin[:7]
    extra = ", ".join(f"{k}={v!r}" for k, v in pin.items() if k != "commit")
    return f"{pin['commit'][:7]} ({extra})"


def add_to_document(document: tomlkit.TOMLDocument, proposal: Proposal, set_name: str) -> None:
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
                add_value(pins, name, toml_pin(pin))
    else:
        table = tomlkit.table()
        table["configs"] = []
        for name, pin in proposal.pins.items():
            table[name] = toml_pin(pin)
        append_table(document, "sets", set_name, table)


def _check_ids(
    sites: List[CallSite], proposal: Proposal, lockfile: Optional[Lockfile], set_name: str
) -> Tuple[Dict[int, Tuple[str, str]], Optional[str]]:
    """
    Job ids of each adoptable call as written and of its replacement, by real Sisyphus (the setup's, or the
    environment's); without a pin.toml yet, against the proposal alone, in the working directory.
    """
    if not proposal.repo_of_site:
        return {}, None
    if lockfile is None:
        document = tomlkit.document()
        document.add("version", SUPPORTED_VERSION)
    else:
        document = tomlkit.parse(lockfile.path.read_text(encoding="utf-8"))
    add_to_document(document, proposal, set_name)
    text = tomlkit.dumps(document)
    target = lockfile or parse_lockfile(text, Path.cwd() / LOCKFILE_NAME)
    calls = [
        {"repo": repo, "positional": sites[i].positional, "arguments": sites[i].arguments}
        for i, repo in proposal.repo_of_site.items()
    ]
    with tempfile.TemporaryDirectory(prefix="sispin-import-") as scratch:
        request = Path(scratch) / "request.json"
        request.write_text(json.dumps({"set": set_name, "calls": calls}), encoding="utf-8")
        try:
            results = run_probe(target, ["clone-ids", str(request)], "computing job ids", text)
        except SisyphusError as exc:
            return {}, f"job ids not checked: {exc}"
    return {i: (r["original"], r["replacement"]) for i, r in zip(proposal.repo_of_site, results)}, None


@dataclass
class Adoption:
    """
    The outcome of adopting a scan's call sites into one set.

    :param proposal: what pin.toml would need
    :param ids: index of a call site -> (job id as written, job id of its replacement), when Sisyphus computed them
    :param ids_note: why job ids could not be computed, if so: then nothing is confirmed
    :param problems: everything that blocks an adoption or conflicts, one line each (the proposal's, then job ids
        that differ)
    """

    proposal: Proposal
    ids: Dict[int, Tuple[str, str]]
    ids_note: Optional[str]
    problems: List[str]


def adopt(sites: List[CallSite], lockfile: Optional[Lockfile], set_name: str) -> Adoption:
    """
    :param sites: the call sites a scan found
    :param lockfile: the existing pin.toml, if any
    :param set_name: the set that pins the found commits
    """
    proposal = propose(sites, lockfile, set_name)
    ids, ids_note = _check_ids(sites, proposal, lockfile, set_name)
    problems = proposal.problems + [
        f"{sites[i].where}: the replacement's job id {new} differs from the original's {old}"
        for i, (old, new) in ids.items()
        if old != new
    ]
    return Adoption(proposal, ids, ids_note, problems)
