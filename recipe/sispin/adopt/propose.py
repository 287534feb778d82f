"""
Adopting hand-written CloneGitRepositoryJob pins (``pin import``): which found calls can become ``exp.repo(NAME)``
with the same job id, which risks block that, and the pin.toml entries the adoption implies.

Calls are grouped by URL into ``[repos.*]`` (a repository pin.toml already has keeps its name) and one set's pins;
arguments a pin must carry go into a pin table. When the setup has Sisyphus, each replacement's job id is computed
next to the original's by the real classes (in the probe's subprocess).
"""

from __future__ import annotations

__all__ = [
    "Reason",
    "Proposal",
    "Adoption",
    "Entries",
    "propose",
    "adopt",
    "add_to_document",
    "lock_document",
    "status_of",
    "ADOPT",
    "NOTE",
    "BLOCKED",
]

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import tomlkit

from sispin.adopt.scan import CallSite
from sispin.clonejob import CLASS_NAME, checkout_of, pin_kwargs_of
from sispin.errors import SisyphusError
from sispin.graph.build import run_probe
from sispin.graph.guard import Problem
from sispin.graph.probe.schema import CloneCall, CloneIds, CloneIdsRequest
from sispin.lock.editing import add_value, append_table, toml_pin
from sispin.lock.loading import LOCKFILE_NAME, parse_lockfile
from sispin.lock.lockfile import SUPPORTED_VERSION, Lockfile, Pin, is_full_sha, valid_name
from sispin.lock.urls import check_url, name_from_url, same_repository

#: the status of a call site: adopted as found, adopted with something to know (notes), or not adopted
ADOPT, NOTE, BLOCKED = "adopt", "note", "blocked"


@dataclass(frozen=True)
class Reason:
    """
    Why a call site cannot be adopted (blocks), or what adopting it implies (a note).

    :param kind: a stable word for scripts: not_literal, bad_url, no_commit, short_sha, uppercase_sha,
        not_imported, id_differs (blocking); hash_overwrite, helper (notes)
    :param message: one line for people
    :param blocks: whether it keeps the call from being adopted
    """

    kind: str
    message: str
    blocks: bool


@dataclass
class Proposal:
    """
    What pin.toml would need so that every adoptable call becomes ``exp.repo(name)`` with the same job id.

    :param repos: repository name -> its table (url, and branch/checkout when found)
    :param pins: repository name -> the set's pin (a SHA, or a table with extra arguments)
    :param repo_of_site: index of a call site -> the repository it is adopted as
    :param reasons: index of a call site -> why it is blocked, or what adopting it implies
    """

    repos: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    pins: Dict[str, Any] = field(default_factory=dict)
    repo_of_site: Dict[int, str] = field(default_factory=dict)
    reasons: Dict[int, List[Reason]] = field(default_factory=dict)


def _pin_of(site: CallSite) -> Any:
    """The pin a call site needs, as pin.toml writes it: its commit, plus the arguments a pin table must carry."""
    return Pin(repo="", commit=site.commit, job_kwargs=pin_kwargs_of(site.arguments)).value


def _owner(url: str) -> str:
    """The path segment before the repository's name (its owner on a forge), '' when there is none."""
    parts = url.rstrip("/").rsplit(":", 1)[-1].split("/")
    return parts[-2] if len(parts) >= 2 else ""


def _safe(name: str) -> str:
    """name reduced to what a pin.toml name may use"""
    return name_from_url(name.replace("/", "_"))


def _name_for(url: str, pin: Any, checkout: Optional[str], urls: Dict[str, str], commits: Dict[str, str]) -> str:
    """
    A name a person would choose for a new entry of url: the repository's name. A further entry of the same
    repository (another commit, checkout folder or job arguments in one set, or another spelling of its URL) gets
    that entry's name with what sets it apart: the short commit, the folder, the arguments' names; another
    repository whose name is taken gets its owner's in front.

    :param pin: the pin the entry gets (a SHA, or a table with the commit and extra arguments)
    :param urls: the names taken so far -> their URLs
    :param commits: names -> the commit the set pins there
    """
    base = name_from_url(url)
    if not valid_name(base) or base == "configs":
        base = f"repo_{base}"
    commit = pin if isinstance(pin, str) else pin["commit"]
    same = [name for name, other in urls.items() if same_repository(other, url)]
    if same:
        first = same[0]
        candidates = []
        if commit not in {commits.get(name) for name in same}:
            candidates.append(f"{first}_{commit[:7]}")
        if checkout is not None and _safe(checkout) != first:
            candidates.append(f"{first}_{_safe(checkout)}")
        if isinstance(pin, dict):
            candidates.append(f"{first}_{'_'.join(sorted(key for key in pin if key != 'commit'))}")
        candidates.append(f"{first}_{commit[:7]}")
    else:
        candidates = [base] + ([f"{_safe(_owner(url))}_{base}"] if _owner(url) else [])
    for name in candidates:
        if valid_name(name) and name not in urls:
            return name
    number = 2
    while f"{candidates[-1]}_{number}" in urls:
        number += 1
    return f"{candidates[-1]}_{number}"


