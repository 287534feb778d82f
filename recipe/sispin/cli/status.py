"""
``pin status [SET ...] [--json] [--fetch]``: where every set stands.

One row per pinned repository: set, repository, short SHA, commit date, and how many commits the pin is behind the
head of its branch. Offline by default: it reads the store's mirrors as last fetched (``--fetch`` updates them
first) and says when a mirror has never been fetched.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "status", "collect"]

import argparse
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from sispin.cli.options import add_command, json_output, set_names
from sispin.cli.output import Output
from sispin.errors import GitError, SisyphusError
from sispin.git.history import PinFacts, pin_facts, releases_behind
from sispin.git.store import Store
from sispin.lock.lockfile import Lockfile, find_lockfile, load_lockfile
from sispin.text import count, display_path, shown_key

#: what a pin is measured against: the repository's URL, branch and release tags
Follow = Tuple[str, Optional[str], Optional[str]]

_COLUMNS = ("SET", "REPO", "COMMIT", "DATE", "BEHIND", "BRANCH")


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "status",
        run,
        description="Show, per experiment set and repository, the pinned commit, its date and how many commits "
        "it is behind the head of the repository's branch. Offline: reads the store as last fetched.",
    )
    set_names(parser, "show")
    json_output(parser, "a table")
    parser.add_argument("--fetch", action="store_true", help="update the store's mirrors from the remotes first")
    parser.add_argument(
        "--changes",
        action="store_true",
        help="build each set's graph and add TOUCHING: how many of the commits behind change what the set uses "
        "(as `pin upgrade` measures it)",
    )
    parser.set_defaults(trailing="sets")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    return status(
        find_lockfile(), args.sets, out, as_json=args.json, fetch=args.fetch, store=Store(), changes=args.changes
    )


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


def status(
    path: Path,
    set_names: Sequence[str],
    out: Output,
    *,
    as_json: bool,
    fetch: bool,
    store: Store,
    changes: bool = False,
) -> int:
    """
    :param path: the pin.toml
    :param set_names: sets to show; empty for all
    :param out: the table (or JSON), notes, and the failed fetches
    :param as_json: print JSON instead of a table
    :param fetch: update the mirrors first
    :param store: where the mirrors are
    :param changes: count, of the commits behind, those that change what each set uses (builds every set's graph)
    :return: exit code: 0, or that of a git failure (5) when a remote could not be fetched (after every row); 9
        when --changes could not build a set's graph (after every row)
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
    if as_json:
        report = {"lockfile": str(lockfile.path), "store": str(store.directory), "pins": records, "accepted": accepted}
        out.json(report)
    elif not records:
        out.result(f"{display_path(path)}: no pins" + (f" in {', '.join(set_names)}" if set_names else ""))
    else:
        columns = _COLUMNS[:5] + ("TOUCHING",) + _COLUMNS[5:] if changes else _COLUMNS
        rows = [columns] + [_row(record, changes) for record in records]
        widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
        for row in rows:
            out.result("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        for note in _notes(records):
            out.result(note)
    if not as_json:
        for set_name, lists in accepted.items():
            for key, urls in lists.items():
                for url in urls:
                    out.result(f"sets.{shown_key(set_name)} accepts ({key}): {url}")
    failures = {record["repo"]: record["fetch_error"] for record in records if record["fetch_error"]}
    for repo, error in failures.items():
        out.error(f"{repo}: {error} (its rows show the store as last fetched)")
    for set_name, error in unbuilt.items():
        out.error(f"sets.{shown_key(set_name)}: TOUCHING unknown: {error}")
    return GitError.exit_code if failures else SisyphusError.exit_code if unbuilt else 0


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


def _row(record: Dict[str, Any], changes: bool) -> Tuple[str, ...]:
    behind = "?" if record["behind"] is None else str(record["behind"])
    if record["releases_behind"] is not None:
        behind += f" ({count(record['releases_behind'], 'release')})"
    if record["off_branch"]:
        behind += f" (+{record['off_branch']} off branch)"
    if record["fetch_error"]:
        behind += " (fetch failed)"
    date = record["date"][:10] if record["date"] else "?"
    touching = ("?" if record["touching"] is None else str(record["touching"]),) if changes else ()
    return (
        record["set"],
        record["repo"],
        record["commit"][:7],
        date,
        behind,
        *touching,
        record["branch"] or "(default)",
    )


def _notes(records: List[Dict[str, Any]]) -> List[str]:
    notes: List[str] = []
    seen = set()
    for record in records:
        if record["fetch_error"]:
            continue  # said on stderr, with the reason
        if not record["in_store"] and record["url"] not in seen:
            seen.add(record["url"])
            notes.append(
                f"note: the store has never fetched {record['repo']} ({record['url']}): run `pin status --fetch`"
            )
        elif record["in_store"] and record["date"] is None and (record["url"], record["commit"]) not in seen:
            seen.add((record["url"], record["commit"]))
            notes.append(
                f"note: {record['repo']} {record['commit'][:7]} is not in the store's mirror "
                f"(fetched {record['fetched_at']}): run `pin status --fetch`; if it persists, it was force-pushed away"
            )
        elif record["in_store"] and record["behind"] is None and record["url"] not in seen:
            # the commit is there, the branch to count against is not
            seen.add(record["url"])
            branch = f"branch {record['branch']!r}" if record["branch"] else "the default branch"
            notes.append(
                f"note: {record['repo']}: {branch} is not in the store's mirror (fetched {record['fetched_at']}): "
                f"BEHIND is unknown; check repos.{shown_key(record['repo'])}.branch, or run `pin status --fetch`"
            )
    fetched = sorted({r["fetched_at"] for r in records if r["fetched_at"]})
    if fetched:
        notes.append(f"store last fetched: {fetched[0]}" + (f" .. {fetched[-1]}" if len(fetched) > 1 else ""))
    return notes
