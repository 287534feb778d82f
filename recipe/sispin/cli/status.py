"""
``pin status [SET ...] [--json] [--fetch] [--changes]``: the command line of :mod:`sispin.ops.status`, and its table:
one row per pinned repository (set, repository, short SHA, commit date, how far behind its branch).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse
from typing import TYPE_CHECKING, Any, Dict, List, Sequence, Tuple, Union

from sispin.cli.options import add_command, json_output, set_names
from sispin.cli.output import Output
from sispin.git.store import Store
from sispin.lock.loading import find_lockfile
from sispin.ops.status import StatusResult, status
from sispin.text import count, display_path, shown_key

if TYPE_CHECKING:  # a blast radius is there only with --changes, which pays for the upgrade's modules
    from sispin.ops.upgrade_judge import BlastRadius

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
    result = status(find_lockfile(), args.sets, fetch=args.fetch, store=Store(), changes=args.changes)
    return render(result, out, as_json=args.json, set_names=args.sets, changes=args.changes)


def render(result: StatusResult, out: Output, *, as_json: bool, set_names: Sequence[str], changes: bool) -> int:
    """
    :param result: where the sets stand
    :param out: the table (or JSON), notes, and the failed fetches
    :param as_json: print JSON instead of a table
    :param set_names: the sets asked for (named when none has pins)
    :param changes: with the TOUCHING column
    :return: exit code: 0, or that of a git failure (5) when a remote could not be fetched (after every row); 9
        when --changes could not build a set's graph (after every row)
    """
    records = result.pins
    if as_json:
        document = result.to_json()
        if changes:  # what moving to the heads costs: with the upgrade's own JSON of a blast radius
            from sispin.cli.upgrade_json import radius_json

            document["at_heads"] = {name: radius_json(radius) for name, radius in result.at_heads.items()}
        out.json(document)
    elif not records:
        out.result(f"{display_path(result.lockfile)}: no pins" + (f" in {', '.join(set_names)}" if set_names else ""))
    else:
        columns = _COLUMNS[:5] + ("TOUCHING",) + _COLUMNS[5:] if changes else _COLUMNS
        rows = [columns] + [_row(record, changes) for record in records]
        widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
        for row in rows:
            out.result("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        for note in _notes(records):
            out.result(note)
    if not as_json:
        for set_name, lists in result.accepted.items():
            for key, urls in lists.items():
                for url in urls:
                    out.result(f"sets.{shown_key(set_name)} accepts ({key}): {url}")
    for repo, error in result.fetch_failures.items():
        out.error(f"{repo}: {error} (its rows show the store as last fetched)")
    if not as_json:
        for set_name, radius in result.at_heads.items():
            _show_at_heads(out, set_name, radius)
    for set_name, error in result.unbuilt.items():
        out.error(f"sets.{shown_key(set_name)}: TOUCHING unknown: {error}")
    return result.exit_code


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


def _show_at_heads(out: Output, set_name: str, radius: Union[BlastRadius, str]) -> None:
    """What moving the set's pins that are behind to their branches' heads would cost (``pin upgrade SET``)."""
    from sispin.cli.upgrade_report import show_radius

    lead = f"Moving set {set_name!r} to the heads"
    if isinstance(radius, str):
        out.result(f"{lead}: blast radius not computed ({radius})")
    else:
        show_radius(out, radius, lead)