def _blocking(site: CallSite) -> Optional[Reason]:
    """The first thing that keeps a call from being adopted with the same job id, in the order a fix needs."""
    if not site.imported:
        return Reason(
            "not_imported",
            f"this file never imports {CLASS_NAME} from i6_core (defined here, imported from elsewhere, or "
            f"star-imported?): the call may not be i6_core's class",
            True,
        )
    if not site.literal or site.url is None:
        shown = ", ".join(f"{key}={text}" for key, text in site.expressions.items())
        return Reason("not_literal", f"its arguments are not all literals ({shown or 'no url'})", True)
    if check_url(site.url):
        return Reason("bad_url", check_url(site.url) or "", True)
    commit = site.commit
    if commit is None:
        branch = site.arguments.get("branch")
        follows = f"branch {branch!r}" if branch else "the default branch"
        return Reason("no_commit", f"it pins no commit: follows {follows} (unpinned)", True)
    if not is_full_sha(commit) and is_full_sha(str(commit).lower()):
        return Reason(
            "uppercase_sha",
            f"commit {commit!r} is a full SHA in uppercase: pin.toml needs it lowercase, and lowering it changes "
            f"the job id",
            True,
        )
    if not is_full_sha(commit):
        return Reason("short_sha", f"it pins no full commit (commit {commit!r} is not a full 40-hex SHA)", True)
    return None


def propose(sites: List[CallSite], lockfile: Optional[Lockfile], set_name: Optional[str]) -> Proposal:
    """
    :param sites: the call sites found
    :param lockfile: the existing pin.toml, if any (its repository names are reused, its pins respected)
    :param set_name: the set to pin in
    """
    proposal = Proposal()
    entries = Entries(proposal, lockfile, set_name)
    for index, site in enumerate(sites):
        if site.followed and "commit" in site.expressions and len(site.expressions) == 1:
            message = "in a helper that takes its commit as a parameter: its calls with a literal commit are listed"
            proposal.reasons[index] = [Reason("helper", message, False)]
            continue
        blocking = _blocking(site)
        if blocking is not None:
            proposal.reasons[index] = [blocking]
            continue
        proposal.repo_of_site[index] = entries.entry_for(site)
        notes = [
            Reason(
                "hash_overwrite",
                f"{risk}: jobs using that output hash the overwrite, not the commit; exp.repo() refuses it, so "
                f"adopting this call renews those jobs (remove the hash_overwrite deliberately)",
                False,
            )
            for risk in site.risks
            if risk.startswith("hash_overwrite")
        ]
        if notes:
            proposal.reasons[index] = notes
    return proposal


class Entries:
    """
    The repository entries of pin.toml as it is, and those a proposal adds, with the set's pins of them.

    :param proposal: the proposal that new entries and pins are added to
    :param lockfile: the existing pin.toml, if any
    :param set_name: the set whose pins are meant
    """

    def __init__(self, proposal: Proposal, lockfile: Optional[Lockfile], set_name: Optional[str]):
        self.proposal = proposal
        self.existing_repos = dict(lockfile.repos) if lockfile else {}
        self.existing_pins = lockfile.sets[set_name].pins if lockfile and set_name in lockfile.sets else {}
        # entries the proposal has already (a static scan's, when a graph's clones are adopted beside them)
        self.urls = {name: spec.url for name, spec in self.existing_repos.items()}
        self.urls.update({name: table["url"] for name, table in proposal.repos.items()})

    def checkout(self, name: str) -> Optional[str]:
        spec = self.existing_repos.get(name)
        return spec.checkout if spec is not None else self.proposal.repos[name].get("checkout")

    def pin(self, name: str) -> Any:
        """The entry's pin in the set, as a call would need it: an alias it binds is no argument of the call."""
        if name in self.existing_pins:
            return self.existing_pins[name]._replace(hash_overwrite=None).value
        return self.proposal.pins.get(name)

    def entry_for(self, site: CallSite) -> str:
        """:return: the entry a call is adopted as: an existing one that fits, else a new one (added, with its pin)"""
        checkout, pin = checkout_of(site.arguments), _pin_of(site)
        # the URL is hashed verbatim: only an entry of exactly this URL, checkout folder and (free or equal) pin fits
        name = next(
            (
                name
                for name, url in self.urls.items()
                if url == site.url and self.checkout(name) == checkout and self.pin(name) in (None, pin)
            ),
            None,
        )
        if name is None:
            commits = {n: _commit(self.pin(n)) for n in self.urls if self.pin(n) is not None}
            name = _name_for(site.url, pin, checkout, self.urls, commits)
            self.urls[name] = site.url
            table: Dict[str, Any] = {"url": site.url}
            if site.arguments.get("branch"):
                table["branch"] = site.arguments["branch"]
            if checkout is not None:
                table["checkout"] = checkout
            self.proposal.repos[name] = table
        if name not in self.existing_pins:
            self.proposal.pins[name] = pin
        return name


