"""
``pin status``: where every set stands — per pinned repository the commit, its date, how many commits (and releases)
it is behind the head of its branch, and with ``changes`` how many of those change what the set uses.

Offline by default: it reads the store's mirrors as last fetched (``fetch`` updates them first).
"""

from __future__ import annotations

__all__ = ["StatusResult", "status", "collect", "count_touching"]

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple, Union

from sispin.errors import GitError, SisyphusError
from sispin.git.history import PinFacts, pin_facts, releases_behind
from sispin.git.store import Store
from sispin.lock.loading import parse_lockfile, read_lockfile_text
from sispin.lock.lockfile import Lockfile

if TYPE_CHECKING:  # the blast radius needs graph builds: only --changes imports what they need
    from sispin.git.moves import Move
    from sispin.graph.probe.schema import RecordedOutput, SetGraph
    from sispin.ops.upgrade_judge import BlastRadius

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
    :param at_heads: with ``changes``, per set with a pin behind: the blast radius of moving each such pin to the head
        of its branch (what would run, what finished work would no longer be used, and their price), or why the set
        does not build there
    """

    lockfile: Path
    store: Path
    pins: List[Dict[str, Any]]
    accepted: Dict[str, Dict[str, List[str]]]
    unbuilt: Dict[str, str]
    at_heads: Dict[str, Union[BlastRadius, str]]

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
    text = read_lockfile_text(path)
    lockfile = parse_lockfile(text, path)
    records = collect(lockfile, set_names, fetch=fetch, store=store)
    unbuilt, at_heads = count_touching(lockfile, text, records, store) if changes else ({}, {})
    # clones outside the lock that a set accepts deliberately: shown, so that nobody forgets them
    accepted = {
        spec.name: {
            "allow_unpinned": list(spec.allow_unpinned),
            "allow_hash_overwrite": list(spec.allow_hash_overwrite),
        }
        for spec in lockfile.select_sets(set_names)
        if spec.allow_unpinned or spec.allow_hash_overwrite
    }
    return StatusResult(lockfile.path, store.directory, records, accepted, unbuilt, at_heads)


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


def count_touching(
    lockfile: Lockfile, text: str, records: List[Dict[str, Any]], store: Store
) -> Tuple[Dict[str, str], Dict[str, Union[BlastRadius, str]]]:
    """
    Add to each record ``touching``: how many of the commits between the pin and its branch's head change what the
    set uses, measured on a build of the set's graph (see :mod:`sispin.graph.used_code`); None where unknown. Beside
    that build, side by side, the set with every pin that is behind moved to its branch's head (as the store last
    fetched it): what that move would cost.

    :param text: the lockfile's text
    :return: the sets whose graph could not be built, with why; and per set with a pin behind, the blast radius of
        moving it to the heads, or why the set does not build there
    """
    # building graphs needs Sisyphus and the recorder: only --changes pays their import
    from sispin.git.history import branch_commit, changes_to
    from sispin.graph.snapshot import read_recorded
    from sispin.graph.used_code import used_code
    from sispin.lock.files import snapshot_path
    from sispin.ops.upgrade_judge import blast_radius

    recorded, bound = read_recorded(snapshot_path(lockfile.path))  # read once: every set's builds are keyed on it
    unbuilt: Dict[str, str] = {}
    at_heads: Dict[str, Union[BlastRadius, str]] = {}
    for set_name in dict.fromkeys(record["set"] for record in records):
        mine = [record for record in records if record["set"] == set_name]
        for record in mine:
            record["touching"] = None
        if not lockfile.get_set(set_name).configs:
            continue  # a set without configs uses nothing yet: a state the tools handle, no error
        counted = [record for record in mine if record["behind"] is not None]
        mirrors = {record["repo"]: store.mirror_path(record["url"]) for record in counted}
        moving = [_to_head(lockfile, record, mirrors[record["repo"]]) for record in counted if record["behind"]]
        try:
            graph, moved, ledger = _at_pins_and_heads(
                lockfile, text, set_name, (recorded.get(set_name) or {}, bound), moving
            )
        except SisyphusError as exc:
            unbuilt[set_name] = str(exc)
            continue
        if moved is not None:
            at_heads[set_name] = moved if isinstance(moved, str) else blast_radius(graph, moved, lockfile.root / "work")
        used = used_code(lockfile, graph, ledger, store, mirrors) if ledger else {}
        for record in counted:
            if record["repo"] in used:
                mirror = mirrors[record["repo"]]
                head = branch_commit(mirror, record["branch"])
                record["touching"] = changes_to(mirror, record["commit"], head, used[record["repo"]].paths, 0)[0]
    return unbuilt, at_heads


def _at_pins_and_heads(
    lockfile: Lockfile,
    text: str,
    set_name: str,
    snapshot: Tuple[Mapping[str, RecordedOutput], Mapping[str, Sequence[str]]],
    moving: List[Move],
) -> Tuple[SetGraph, Union[SetGraph, str, None], Optional[Mapping[str, Any]]]:
    """
    :param snapshot: the set's outputs in the snapshot, and the snapshot's alias history
    :return: the set's graph at its pins, its graph with the moves made (None: no move; why it could not be built),
        and what the build at the pins read
    :raises SisyphusError: when the graph at the pins could not be built
    """
    from sispin.graph.build import GraphBuild, load_graphs, recording_inputs
    from sispin.ops.move_builds import pins_and_moved
    from sispin.ops.upgrade_write import moved_text

    if not moving:  # only what the set uses is asked: no state, no record
        with recording_inputs() as read:
            (graph,) = load_graphs(lockfile, [GraphBuild(set_name, blind=False)])
        if isinstance(graph, SisyphusError):
            raise graph
        return graph, None, read.ledgers[0]
    # built as a dry run of the same move builds it: the graph at the pins kept by either serves the other
    texts = (text, moved_text(lockfile, text, {set_name: moving}))
    built = pins_and_moved(lockfile, set_name, texts, True, snapshot)
    if isinstance(built, SisyphusError):
        raise built
    graph, moved, ledger = built
    return graph, str(moved) if isinstance(moved, SisyphusError) else moved, ledger


def _to_head(lockfile: Lockfile, record: Dict[str, Any], mirror: Path) -> Move:
    """:return: the move of a pin that is behind to its branch's head, as the store last fetched it"""
    from sispin.git.moves import Target, plan_repo_move

    return plan_repo_move(mirror, lockfile.get_repo(record["repo"]), record["commit"], Target()).move
