"""
``pin status``: where every set stands — per pinned repository the commit, its date, how many commits (and releases)
it is behind the head of its branch, and with ``changes`` how many of those change what the set uses.

Offline by default: it reads the store's mirrors as last fetched (``fetch`` updates them first).
"""

from __future__ import annotations

__all__ = ["StatusResult", "status", "collect", "count_touching"]

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from sispin.errors import GitError, SisyphusError
from sispin.git.history import PinFacts, pin_facts, releases_behind
from sispin.git.store import Store
from sispin.lock.loading import load_lockfile
from sispin.lock.lockfile import Lockfile

#: what a pin is measured against: the repository's URL, branch and release tags
Follow = Tuple[str, Optional[str], Optional[str]]


@dataclass(frozen=True)
class StatusResult:
    """
    :param lockfile: the pin.toml
    :param store: the store's directory
    :param pins: one record per (set, repository), in lockfile order (as ``--json`` shows them)
    :param accepted: per set, the clones outside the lock it accepts deliberately (``allow_unpinned``,
        ``allow_hash_overwrite``)
    :param unbuilt: the sets whose graph could not be built for ``touching``, with why
    """

    lockfile: Path
    store: Path
    pins: List[Dict[str, Any]]
    accepted: Dict[str, Dict[str, List[str]]]
    unbuilt: Dict[str, str]

    @property
    def fetch_failures(self) -> Dict[str, str]:
        """:return: repository -> why fetching it failed"""
        return {record["repo"]: record["fetch_error"] for record in self.pins if record["fetch_error"]}

    @property
    def exit_code(self) -> int:
        """0, or that of a git failure when a remote could not be fetched, or 9 when a set's graph was not built"""
        return GitError.exit_code if self.fetch_failures else SisyphusError.exit_code if self.unbuilt else 0

    def to_json(self) -> Dict[str, Any]:
        """:return: the result as ``pin status --json`` prints it"""
        return {"lockfile": str(self.lockfile), "store": str(self.store), "pins": self.pins, "accepted": self.accepted}


def status(path: Path, set_names: Sequence[str], *, fetch: bool, store: Store, changes: bool = False) -> StatusResult:
    """
    :param path: the pin.toml
    :param set_names: sets to show; empty for all
    :param fetch: update the mirrors first
    :param store: where the mirrors are
    :param changes: count, of the commits behind, those that change what each set uses (builds every set's graph)
    """
    lockfile = load_lockfile(path)
    records = collect(lockfile, set_names, fetch=fetch, store=store)
    unbuilt = count_touching(lockfile, records, store) if changes else {}
    # clones outside the lock that a set accepts deliberately: shown, so that nobody forgets them
    accepted = {
        spec.name: {
            "allow_unpinned": list(spec.allow_unpinned),
            "allow_hash_overwrite": list(spec.allow_hash_overwrite),
        }
        for spec in lockfile.select_sets(set_names)
        if spec.allow_unpinned or spec.allow_hash_overwrite
    }
    return StatusResult(lockfile.path, store.directory, records, accepted, unbuilt)


def collect(lockfile: Lockfile, set_names: Sequence[str], *, fetch: bool, store: Store) -> List[Dict[str, Any]]:
    """
    :param lockfile: the validated pin.toml
    :param set_names: sets to report; empty for all
    :param fetch: update the mirrors first
    :param store: where the mirrors are
    :return: one record per (set, repository), in lockfile order
    """
    specs = lockfile.select_sets(set_names)
    # two [repos] may share a URL and follow other branches (or release tags): what a pin is behind is per follow
    pinned: Dict[Follow, List[str]] = {}
    for spec in specs:
        for name, pin in spec.pins.items():
            repo = lockfile.get_repo(name)
            pinned.setdefault((repo.url, repo.branch, repo.releases), []).append(pin.commit)
    mirrors, failed = _mirrors({url for url, _, _ in pinned}, fetch, store)
    # ask each mirror once per branch about all the commits pinned from it
    facts: Dict[Follow, Dict[str, PinFacts]] = {}
    releases: Dict[Follow, Dict[str, int]] = {}
    for follow, commits in pinned.items():
        mirror = mirrors[follow[0]]
        facts[follow] = pin_facts(mirror, follow[1], commits) if mirror else {}
        known = [commit for commit in commits if commit in facts[follow]]
        releases[follow] = releases_behind(mirror, follow[1], follow[2], known) if mirror else {}
    records = []
    for spec in specs:
        for name, pin in spec.pins.items():
            repo = lockfile.get_repo(name)
            follow = (repo.url, repo.branch, repo.releases)
            known = facts[follow].get(pin.commit)
            fetched = store.last_fetched(repo.url) if mirrors[repo.url] else None
            records.append(
                {
                    "set": spec.name,
                    "repo": name,
                    "url": repo.url,
                    "branch": repo.branch,
                    "commit": pin.commit,
                    "date": known.date if known else None,
                    "behind": known.behind if known else None,
                    "off_branch": known.off_branch if known else None,
                    "releases_behind": releases[follow].get(pin.commit),
                    "in_store": mirrors[repo.url] is not None,
                    "fetched_at": fetched.isoformat(timespec="seconds") if fetched else None,
                    "fetch_error": failed.get(repo.url),
                }
            )
    return records


def _mirrors(urls: Set[str], fetch: bool, store: Store) -> Tuple[Dict[str, Optional[Path]], Dict[str, str]]:
    """:return: each URL's mirror (None: the store has none), fetched first when asked; and the fetches that failed"""
    mirrors: Dict[str, Optional[Path]] = {}
    failed: Dict[str, str] = {}
    for url in sorted(urls):
        mirror = None
        if fetch:
            try:
                mirror = store.fetch(url)
            except GitError as exc:
                # one unreachable remote must not hide the others: its rows show the store as last fetched
                failed[url] = str(exc)
        mirrors[url] = mirror or store.mirror(url)
    return mirrors, failed


def count_touching(lockfile: Lockfile, records: List[Dict[str, Any]], store: Store) -> Dict[str, str]:
    """
    Add to each record ``touching``: how many of the commits between the pin and its branch's head change what the
    set uses, measured on a build of the set's graph (see :mod:`sispin.graph.used_code`); None where unknown.

    :return: the sets whose graph could not be built, with why
    """
    # building graphs needs Sisyphus and the recorder: only --changes pays their import
    from sispin.git.history import branch_commit, changes_to
    from sispin.graph.build import load_graph, recording_inputs
    from sispin.graph.used_code import used_code

    unbuilt = {}
    for set_name in dict.fromkeys(record["set"] for record in records):
        mine = [record for record in records if record["set"] == set_name]
        for record in mine:
            record["touching"] = None
        if not lockfile.get_set(set_name).configs:
            continue  # a set without configs uses nothing yet: a state the tools handle, no error
        try:
            with recording_inputs() as read:
                graph = load_graph(lockfile, set_name)
        except SisyphusError as exc:
            unbuilt[set_name] = str(exc)
            continue
        counted = [record for record in mine if record["behind"] is not None]
        mirrors = {record["repo"]: store.mirror_path(record["url"]) for record in counted}
        used = used_code(lockfile, graph, read.ledgers[0] or {}, store, mirrors) if read.ledgers[0] else {}
        for record in counted:
            if record["repo"] in used:
                mirror = mirrors[record["repo"]]
                head = branch_commit(mirror, record["branch"])
                record["touching"] = changes_to(mirror, record["commit"], head, used[record["repo"]].paths, 0)[0]
    return unbuilt