def _commit(pin: Any) -> str:
    return pin if isinstance(pin, str) else pin["commit"]


def status_of(proposal: Proposal, index: int) -> str:
    """
    :param proposal: the proposal (with the job-id check's reasons, when added)
    :param index: a call site's index
    :return: ADOPT, NOTE or BLOCKED
    """
    reasons = proposal.reasons.get(index, [])
    if any(reason.blocks for reason in reasons) or (index not in proposal.repo_of_site and not reasons):
        return BLOCKED
    return NOTE if reasons else ADOPT


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


def lock_document(lockfile: Optional[Lockfile]) -> tomlkit.TOMLDocument:
    """
    :param lockfile: the setup's pin.toml, if there is one
    :return: its document as it is, or that of a new, empty pin.toml
    """
    if lockfile is None:
        document = tomlkit.document()
        document.add("version", SUPPORTED_VERSION)
        return document
    return tomlkit.parse(lockfile.path.read_text(encoding="utf-8"))


def _check_ids(
    sites: List[CallSite], proposal: Proposal, lockfile: Optional[Lockfile], set_name: str
) -> Tuple[Dict[int, Tuple[str, str]], Optional[str]]:
    """
    Job ids of each adoptable call as written and of its replacement, by real Sisyphus (the setup's, or the
    environment's); without a pin.toml yet, against the proposal alone, in the working directory.
    """
    if not proposal.repo_of_site:
        return {}, None
    document = lock_document(lockfile)
    add_to_document(document, proposal, set_name)
    text = tomlkit.dumps(document)
    target = lockfile or parse_lockfile(text, Path.cwd() / LOCKFILE_NAME)
    calls = tuple(CloneCall(repo, sites[i].positional, sites[i].arguments) for i, repo in proposal.repo_of_site.items())
    request = CloneIdsRequest(set_name, calls).to_json()
    try:
        results = run_probe(target, ["clone-ids"], "computing job ids", text, request=request)
    except SisyphusError as exc:
        return {}, f"job ids not checked: {exc}"
    ids = [CloneIds.from_json(result) for result in results]
    return {i: (r.original, r.replacement) for i, r in zip(proposal.repo_of_site, ids)}, None


@dataclass
class Adoption:
    """
    The outcome of adopting a scan's call sites into one set.

    :param proposal: what pin.toml would need, with every call site's reasons
    :param ids: index of a call site -> (job id as written, job id of its replacement), when Sisyphus computed them
    :param ids_note: why job ids could not be computed, if so: then nothing is confirmed
    :param problems: one line per blocked call site (its first reason)
    :param notes: one line per note of an adopted call site
    """

    proposal: Proposal
    ids: Dict[int, Tuple[str, str]]
    ids_note: Optional[str]
    problems: List[Problem]
    notes: List[str]


def adopt(sites: List[CallSite], lockfile: Optional[Lockfile], set_name: str) -> Adoption:
    """
    :param sites: the call sites a scan found
    :param lockfile: the existing pin.toml, if any
    :param set_name: the set that pins the found commits
    """
    proposal = propose(sites, lockfile, set_name)
    ids, ids_note = _check_ids(sites, proposal, lockfile, set_name)
    for index, (old, new) in ids.items():
        if old != new:
            reason = Reason("id_differs", f"the replacement's job id {new} differs from the original's {old}", True)
            proposal.reasons.setdefault(index, []).insert(0, reason)
    # an entry only blocked calls need is not proposed: --write must not pin what no adopted call uses
    needed = {repo for index, repo in proposal.repo_of_site.items() if status_of(proposal, index) != BLOCKED}
    proposal.pins = {repo: pin for repo, pin in proposal.pins.items() if repo in needed}
    proposal.repos = {repo: table for repo, table in proposal.repos.items() if repo in needed}
    problems: List[Problem] = []
    notes: List[str] = []
    for index, site in enumerate(sites):
        reasons = proposal.reasons.get(index, [])
        if status_of(proposal, index) == BLOCKED:
            problems.append(Problem(f"{site.where}: not adopted: {reasons[0].message}"))
        else:
            notes += [f"{site.where}: {reason.message}" for reason in reasons]
    return Adoption(proposal, ids, ids_note, problems, notes)
